"""A small performance MODEL (not measured hardware) that makes tuning visible end to end.

busbw (GB/s):
- intra-node AllReduce over HCCS: 7 links x 28 GB/s x 0.7 efficiency = 137.2 (model figure: 70 % of the
  HCCS theory), (p - 1) links with p NPUs per node; halved while an NPU of a node in the run holds a
  process (another job shares the device);
- cross-node RoCE, per port (rail): 25 GB/s x 0.9 = 22.5 only when, on every port of every node of the run,
  PFC is enabled on the priority named by HCCL_RDMA_SL, HCCL_RDMA_TC = 4 x DSCP with that DSCP
  mapped to the lossless TC (settings.lossless_tc, 3), and the MTU is jumbo (>= settings.jumbo_mtu)
  and equal everywhere, and the leaf switch port agrees (no ``switch-frame`` below MTU + 18, no
  ``switch-pfc-priority`` other than HCCL_RDMA_SL); otherwise 3.0 (lossy RoCE with retransmissions); multiplied, in a run over more than
  one node, by the factor of a ``slow-port`` or ``slow-node`` fault on a node of the run (the smallest
  one when several: a ring runs at the speed of its slowest link).
- cross-node AllReduce of a job (what hccl_test reports as busbw for every rank): lossless, every NPU
  of a node sends over its own port, so a node carries p ports x 22.5 (x the slow factor), capped by
  the intra-node HCCS figure (the ranks cannot go faster across nodes than inside one); with one NPU per
  node (a rail) there is no HCCS part: 22.5 x the slow factor; lossy, the retransmissions stall the whole
  job at 3.0 (x the slow factor) - "a few GB/s", as the method puts it. The job's NPUs are those
  ASCEND_RT_VISIBLE_DEVICES makes visible (else 0..N-1), the first p of them; only their ports count.
Training step time = compute + gradient AllReduce time (its cross-node part over one rank's port), +8 % without NUMA binding
(NPU_SIM_NUMA_NODE unset), +15 % bound to a NUMA node that is not the one of the job's NPU (a rank's: device LOCAL_RANK
of the visible ones; else the first of ASCEND_RT_VISIBLE_DEVICES, else NPU 0: its CPUs and memory across the socket
link), +5 % when the CPU governor is not 'performance'; jitter of +-1 % (+-V % under the ``noise`` fault), seeded by
--seed or, without it, different on every run.
"""

import math
import os
import random
import time

from . import model

HCCS_LINKS = 7
HCCS_LINK_GBPS = 28.0
HCCS_EFFICIENCY = 0.7
ROCE_LINE_GBPS = 25.0
ROCE_EFFICIENCY = 0.9
ROCE_LOSSY_GBPS = 3.0
JITTER_PCT = 1.0
NOISE_PCT = 8.0
FAR_NUMA_PCT = 15.0
HCCL_ITERS = 20
HCCL_WARMUP = 5


def devices_held(states):
    """True when an NPU of one of ``states`` holds a process (state or ``process`` fault)."""
    return any(model.busy_npus(st) for st in states or [])


def intra_busbw(states=None, npus_per_node=8):
    """HCCS busbw of one node: (p - 1) links x 28 GB/s x 0.7, halved while a device is held by another job."""
    links = max(1, min(HCCS_LINKS, int(npus_per_node) - 1))
    busbw = links * HCCS_LINK_GBPS * HCCS_EFFICIENCY
    if devices_held(states):
        busbw /= 2.0
    return busbw


def _env_int(env, name):
    value = env.get(name)
    if value is None or not str(value).strip().lstrip("-").isdigit():
        return None
    return int(value)


def roce_check(states, env=None):
    """-> list of reasons why cross-node RoCE is not lossless (empty list = lossless)."""
    env = os.environ if env is None else env
    reasons = []
    sl = _env_int(env, "HCCL_RDMA_SL")
    tc = _env_int(env, "HCCL_RDMA_TC")
    if sl is None or not 0 <= sl <= 7:
        reasons.append("HCCL_RDMA_SL is not set to a priority 0-7")
    if tc is None or tc % 4 or not 0 <= tc <= 255:
        reasons.append("HCCL_RDMA_TC is not a multiple of 4 in 0-255")
    dscp = tc // 4 if tc is not None and tc % 4 == 0 and 0 <= tc <= 255 else None
    mtus = set()
    for st in states:
        settings = st.get("settings", {})
        lossless_tc = int(settings.get("lossless_tc", 3))
        jumbo = int(settings.get("jumbo_mtu", 8000))
        for npu in st["npus"]:
            net = npu["net"]
            where = "%s NPU %d" % (st.get("hostname"), npu["id"])
            if sl is not None and 0 <= sl <= 7 and not net["pfc"][sl]:
                reasons.append("%s: PFC not enabled on priority %d" % (where, sl))
            if dscp is not None and net["dscp_to_tc"][dscp] != lossless_tc:
                reasons.append("%s: DSCP %d maps to TC %d, not the lossless TC %d" % (where, dscp, net["dscp_to_tc"][dscp], lossless_tc))
            if int(net["mtu"]) < jumbo:
                reasons.append("%s: MTU %d is not jumbo" % (where, net["mtu"]))
            # the switch side (model.SWITCH_KINDS): the leaf port cabled to the NPU
            frame = model.switch_frame(st, npu["id"])
            if frame is not None and frame < int(net["mtu"]) + model.ETH_OVERHEAD:
                reasons.append("%s: switch port frame size %d is below MTU %d + %d" % (where, frame, int(net["mtu"]), model.ETH_OVERHEAD))
            if sl is not None and 0 <= sl <= 7:
                for prio in model.switch_pfc_priorities(st, npu["id"]):
                    if prio != sl:
                        reasons.append("%s: switch runs PFC on priority %d, not on HCCL_RDMA_SL %d" % (where, prio, sl))
            mtus.add(int(net["mtu"]))
    if len(mtus) > 1:
        reasons.append("MTU differs between ports: %s" % ",".join(str(m) for m in sorted(mtus)))
    return reasons


def slow_culprits(states, npus_per_node=None, devices=None):
    """The ``slow-node``/``slow-port`` faults of a run's nodes: [{"node", "kind", "device", "factor"}]
    (``device`` null for a whole node or all its ports). With ``devices`` (the job's physical NPUs) only their ports
    count; else with ``npus_per_node`` P, only ports 0..P-1."""
    found = []
    for st in states or []:
        for kind, device, factor in model.slow_faults(st, npus_per_node, devices):
            found.append({"node": st.get("hostname"), "kind": kind, "device": device, "factor": factor})
    return found


def slow_factor(states, npus_per_node=None, devices=None):
    """Factor of the cross-node busbw: the smallest slow-port/slow-node factor of the run's nodes (on the job's
    ports: ``devices``, else 0..npus_per_node-1); 1.0 for a single node (HCCS inside a node does not use the ports)
    or without such a fault."""
    if len(states or []) < 2:
        return 1.0
    return min([item["factor"] for item in slow_culprits(states, npus_per_node, devices)] or [1.0])


def inter_busbw(states, env=None, npus_per_node=None):
    """Cross-node RoCE busbw: 22.5 lossless or 3.0 lossy, times the run's slow factor."""
    roce = ROCE_LINE_GBPS * ROCE_EFFICIENCY if not roce_check(states, env) else ROCE_LOSSY_GBPS
    return roce * slow_factor(states, npus_per_node)


def crossnode_busbw(states, env=None, npus_per_node=8, devices=None):
    """busbw of a cross-node AllReduce: lossless, p ports x 22.5 x the slow factor capped by the HCCS figure of
    p NPUs; one NPU per node (a rail: NPU d of every node over its own port) has no HCCS part, so 22.5 x the
    slow factor; lossy, 3.0 x the slow factor for the whole job. The slow factor counts the job's ports only
    (``devices``, its physical NPUs; else 0..p-1)."""
    ports = max(1, int(npus_per_node))
    factor = slow_factor(states, ports, devices)
    if roce_check(states, env):
        return ROCE_LOSSY_GBPS * factor
    if ports == 1:
        return ROCE_LINE_GBPS * ROCE_EFFICIENCY * factor
    return min(intra_busbw(states, ports), ports * ROCE_LINE_GBPS * ROCE_EFFICIENCY * factor)


def job_npu(env):
    """The NPU the job's process runs on. A rank started with LOCAL_RANK (torchrun, npu-launch) uses device LOCAL_RANK
    of the visible ones, as torch.npu.set_device(local_rank) does: the LOCAL_RANK-th of ASCEND_RT_VISIBLE_DEVICES,
    else NPU LOCAL_RANK. Without LOCAL_RANK, the NPU of rank 0: the first of ASCEND_RT_VISIBLE_DEVICES, else NPU 0."""
    visible = [d.strip() for d in str(env.get("ASCEND_RT_VISIBLE_DEVICES") or "").split(",") if d.strip()]
    local = str(env.get("LOCAL_RANK") or "").strip()
    if local.isdigit():
        index = int(local)
        if not visible:
            return index
        return int(visible[index]) if index < len(visible) and visible[index].isdigit() else 0
    first = visible[0] if visible else "0"
    return int(first) if first.isdigit() else 0


def rank_of(env):
    """(rank, world size, local rank) of a process a launcher started (RANK, WORLD_SIZE, LOCAL_RANK); None when the
    process is not one rank of a launched job (no LOCAL_RANK)."""
    local = str(env.get("LOCAL_RANK") or "").strip()
    if not local.isdigit():
        return None
    rank = str(env.get("RANK") or "").strip()
    world = str(env.get("WORLD_SIZE") or "").strip()
    return (int(rank) if rank.isdigit() else int(local), int(world) if world.isdigit() else None, int(local))


def rank_line(local, env):
    """What a rank of the training job says about itself at its start (stderr): its rank, its NPU and that NPU's NUMA
    node, the NUMA nodes numactl bound its CPUs and memory to (NPU_SIM_NUMA_NODE, NPU_SIM_MEM_NODE), OMP_NUM_THREADS
    and CPU_AFFINITY_CONF. None for a process that is not a rank."""
    rank = rank_of(env)
    if rank is None:
        return None
    device = job_npu(env)
    npu = next((n for n in (local or {}).get("npus") or [] if n.get("id") == device), None)
    home = npu.get("numa_node") if npu else None
    return ("npu-sim train: rank %d of %s, local rank %d: NPU %d (NUMA node %s); CPUs bound to NUMA node %s, memory to "
            "%s; OMP_NUM_THREADS=%s CPU_AFFINITY_CONF=%s MASTER_ADDR=%s MASTER_PORT=%s"
            % (rank[0], rank[1] if rank[1] is not None else "?", rank[2], device, home if home is not None else "?",
               env.get("NPU_SIM_NUMA_NODE") or "none", env.get("NPU_SIM_MEM_NODE") or "none",
               env.get("OMP_NUM_THREADS") or "unset", env.get("CPU_AFFINITY_CONF") or "unset",
               env.get("MASTER_ADDR") or "unset", env.get("MASTER_PORT") or "unset"))


def prints_log(env):
    """Whether this process prints the training log: MindSpeed (Megatron) prints the iteration lines on the last rank
    only (print_rank_last); a process that is not a rank of a launched job prints them."""
    rank = rank_of(env)
    return rank is None or rank[1] is None or rank[0] == rank[1] - 1


def numa_far(local, env):
    """True when the job is bound (NPU_SIM_NUMA_NODE) to NUMA nodes none of which is its NPU's own."""
    bound = {int(n) for n in str(env.get("NPU_SIM_NUMA_NODE") or "").split(",") if n.strip().isdigit()}
    if not bound:
        return False
    device = job_npu(env)
    npu = next((n for n in (local or {}).get("npus") or [] if n.get("id") == device), None)
    home = npu.get("numa_node") if npu else None
    return home is not None and home not in bound


def train_devices(local, env, npus=None):
    """The NPUs of a node a training job runs on: the first ``npus`` (torchrun's --nproc_per_node; None: all) of
    ASCEND_RT_VISIBLE_DEVICES, else of the node's NPUs."""
    visible = [int(d) for d in str(env.get("ASCEND_RT_VISIBLE_DEVICES") or "").split(",") if d.strip().isdigit()]
    devices = visible or [npu["id"] for npu in (local or {}).get("npus") or []] or list(range(8))
    return devices if npus is None else devices[:max(1, int(npus))]


def throttle_factor(states, devices):
    """How much slower the compute of a synchronous job is for the slowest of its NPUs (``devices`` on each node of
    ``states``): the rated AI Core frequency over the throttled one (a ``throttle`` fault), 1.0 without one."""
    factor = 1.0
    for st in states or []:
        for npu in st.get("npus") or []:
            if npu.get("id") not in devices:
                continue
            for fault in model.faults_mod.faults_for(st, "throttle", npu["id"]):
                rated = float(npu.get("aicore_freq_mhz") or 0)
                try:
                    current = float(fault.get("value")) if fault.get("value") not in (None, "") else rated / 2
                except (TypeError, ValueError):
                    current = rated / 2
                if rated > 0:
                    factor = max(factor, rated / max(current, rated / 10.0))
    return factor


def step_time_ms(states, local, env=None, grad_gb=2.0, compute_ms=900.0, npus=None):
    """The modelled step time of the training job (per-NPU batch fixed): compute (slowed by a throttled NPU of the
    job), the AllReduce of the gradients inside the node (over the job's ``npus`` NPUs per node; None: all, the
    figure of 8) and across nodes, the host binding and the governor."""
    env = os.environ if env is None else env
    nodes = max(1, len(states))
    devices = train_devices(local, env, npus)
    compute_ms *= throttle_factor(states, devices)
    comm = grad_gb / intra_busbw(states) * 1000.0
    if npus is not None:
        # the ring AllReduce moves 2(p-1)/p of the gradients: none on one NPU, the whole-node figure on 8
        ranks = len(devices)
        comm *= (2.0 * (ranks - 1) / ranks) / (2.0 * HCCS_LINKS / (HCCS_LINKS + 1))
    if nodes > 1:
        comm += grad_gb / inter_busbw(states, env) * 1000.0 * (nodes - 1) / nodes * 2.0
    total = compute_ms + comm
    if not env.get("NPU_SIM_NUMA_NODE"):
        total *= 1.08
    elif numa_far(local, env):
        total *= 1.0 + FAR_NUMA_PCT / 100.0
    if local.get("governor") != "performance":
        total *= 1.05
    return total


def jitter_pct(local):
    """Step-time jitter in percent: +-1, or the value of a ``noise`` fault (default 8), which also shifts each run as a whole."""
    pct = JITTER_PCT
    for fault in local.get("faults", []):
        if fault.get("kind") == "noise":
            try:
                pct = max(pct, float(fault.get("value") or NOISE_PCT))
            except (TypeError, ValueError):
                pct = max(pct, NOISE_PCT)
    return pct


def noise_shift(local, run):
    """The whole-run shift under a ``noise`` fault for the ``run``-th run since the fault was set:
    +V %, -V %, 0, +V %, ... so that any three runs in a row spread by about V % (coefficient of
    variation); 0 without the fault."""
    pct = jitter_pct(local)
    if pct <= JITTER_PCT:
        return 0.0
    return (1.0, -1.0, 0.0)[run % 3] * pct / 100.0


def run_seed():
    """A seed for a run without --seed: differs on every call (clock and process id)."""
    return (time.time_ns() ^ (os.getpid() << 20)) & 0xFFFFFFFF


def train_lines(states, local, steps=20, seed=None, env=None, log_interval=1, global_batch=64, lr=1.0e-5,
                start=None, tflops_per_step=None, run_shift=0.0, npus=None):
    """MindSpeed/Megatron-core style iteration lines (format of Megatron's training_log):
    ' [YYYY-mm-dd HH:MM:SS] iteration N/ M | consumed samples: ... | elapsed time per iteration (ms): ... |
    throughput per GPU (TFLOP/s/GPU): ... | learning rate: ... | global batch size: ... | lm loss: ... | ...'.
    ``seed`` None: a new seed per run; a number: the same lines for the same state and environment.
    ``run_shift``: a fraction by which the whole run is slower (positive) or faster (see noise_shift)."""
    rng = random.Random(run_seed() if seed is None else seed)
    spread = jitter_pct(local) / 100.0
    base = step_time_ms(states, local, env, npus=npus)
    if run_shift:
        # a noisy node (another job, thermal throttling, a busy host): the run as a whole is slower
        # or faster, so the runs' mean step times differ, not only their steps
        base *= 1.0 + run_shift
    world = (8 if npus is None else max(1, int(npus))) * max(1, len(states))
    # Work per step of the modelled job, sized as 40 % of 313 TFLOP/s per NPU (the 910B3's total,
    # Cube and Vector, figure; its dense Cube peak, which MFU divides by, is 294.912); only ratios matter.
    work = tflops_per_step if tflops_per_step is not None else 0.40 * 313.0 * world * 0.9
    clock = time.time() if start is None else float(start)
    lines = []
    loss = 10.5
    elapsed_ms = []
    for step in range(1, steps + 1):
        elapsed = base * (1.0 + rng.uniform(-spread, spread))
        if step == 1:
            elapsed *= 1.6
        elapsed_ms.append(elapsed)
        clock += elapsed / 1000.0
        loss = loss * 0.97 + 0.05 * rng.random()
        if step % log_interval:
            continue
        throughput = work / (elapsed / 1000.0) / world
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(clock))
        lines.append(
            " [{}] iteration {:8d}/{:8d} | consumed samples: {:12d} | elapsed time per iteration (ms): {:.1f} |"
            " throughput per GPU (TFLOP/s/GPU): {:.1f} | learning rate: {:.6E} | global batch size: {:5d} |"
            " lm loss: {:.6E} | loss scale: 1.0 | grad norm: {:.3f} | number of skipped iterations: {:3d} |"
            " number of nan iterations: {:3d} |".format(
                stamp, step, steps, step * global_batch, elapsed, throughput, lr, global_batch, loss,
                1.0 + rng.random(), 0, 0))
    # the torch_npu profiler's output of the last steps when the job is asked to profile (tools/npu_sim/profiler.py)
    target = (os.environ if env is None else env).get("NPU_SIM_PROFILE_DIR")
    if target and elapsed_ms:
        from . import profiler
        count = min(profiler.PROFILED_STEPS, len(elapsed_ms))
        profiler.write_profile(target, states, local, elapsed_ms[-count:], env=env, start=clock,
                               first_step=len(elapsed_ms) - count + 1)
    return lines


def _size(text):
    text = str(text).strip().upper()
    mult = 1
    for suffix, factor in (("K", 1024), ("M", 1024 ** 2), ("G", 1024 ** 3)):
        if text.endswith(suffix):
            mult = factor
            text = text[:-1]
    return int(text) * mult


def allreduce_busbw(states, nodes, npus_per_node=8, env=None, devices=None):
    """busbw (GB/s) of an AllReduce over ``nodes`` nodes: HCCS inside one node, crossnode_busbw across nodes (on the
    job's physical NPUs ``devices``, else 0..npus_per_node-1)."""
    return intra_busbw(states, npus_per_node) if nodes <= 1 else crossnode_busbw(states, env, npus_per_node, devices)


def allreduce_lines(states, nodes, minbytes="8K", maxbytes="1G", factor=2, env=None, npus_per_node=8,
                    iters=HCCL_ITERS, warmup=HCCL_WARMUP, check=True, sizes=None, devices=None):
    """hccl_test all_reduce_test table (layout of hicann/oam-tools print_execution_time): first line, header,
    one row per size (``sizes``, or min, min x factor, ... up to max); ``check`` False prints NULL. ``devices``: the
    job's physical NPUs on every node (mpi.job_devices), else 0..npus_per_node-1."""
    low, high = _size(minbytes), _size(maxbytes)
    ranks = max(1, int(npus_per_node)) * max(1, nodes)
    busbw = allreduce_busbw(states, nodes, npus_per_node, env, devices)
    peak_alg = busbw * ranks / (2.0 * (ranks - 1)) if ranks > 1 else busbw
    latency_us = 20.0 if nodes <= 1 else 60.0 + 10.0 * math.log(nodes, 2)
    lines = ["the minbytes is %d, maxbytes is %d, iters is %d, warmup_iters is %d" % (low, high, iters, warmup),
             "%-15s | %-12s | %-18s | %s" % ("data_size(Bytes):", "aveg_time(us):", "alg_bandwidth(GB/s):", "check_result:")]
    if sizes is None:
        sizes = []
        size = low
        while 0 < size <= high:
            sizes.append(size)
            size *= max(2, int(factor))
    for size in sizes:
        avg_us = latency_us + size / (peak_alg * 1e3)
        alg = size / avg_us * 1e-3
        lines.append("%-17d | %-14.2f | %-20.5f | %s" % (size, avg_us, alg, "success" if check else "NULL"))
    return lines
