"""The torch_npu profiler's output for the modelled training job (``npu-sim train`` with NPU_SIM_PROFILE_DIR set).

Writes ``<dir>/<host>_<pid>_<stamp>_ascend_pt/`` with ``profiler_info_0.json`` (rank 0, the rank the benchmark host
runs on NPU 0) and ``ASCEND_PROFILER_OUTPUT/`` holding step_trace_time.csv, kernel_details.csv, op_statistic.csv
(microseconds), communication.json and communication_matrix.json (milliseconds), in the layouts of the real files
(tests/unit/fixtures/profiler/SOURCE.md names them). The profiled steps are the last PROFILED_STEPS of the run.

The split of a step follows perf.step_time_ms (a MODEL):
- computing: the compute part (perf's compute_ms) less the share HOST_BASE_PCT that the host and data loading take
  even on a tuned node (the NPU waits: free);
- communication not overlapped: the gradient AllReduce (HCCS inside the node, RoCE across nodes, so a slow or lossy
  port raises it); a further OVERLAPPED_PCT of the computing time is communication hidden under computing;
- free: the rest of the step - the base host share plus what perf adds for the job bound to no NUMA node (+8 %)
  and a CPU governor other than performance (+5 %): a far NUMA node shows as host time.
A step of the log that is slower or faster (jitter) scales every part alike.
"""

import json
import os
import time

from . import perf

PROFILED_STEPS = 2
HOST_BASE_PCT = 4.0
OVERLAPPED_PCT = 20.0
KERNELS_PER_STEP = 12
COMPUTE_KERNELS = (("aclnnMatmul_MatMulV3Common_MatMulV3", "MatMulV3", "AI_CORE", 0.55),
                   ("aclnnFlashAttentionScore_FlashAttentionScore_FlashAttentionScore", "FlashAttentionScore",
                    "MIX_AIC", 0.35),
                   ("aclnnAdd_AddAiCore_Add", "Add", "AI_VECTOR_CORE", 0.10))
STEP_HEADER = ("Device_id,Step,Computing,Communication(Not Overlapped),Overlapped,Communication,Free,Stage,Bubble,"
               "Communication(Not Overlapped and Exclude Receive),Preparing")
KERNEL_HEADER = ("Device_id,Step Id,Model ID,Task ID,Stream ID,Name,Type,OP State,Accelerator Core,Start Time(us),"
                 "Duration(us),Wait Time(us),Block Dim,Mix Block Dim,HF32 Eligible,Input Shapes,Input Data Types,"
                 "Input Formats,Output Shapes,Output Data Types,Output Formats,Context ID")
OPSTAT_HEADER = "Device_id,OP Type,Core Type,Count,Total Time(us),Min Time(us),Avg Time(us),Max Time(us),Ratio(%)"


def split_ms(states, local, env=None, grad_gb=2.0, compute_ms=900.0):
    """``{computing, comm_not_overlapped, overlapped, free, step}`` in ms of one modelled step (no jitter)."""
    env = os.environ if env is None else env
    nodes = max(1, len(states))
    comm = grad_gb / perf.intra_busbw(states) * 1000.0
    if nodes > 1:
        comm += grad_gb / perf.inter_busbw(states, env) * 1000.0 * (nodes - 1) / nodes * 2.0
    step = perf.step_time_ms(states, local, env, grad_gb=grad_gb, compute_ms=compute_ms)
    computing = compute_ms * (1.0 - HOST_BASE_PCT / 100.0)
    return {"computing": computing, "comm_not_overlapped": comm, "overlapped": computing * OVERLAPPED_PCT / 100.0,
            "free": step - computing - comm, "step": step}


def _kernel_rows(step_no, start_us, parts_us, nodes):
    """kernel_details.csv rows of a step: compute kernels back to back over the computing time, then the gradient
    AllReduce (type COMMUNICATION, the newer CANN's core type) over the not-overlapped communication."""
    rows, clock, task = [], start_us, step_no * 1000
    per = parts_us["computing"] / KERNELS_PER_STEP
    for index in range(KERNELS_PER_STEP):
        name, op_type, core, weight = COMPUTE_KERNELS[index % len(COMPUTE_KERNELS)]
        duration = per * weight * len(COMPUTE_KERNELS)
        duration = min(duration, start_us + parts_us["computing"] - clock) if index == KERNELS_PER_STEP - 1 else duration
        rows.append((name, op_type, core, clock, duration, task + index))
        clock += duration
    clock = start_us + parts_us["computing"]
    # the communication not overlapped, in two AllReduce kernels (intra node, then across nodes when there are any)
    pieces = (1.0,) if nodes <= 1 else (0.3, 0.7)
    for index, piece in enumerate(pieces):
        duration = parts_us["comm_not_overlapped"] * piece
        rows.append(("hcom_allReduce__%03d_%d_1" % (step_no % 1000, index), "hcom_allReduce_", "COMMUNICATION",
                     clock, duration, None))
        clock += duration
    lines = []
    for name, op_type, core, start, duration, task_id in rows:
        comm = core == "COMMUNICATION"
        lines.append(",".join([
            "0", str(step_no), "4294967295", "N/A" if comm else str(task_id), "N/A" if comm else "2", name, op_type,
            "N/A" if comm else "dynamic", core, '"%.3f\t"' % start, "%.3f" % duration, "0.5",
            "0" if comm else "20", "0" if comm else ("40" if core.startswith("MIX") else "0"),
            "N/A" if comm else "NO", "N/A" if comm else '"""4096,4096"""', "N/A" if comm else "DT_BF16",
            "N/A" if comm else "ND", "N/A" if comm else '"""4096,4096"""', "N/A" if comm else "DT_BF16",
            "N/A" if comm else "ND", "N/A"]))
    return lines


def _comm_entry(elapse_ms, size_mb, transport):
    """One operator of communication.json (the per-rank layout: Communication Time/Bandwidth Info, milliseconds)."""
    bandwidth = {}
    for name in ("RDMA", "HCCS", "PCIE", "SDMA"):
        used = name == transport or (transport == "HCCS" and name == "SDMA")
        transit = elapse_ms * 0.9 if used else 0
        bandwidth[name] = {"Transit Size(MB)": size_mb if used else 0, "Transit Time(ms)": transit,
                           "Bandwidth(GB/s)": round(size_mb / 1000.0 / (transit / 1000.0), 4) if used and transit else 0,
                           "Large Packet Ratio": 1.0 if used else 0, "Size Distribution": {}}
    return {"Communication Time Info": {"Start Timestamp(us)": 0.0, "Elapse Time(ms)": elapse_ms,
                                        "Transit Time(ms)": elapse_ms * 0.9, "Wait Time(ms)": elapse_ms * 0.05,
                                        "Synchronization Time(ms)": elapse_ms * 0.02, "Idle Time(ms)": elapse_ms * 0.05,
                                        "Wait Time Ratio": 0.0526, "Synchronization Time Ratio": 0.0217},
            "Communication Bandwidth Info": bandwidth}


def write_profile(target, states, local, step_ms, env=None, start=None, first_step=1, grad_gb=2.0):
    """Write one rank's profile of the steps whose elapsed times (ms) are ``step_ms`` (numbered from
    ``first_step``) under ``target``; returns the *_ascend_pt directory."""
    model = split_ms(states, local, env, grad_gb=grad_gb)
    nodes = max(1, len(states))
    clock_s = time.time() if start is None else float(start)
    stamp = time.strftime("%Y%m%d%H%M%S", time.gmtime(clock_s)) + "%03d" % int((clock_s % 1) * 1000)
    host = str(local.get("hostname") or "node")
    pt_dir = os.path.join(target, "%s_%d_%s_ascend_pt" % (host, os.getpid(), stamp))
    out = os.path.join(pt_dir, "ASCEND_PROFILER_OUTPUT")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(pt_dir, "profiler_info_0.json"), "w", encoding="utf-8") as handle:
        json.dump({"config": {"common_config": {"activities": ["ProfilerActivity.CPU", "ProfilerActivity.NPU"]}},
                   "rank_id": 0}, handle)
    steps, kernels, comm, matrix = [STEP_HEADER], [KERNEL_HEADER], {}, {}
    ops = {}
    begin_us = clock_s * 1e6
    for offset, elapsed in enumerate(step_ms):
        step_no = first_step + offset
        scale = elapsed / model["step"]
        parts = dict((key, value * scale * 1000.0) for key, value in model.items())
        stage = parts["computing"] + parts["comm_not_overlapped"] + parts["free"]
        steps.append("0,%d,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,0,%.3f,%.3f" % (
            step_no, parts["computing"], parts["comm_not_overlapped"], parts["overlapped"],
            parts["comm_not_overlapped"] + parts["overlapped"], parts["free"], stage, parts["comm_not_overlapped"],
            parts["free"] * 0.05))
        kernels.extend(_kernel_rows(step_no, begin_us, parts, nodes))
        for _name, op_type, core, _w in COMPUTE_KERNELS:
            entry = ops.setdefault((op_type, core), [])
            entry.extend([parts["computing"] / KERNELS_PER_STEP * _w * len(COMPUTE_KERNELS)] * (KERNELS_PER_STEP // 3))
        comm_ms = parts["comm_not_overlapped"] / 1000.0
        step_ops = {}
        pieces = (("HCCS", 1.0),) if nodes <= 1 else (("HCCS", 0.3), ("RDMA", 0.7))
        for index, (transport, piece) in enumerate(pieces):
            step_ops["hcom_allReduce__%03d_%d_1@1234567890" % (step_no % 1000, index)] = _comm_entry(
                comm_ms * piece, grad_gb * 1000.0 * piece, transport)
        step_ops["Total Op Info"] = _comm_entry(comm_ms, grad_gb * 1000.0, pieces[-1][0])
        comm["step%d" % step_no] = {"collective": step_ops, "p2p": {}}
        links = {"0-0": {"Transport Type": "LOCAL", "Transit Size(MB)": grad_gb * 1000.0, "Transit Time(ms)": 0.5,
                         "Bandwidth(GB/s)": round(grad_gb / 0.0005, 4), "Op Name": "hcom_allReduce__000_0_1"},
                 "0-1": {"Transport Type": "HCCS", "Transit Size(MB)": grad_gb * 300.0,
                         "Transit Time(ms)": comm_ms * 0.3, "Bandwidth(GB/s)": round(grad_gb * 0.3 / max(comm_ms * 0.3e-3, 1e-9), 4),
                         "Op Name": "hcom_allReduce__000_0_1"}}
        if nodes > 1:
            links["0-8"] = {"Transport Type": "RDMA", "Transit Size(MB)": grad_gb * 700.0,
                            "Transit Time(ms)": comm_ms * 0.7,
                            "Bandwidth(GB/s)": round(grad_gb * 0.7 / max(comm_ms * 0.7e-3, 1e-9), 4),
                            "Op Name": "hcom_allReduce__000_1_1"}
        matrix["step%d" % step_no] = {"collective": {"hcom_allReduce__%03d_0_1@1234567890" % (step_no % 1000): links},
                                      "p2p": {}}
        begin_us += elapsed * 1000.0
    total = sum(sum(values) for values in ops.values()) or 1.0
    stats = [OPSTAT_HEADER]
    for (op_type, core), values in sorted(ops.items(), key=lambda item: -sum(item[1])):
        figures = (op_type, core, len(values), sum(values), min(values), sum(values) / len(values), max(values),
                   100.0 * sum(values) / total)
        stats.append("0,%s,%s,%d,%.3f,%.3f,%.3f,%.3f,%.3f" % figures)
    for name, lines in (("step_trace_time.csv", steps), ("kernel_details.csv", kernels),
                        ("op_statistic.csv", stats)):
        with open(os.path.join(out, name), "w", encoding="utf-8") as handle:
            handle.write("\n".join(lines) + "\n")
    for name, data in (("communication.json", comm), ("communication_matrix.json", matrix)):
        with open(os.path.join(out, name), "w", encoding="utf-8") as handle:
            json.dump(data, handle)
    return pt_dir
