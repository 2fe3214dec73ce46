"""Simulator of the Ascend vendor tools of an Atlas 800T A2 node (8 x Ascend 910B3).

Standard library only; runs on Python 3.9 and later. Entry point:
``PYTHONPATH=<repo>/tools python3 -m npu_sim <tool> [args]`` where ``<tool>`` is one of
``hccn_tool``, ``npu-smi``, ``npu-sim``, ``numactl``, ``lscpu``, ``cpupower``, ``lspci``,
``all_reduce_test`` (hccl_test) and ``mpirun`` (a stand-in that starts no ranks).
The wrappers ``npu-sim install`` writes start it as ``python3 -I -S -c BOOTSTRAP <tool> [args]``
(control.wrapper_text); what a call costs is in docs/simulator-cost.md.
"""

import time

__version__ = "1.0.0"

TOOLS = ("hccn_tool", "npu-smi", "npu-sim", "numactl", "lscpu", "cpupower", "lspci", "all_reduce_test", "mpirun")
# Tools the node's resident simulator (server.py) runs; the others keep their own interpreter (see server.py).
# Here rather than in server.py: the wrappers that control.py writes need it, and server.py imports __main__.
SERVED = ("hccn_tool", "npu-smi", "lscpu", "cpupower", "lspci", "all_reduce_test", "vmstat", "iostat")

# CPU time (user+sys, seconds) of this process when the simulator's own code began: what the wrapper's sh, the
# interpreter's start-up (and, under ``python -m``, runpy) cost. The call log records it as ``start_cpu_s``.
START_CPU = time.process_time()
