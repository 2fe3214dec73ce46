"""CANN process log (plog) lines for injected faults.

When a fault is set on a node of a simulated PoD, :func:`write_fault_lines` appends the lines a real job would have
left in ``$HOME/ascend/log/debug/plog/`` of that node (``<pod_dir>/<hostname>/root`` is the node's /root, see
tools/pod/README.md). The formats are those of real plog lines and CANN error messages
(tests/fixtures/captures/plog_samples.txt); the texts are shortened. A state outside a PoD (no ``pod_dir``, or no
``root`` directory beside the node's state) gets no lines.
"""

import os
import time

PLOG_DIR = os.path.join("ascend", "log", "debug", "plog")


def stamp(when):
    """A time in the plog format, ``2025-07-23-03:49:57.177.194``."""
    micro = int(round((when - int(when)) * 1e6)) % 1000000
    return "%s.%03d.%03d" % (time.strftime("%Y-%m-%d-%H:%M:%S", time.localtime(int(when))), micro // 1000, micro % 1000)


def node_home(st):
    """The node's /root as seen from this process, or None outside a PoD."""
    pod_dir = st.get("pod_dir")
    hostname = st.get("hostname")
    if not pod_dir or not hostname:
        return None
    home = os.path.join(pod_dir, hostname, "root")
    return home if os.path.isdir(home) else None


def fault_lines(kind, device, value, pid, when):
    """The log lines one job process on ``device`` leaves for a fault, or [] for a fault that leaves none.

    The timeout line of an EI0006 is followed by the LINK_ERROR_INFO block that names the device (``comm error,
    device[N]``), the driver error names its chip (``device(chipId:N, dieId:0)``); the HCCP error names no device.
    """
    ts = stamp(when)
    tid = pid + 1
    if kind == "link-stuck-down":
        return [
            "[ERROR] HCCL(%d,python3):%s [hccl_socket_manager.cc:796] [%d][Wait][LinkEstablish]wait socket establish "
            "timeout, role[1] rank[%d] timeout[120 s]" % (pid, ts, tid, device),
            "[ERROR] HCCL(%d,python3):%s [hccl_socket_manager.cc:622] [%d]   _________________________LINK_ERROR_INFO"
            "___________________________" % (pid, ts, tid),
            "[ERROR] HCCL(%d,python3):%s [hccl_socket_manager.cc:623] [%d]   |  comm error, device[%d] " % (pid, ts, tid, device),
            "EI0006: [PID: %d] %s Getting socket times out. Reason: Remote Rank did not send the data in time. Please "
            "check the reason for the rank being stuck" % (pid, ts),
        ]
    if kind == "busy":
        return [
            "[ERROR] HCCL(%d,python3):%s [hccl_comm.cc:100][%d][HcclComm][Init]errNo[0x0000000005000007] hccl "
            "initialize failed" % (pid, ts, pid),
            "EJ0001: [PID: %d] %s Failed to initialize the HCCP process. Reason: Maybe the last training process is "
            "running." % (pid, ts),
            "        Solution: Wait for 10s after killing the last training process and try again.",
        ]
    if kind == "health" and value in ("Alarm", "Critical", None, ""):
        return [
            "EL9999: [PID: %d] %s The error from device(chipId:%d, dieId:0), the driver reported health %s."
            "[FUNC:ProcessDeviceErrorInfo][FILE:device_error_proc.cc][LINE:1479]" % (pid, ts, device, value or "Alarm"),
        ]
    return []


def write_fault_lines(st, kind, device, value, when=None):
    """Append the lines of fault ``kind`` to the plog file of the job process of each device it hits (one process per
    NPU, as a training job runs); returns the files written."""
    home = node_home(st)
    if home is None:
        return []
    when = time.time() if when is None else float(when)
    targets = [npu["id"] for npu in st.get("npus", [])] if device is None else [device]
    directory = os.path.join(home, PLOG_DIR)
    written = []
    for dev in targets:
        # the running job's processes (20000 + ...) see link and driver errors; busy is the next job (30000 + ...),
        # which cannot start while the last one holds the NPUs
        pid = (30000 if kind == "busy" else 20000) + int(st.get("index") or 0) * 100 + dev
        lines = fault_lines(kind, dev, value, pid, when)
        if not lines:
            continue
        path = os.path.join(directory, "plog-%d_%s.log" % (pid, time.strftime("%Y%m%d%H%M%S", time.localtime(int(when)))))
        try:
            os.makedirs(directory, exist_ok=True)
            with open(path, "a", encoding="utf-8") as handle:
                handle.write("".join(line + "\n" for line in lines))
        except OSError:
            continue
        written.append(path)
    return written
