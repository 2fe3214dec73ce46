"""Bring a simulated Ascend PoD of N nodes up and down on this machine.

Each node ``nodeNN`` is a UTS + mount namespace that runs its own sshd on ``127.0.1.N:22``
(or ``PREFIX.N`` with ``--address-prefix``). Inside it the node's simulator files are
bind-mounted on the vendor paths (``/usr/local/Ascend``, ``/usr/local/sbin``,
``/var/lib/npu-sim``, ``/usr/local/mpich``), the node's own directory on ``/root``, the
numactl/lscpu/cpupower/lspci shims over the host binaries that exist, and files rendered from
the node state over ``/proc/meminfo``, ``/proc/sys/vm/swappiness`` and
``/sys/kernel/mm/transparent_hugepage/enabled``. The nodes share the host's PID and network
namespaces; only hostname and mounts differ.

Commands: ``up``, ``down``, ``status``, ``exec``. Run ``podctl COMMAND --help`` for options.
``tools/pod/podctl`` is the executable; it runs ``__main__.py`` of this package.
Needs root (namespaces, bind mounts, sshd logging in as root). Loopback addresses only.
Standard library only.

Modules, in dependency order:

- ``common``: constants, ``PodError``/``PodUsageError``, ``log``
- ``pod``: node names, the ``Pod`` object (paths, ``pod.json``, address prefix, node addresses)
- ``procs``: /proc helpers and the checks that a PID is a node's sshd
- ``registry``: the host-wide registry of PoDs and the mount points podctl created
- ``host``: host checks and subprocess helpers (``run``, ``npu_sim``)
- ``inventory``: the generated ssh_config and Ansible inventory
- ``node``: keys, sshd configuration, node preparation, start, readiness and stopping
- ``commands``: ``up``, ``down``, ``status``, ``exec``
- ``cli``: the argument parser and ``main()``
"""
