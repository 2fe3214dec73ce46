"""``npu-sim``: the control command of the simulator (init, install, fault, state, calls, train, allreduce, busbw,
shm, reboot).

``npu-sim calls --cpu`` sums the CPU time the simulated tool calls used on the node (the ``cpu_s`` and
``start_cpu_s`` fields of the call log): what a benchmark of the collection subtracts or reports as the
simulator's own cost (docs/simulator-cost.md).
"""

import argparse
import json
import os
import shlex
import sys

from . import SERVED
from . import faults as faults_mod
from . import hccnconf
from . import host
from . import model
from . import node as node_mod
from . import perf
from . import plog
from . import ports
from . import statefile
from . import versions
from .output import Result

FAULT_KINDS = ("link-stuck-down", "link-flap", "busy", "hang", "health", "ecc-multibit", "ecc-singlebit", "version",
               "process", "ip-conflict", "missing-tool", "noise", "pcie-missing", "slow-port", "slow-node", "pfc-storm",
               "switch-frame", "switch-pfc-priority", "switch-no-ecn", "iowait", "shm-full", "power-high", "pcie-err",
               "pcie-err-growing", "throttle", "disk-busy", "if-ip-elsewhere", "log-level", "crc-growing", "optical-low")
HEALTH_LEVELS = ("Warning", "Alarm", "Critical")
# Faults of a device's RoCE port: refused on a device without one (``net`` None, e.g. an Atlas 300I Duo chip).
PORT_FAULT_KINDS = ("link-stuck-down", "link-flap", "ip-conflict", "slow-port", "pfc-storm", "switch-frame",
                    "switch-pfc-priority", "switch-no-ecn", "crc-growing", "optical-low")
VERSION_KEYS = ("driver", "firmware", "cann", "torch", "torch_npu", "cann_kernels", "mindie", "mindspeed", "vllm", "vllm_ascend",
                "kernel_release", "python")
# What --npus counts, per product (npu_sim.node.PRODUCTS).
NPUS_OF = {"atlas-800t-a2": "an Atlas 800T A2 has 8", "atlas-a3": "NPUs of an Atlas 800T A3, two dies each; it has 8",
           "atlas-300i-duo": "Atlas 300I Duo cards, two chips each; the simulated host has up to 4"}
TOOLS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Where `npu-sim install --prefix DIR` puts each wrapper (docs/architecture.md).
WRAPPER_PATHS = {
    "hccn_tool": os.path.join("Ascend", "driver", "tools", "hccn_tool"),
    "npu-smi": os.path.join("sbin", "npu-smi"),
    "npu-sim": os.path.join("sbin", "npu-sim"),
    "numactl": os.path.join("sbin", "numactl"),
    "lscpu": os.path.join("sbin", "lscpu"),
    "cpupower": os.path.join("sbin", "cpupower"),
    "lspci": os.path.join("sbin", "lspci"),
    "all_reduce_test": os.path.join("Ascend", "ascend-toolkit", "latest", "tools", "hccl_test", "bin", "all_reduce_test"),
    "mpirun": os.path.join("mpich", "bin", "mpirun"),
    "vmstat": os.path.join("sbin", "vmstat"),
    "iostat": os.path.join("sbin", "iostat"),
    "fio": os.path.join("sbin", "fio"),
    "ip": os.path.join("sbin", "ip"),
}
DATA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
# MindIE's default config.json (a copy of the file MindIE ships), installed on every node when missing.
MINDIE_DEFAULT_CONFIG = os.path.join(DATA_DIR, "mindie_config_default.json")
MINDIE_CONFIG = os.path.join("Ascend", "mindie", "latest", "mindie-service", "conf", "config.json")


class ControlError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise ControlError("%s: %s" % (self.prog, message))


def default_python():
    return "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable


# What the wrappers run with ``python -I -S -c``: the first argument is the tools/ directory, put on sys.path
# here (an isolated interpreter ignores PYTHONPATH), then npu_sim.__main__.boot runs the tool named next.
BOOTSTRAP = "import sys; sys.path.insert(0, sys.argv.pop(1)); from npu_sim.__main__ import boot; boot()"


# The thin client of the node's resident simulator (client.c, server.py), compiled once per source into the
# repository's build/ directory, and the socket the node's server listens on (beside the node's state).
CLIENT_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "client.c")
CLIENT_BUILD_DIR = os.path.join(os.path.dirname(TOOLS_DIR), "build", "npu-sim")
SERVER_SOCKET = os.path.join(os.path.dirname(statefile.DEFAULT_STATE_PATH), "server.sock")
# Words of the wrapper's own command before the tool: PY -I -S -c BOOTSTRAP TOOLS_DIR
CLIENT_COMMAND_WORDS = 6


def client_path(build=True):
    """The compiled client for the current client.c, built with ``cc`` when missing and ``build``; None when it
    cannot be (no compiler): the wrappers then run their own interpreter, as before the server existed."""
    import hashlib  # pylint: disable=import-outside-toplevel
    try:
        with open(CLIENT_SOURCE, "rb") as handle:
            digest = hashlib.sha256(handle.read()).hexdigest()[:12]
    except OSError:
        return None
    target = os.path.join(CLIENT_BUILD_DIR, "npu-sim-client-" + digest)
    if os.access(target, os.X_OK) or not build:
        return target if os.access(target, os.X_OK) else None
    import fcntl  # pylint: disable=import-outside-toplevel
    import shutil  # pylint: disable=import-outside-toplevel
    import subprocess  # pylint: disable=import-outside-toplevel
    compiler = shutil.which("cc") or shutil.which("gcc")
    if not compiler:
        return None
    os.makedirs(CLIENT_BUILD_DIR, exist_ok=True)
    with open(os.path.join(CLIENT_BUILD_DIR, ".lock"), "w") as lock:  # one compile when nodes install at once
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.access(target, os.X_OK):
            tmp = "%s.tmp.%d" % (target, os.getpid())
            proc = subprocess.run([compiler, "-O2", "-Wall", "-o", tmp, CLIENT_SOURCE], capture_output=True, text=True,
                                  timeout=120, check=False)
            if proc.returncode != 0:
                sys.stderr.write("npu-sim: the client was not built (%s); tools run their own interpreter\n%s" % (
                    compiler, proc.stderr))
                return None
            os.replace(tmp, target)
    return target


def wrapper_text(tool, python, client=None):
    """The sh wrapper of one tool. It runs ``python -I -S -c BOOTSTRAP <tools dir> <tool> "$@"``: -I (isolated: no
    PYTHON* variables, no user site directory, no script directory on sys.path) and -S (no site module) spare
    every call the interpreter's site set-up and the runpy module of ``-m``, and boot() skips the interpreter's
    finalization (docs/simulator-cost.md). PYTHONPATH is still exported: the programs that numactl and mpirun
    launch inherit it, as they always did. With ``client`` (and a tool the server runs), the wrapper execs the
    thin client instead, which hands the call to the node's resident simulator (server.py) and runs that same
    command itself when no server listens."""
    command = "%s -I -S -c %s %s %s \"$@\"" % (
        shlex.quote(python), shlex.quote(BOOTSTRAP), shlex.quote(TOOLS_DIR), tool)
    lines = ["#!/bin/sh",
             "# %s: simulated Ascend tool (generated by npu-sim install)" % tool,
             "unset NPU_SIM_STATE",
             "PYTHONPATH=%s" % shlex.quote(TOOLS_DIR),
             "export PYTHONPATH"]
    if client and tool in SERVED:
        lines.append("[ -x %s ] && exec %s %s %d %s" % (shlex.quote(client), shlex.quote(client), shlex.quote(SERVER_SOCKET),
                                                        CLIENT_COMMAND_WORDS, command))
    lines.append("exec " + command)
    return "\n".join(lines) + "\n"


def write_wrapper(prefix, tool, python, client=None):
    target = os.path.join(prefix, WRAPPER_PATHS[tool])
    os.makedirs(os.path.dirname(target), exist_ok=True)
    tmp = target + ".tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(wrapper_text(tool, python, client))
    os.chmod(tmp, 0o755)
    os.replace(tmp, target)
    return target


def render_version_files(st):
    prefix = st.get("install_prefix")
    if prefix:
        versions.write(model.effective(st), prefix)


def render_host_files(st):
    """/proc/meminfo, vm.swappiness and the THP mode of the node under ``<install_prefix>/host/``."""
    prefix = st.get("install_prefix")
    if prefix:
        host.write_host_files(st, prefix)


def install_mindie_config(prefix):
    """MindIE's default config.json at <prefix>/Ascend/mindie/latest/mindie-service/conf/config.json, mode 0640,
    only when it is missing (what the collection wrote there is never overwritten)."""
    target = os.path.join(prefix, MINDIE_CONFIG)
    if os.path.lexists(target) or not os.path.isfile(MINDIE_DEFAULT_CONFIG):
        return None
    os.makedirs(os.path.dirname(target), exist_ok=True)
    with open(MINDIE_DEFAULT_CONFIG, "rb") as handle:
        data = handle.read()
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o640)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    os.chmod(target, 0o640)
    return target


def cmd_init(args, path, res):
    if os.path.exists(path) and not args.force:
        raise ControlError("state %s exists; use --force to overwrite" % path)
    spec = node_mod.PRODUCTS[args.product]
    npus = spec["npus"] if args.npus is None else args.npus
    if npus < 1 or npus > spec["max_npus"]:
        raise ControlError("--npus must be 1-%d (%s)" % (spec["max_npus"], NPUS_OF[args.product]))
    data = node_mod.new_state(args.hostname, args.index, npus, args.pod_dir, product=args.product)
    statefile.save(path, data)
    with statefile.locked(path, True):
        hccnconf.write(path, data)  # the node's /etc/hccn.conf: the address plan (none without RoCE ports)
    if args.product == node_mod.DEFAULT_PRODUCT:
        res.o("initialised %s (hostname %s, index %d, %d NPUs)" % (path, args.hostname, args.index, npus))
    else:
        res.o("initialised %s (hostname %s, index %d, %s: %d NPUs, %d chips)" % (
            path, args.hostname, args.index, spec["name"], npus, len(data["npus"])))


def cmd_install(args, path, res):
    prefix = os.path.abspath(args.prefix)
    python = args.python or default_python()
    with statefile.transaction(path) as data:
        data["install_prefix"] = prefix
        data["python"] = python
        data["served_wrappers"] = bool(args.server)  # a restored wrapper (missing-tool cleared) is written the same way
        missing = set(str(f.get("value")) for f in faults_mod.faults_for(data, "missing-tool"))
        snapshot = statefile.deep_copy(data)
    client = client_path() if args.server else None
    for tool in WRAPPER_PATHS:
        if tool not in missing:
            write_wrapper(prefix, tool, python, client)
    render_version_files(snapshot)
    render_host_files(snapshot)
    install_mindie_config(prefix)
    res.o("installed simulated tools under %s" % prefix)


def _check_fault(kind, device, value, st):
    if kind not in FAULT_KINDS:
        raise ControlError("unknown fault kind %r (known: %s)" % (kind, ", ".join(FAULT_KINDS)))
    if device is not None and not 0 <= device < len(st["npus"]):
        raise ControlError("--device %d: this node has NPUs 0-%d" % (device, len(st["npus"]) - 1))
    if kind == "health" and value not in (None, "") and value not in HEALTH_LEVELS:
        raise ControlError("health --value must be one of %s" % "|".join(HEALTH_LEVELS))
    if kind == "version":
        pairs = model.parse_kv(value or "")
        if not pairs or any(key not in VERSION_KEYS for key in pairs):
            raise ControlError("version --value must be KEY=V[,KEY=V] with KEY in %s" % ",".join(VERSION_KEYS))
    if kind == "missing-tool" and value not in WRAPPER_PATHS:
        raise ControlError("missing-tool --value must be one of %s" % "|".join(WRAPPER_PATHS))
    if kind in ("busy",) and value not in (None, "") and not str(value).isdigit():
        raise ControlError("busy --value is the number of calls that answer busy")
    if kind == "link-stuck-down" and value not in (None, "") and not (str(value).isdigit() and int(value) > 0):
        raise ControlError("link-stuck-down --value is the number of PFC/MTU sets of the port that leave it DOWN (>= 1)")
    if kind in ("hang", "link-flap") and value not in (None, ""):
        try:
            float(value)
        except ValueError:
            raise ControlError("%s --value must be seconds" % kind) from None
    if kind in ("noise", "ecc-singlebit", "pcie-err-growing", "crc-growing") and value not in (None, ""):
        try:
            number = float(value)
        except ValueError:
            number = -1.0
        if number < 0:
            raise ControlError("%s --value must be a number >= 0 (%s)" % (
                kind, "percent of jitter" if kind == "noise" else "errors per minute"))
    if kind in PORT_FAULT_KINDS:
        bare = [npu["id"] for npu in st["npus"] if npu.get("net") is None and (device is None or npu["id"] == device)]
        if bare:
            raise ControlError("%s is a fault of a RoCE port; device %d of this %s has no RoCE port" % (
                kind, bare[0], st.get("product") or "node"))
    if kind == "slow-node" and device is not None:
        raise ControlError("slow-node slows the whole node; it takes no --device (use slow-port for one port)")
    if kind in model.SLOW_KINDS and value not in (None, ""):
        try:
            factor = float(value)
        except ValueError:
            factor = -1.0
        if not 0.0 < factor <= 1.0:
            raise ControlError("%s --value is the factor of the cross-node busbw, > 0 and <= 1" % kind)
    if kind == "pfc-storm" and value not in (None, ""):
        try:
            rate = float(value)
        except ValueError:
            rate = -1.0
        if rate < 0:
            raise ControlError("pfc-storm --value is pause frames per second, a number >= 0")
    _check_switch_fault(kind, value)
    _check_io_fault(kind, device, value)
    _check_host_env_fault(kind, device, value)
    _check_npu_value_fault(kind, value)
    if kind == "optical-low" and value not in (None, ""):
        try:
            power = float(value)
        except ValueError:
            power = -1.0
        if power < 0:
            raise ControlError("optical-low --value is the Rx power of every lane of the port in mW, a number >= 0 "
                               "(the module's RxPower Low Thres is 0.1445 mW)")


def _check_npu_value_fault(kind, value):
    """Values of power-high (W > 0), pcie-err (errors, an integer >= 1) and throttle (MHz, an integer >= 0)."""
    if kind not in ("power-high", "pcie-err", "throttle") or value in (None, ""):
        return
    if kind == "power-high":
        try:
            watts = float(value)
        except ValueError:
            watts = -1.0
        if watts <= 0:
            raise ControlError("power-high --value is the power of the NPU in W, a number > 0 (got %r)" % value)
    elif kind == "pcie-err" and not (str(value).isdigit() and int(value) >= 1):
        raise ControlError("pcie-err --value is the number of PCIe errors to add to RX Error Count and Retry Count, "
                           "an integer >= 1 (got %r)" % value)
    elif kind == "throttle" and not str(value).isdigit():
        raise ControlError("throttle --value is the AI Core frequency in MHz the NPU drops to, an integer >= 0 (got %r)" % value)


def _check_host_env_fault(kind, device, value):
    """log-level (ASCEND_GLOBAL_LOG_LEVEL written to the node's /etc/profile.d, 0-4) and if-ip-elsewhere (no value):
    faults of the node, no --device."""
    if kind not in ("log-level", "if-ip-elsewhere"):
        return
    if device is not None:
        raise ControlError("%s is a fault of the node; it takes no --device" % kind)
    if kind == "log-level" and value not in (None, "") and str(value) not in ("0", "1", "2", "3", "4"):
        raise ControlError("log-level --value is the ASCEND_GLOBAL_LOG_LEVEL written to the node's /etc/profile.d, 0-4")
    if kind == "if-ip-elsewhere" and value not in (None, ""):
        raise ControlError("if-ip-elsewhere takes no --value (the node's address moves to enp189s0f1)")


def _check_io_fault(kind, device, value):
    """Values of the host IO faults (iowait, shm-full, disk-busy): percentages 0-100, no --device."""
    if kind not in ("iowait", "shm-full", "disk-busy"):
        return
    if device is not None:
        raise ControlError("%s is a fault of the node; it takes no --device" % kind)
    if value not in (None, ""):
        try:
            number = float(value)
        except ValueError:
            number = -1.0
        if not 0.0 <= number <= 100.0:
            raise ControlError("%s --value is a percentage 0-100 (%s)" % (kind, {
                "iowait": "CPU time waiting for IO", "shm-full": "of /dev/shm filled",
                "disk-busy": "%util of the data disk"}[kind]))


def _check_switch_fault(kind, value):
    """Values of the switch-side faults (model.SWITCH_KINDS)."""
    given = value not in (None, "")
    if kind == "switch-frame" and given:
        low, high = model.SWITCH_FRAME_RANGE
        if not (str(value).isdigit() and low <= int(value) <= high):
            raise ControlError("switch-frame --value is the switch port's maximum frame size in bytes, an integer %d-%d "
                               "(got %r)" % (low, high, value))
    if kind == "switch-pfc-priority" and given and not (str(value).isdigit() and 0 <= int(value) <= 7):
        raise ControlError("switch-pfc-priority --value is the priority the switch runs PFC on, an integer 0-7 (got %r)" % value)
    if kind == "switch-no-ecn" and given:
        raise ControlError("switch-no-ecn takes no --value (the switch port does not mark ECN)")


def _fold_switch_pfc(data, when):
    """Before a switch-pfc-priority fault is set or removed: keep the pauses counted so far on every port it
    holds on (model.fold_pfc_growth), so that its -stat/-pfc_stat counters never go backwards."""
    for npu in data["npus"]:
        if faults_mod.faults_for(data, "switch-pfc-priority", npu["id"]):
            model.fold_pfc_growth(data, npu["id"], when)


def cmd_fault(args, path, res):
    if args.action == "list":
        res.o(json.dumps(statefile.load(path).get("faults", []), indent=1))
        return
    if args.action == "set":
        if not args.kind:
            raise ControlError("fault set needs KIND")
        with statefile.transaction(path) as data:
            _check_fault(args.kind, args.device, args.value, data)
            if args.kind == "switch-pfc-priority":
                _fold_switch_pfc(data, node_mod.now(data))
            data["faults"] = [f for f in data["faults"]
                              if not (f["kind"] == args.kind and f.get("device") == args.device)]
            data["faults"].append({"kind": args.kind, "device": args.device, "value": args.value,
                                   "tool": args.tool, "since": node_mod.now(data)})
            snapshot = statefile.deep_copy(data)
        if args.kind == "missing-tool" and snapshot.get("install_prefix"):
            target = os.path.join(snapshot["install_prefix"], WRAPPER_PATHS[args.value])
            if os.path.exists(target):
                os.unlink(target)
        if args.kind == "version":
            render_version_files(snapshot)
        if args.kind == "shm-full":
            host.sync_shm(snapshot, path)
        if args.kind == "log-level":
            host.sync_log_level(snapshot)
        plog.write_fault_lines(snapshot, args.kind, args.device, args.value, snapshot["faults"][-1]["since"])
        res.o("fault set: %s%s%s" % (args.kind, "" if args.device is None else " device %d" % args.device,
                                     "" if args.value in (None, "") else " value %s" % args.value))
        return
    # clear
    with statefile.transaction(path) as data:
        removed = [f for f in data["faults"] if (not args.kind or f["kind"] == args.kind)
                   and (args.device is None or f.get("device") == args.device)]
        if any(f["kind"] == "switch-pfc-priority" for f in removed):
            _fold_switch_pfc(data, node_mod.now(data))
        data["faults"] = [f for f in data["faults"] if f not in removed]
        when = node_mod.now(data)
        if any(f["kind"] == "link-stuck-down" for f in removed):
            for npu in data["npus"]:
                if npu.get("net") is None:
                    continue
                link = npu["net"]["link"]
                if link.get("stuck") and (args.device is None or npu["id"] == args.device):
                    link["stuck"] = False
                    link["down_until"] = None
                    link["events"].append([when, "UP"])
        snapshot = statefile.deep_copy(data)
    for fault in removed:
        if fault["kind"] == "missing-tool" and snapshot.get("install_prefix"):
            client = client_path(build=False) if snapshot.get("served_wrappers", True) else None
            write_wrapper(snapshot["install_prefix"], fault["value"], snapshot.get("python") or default_python(), client)
    if any(f["kind"] == "version" for f in removed):
        render_version_files(snapshot)
    if any(f["kind"] == "shm-full" for f in removed):
        host.sync_shm(snapshot, path)
    if any(f["kind"] == "log-level" for f in removed):
        host.sync_log_level(snapshot)
    res.o("fault cleared: %d" % len(removed))


# Port settings without a key in /etc/hccn.conf: a reboot (driver reload) brings them back at the driver defaults.
REBOOT_PORT_DEFAULTS = ("mtu", "pfc", "dscp_to_tc", "tls")


def reboot_node(data, path):
    """What a reboot of the node does to the state ``data`` (the caller holds its lock): every RoCE port back at the
    driver defaults of ports.new_port (MTU, PFC, DSCP -> TC, the TLS switch), its address, netmask, netdetect and
    gateway as the node's hccn.conf holds them (none for a key the file lacks), its link DOWN and UP again after
    ``settings.flap_seconds``; the CPU governor back at node.DEFAULT_GOVERNOR (a cpupower setting is not kept); no
    NPU process left. The host section, the files, the counters and the faults stay. Returns (ports, processes ended,
    whether hccn.conf was read)."""
    from . import hccn  # pylint: disable=import-outside-toplevel
    when = node_mod.now(data)
    conf = hccnconf.read(path)
    ports_reset = 0
    ended = 0
    for npu in data["npus"]:
        ended += len(npu.get("processes") or [])
        npu["processes"] = []
        net = npu.get("net")
        if net is None:
            continue
        dev = npu["id"]
        fresh = ports.new_port(int(data.get("index", 0)), dev, when)
        # the pauses counted so far stay in the stored counters (model.fold_pfc_counters), as a PFC set keeps them
        model.fold_pfc_counters(data, dev, fresh["pfc"], when)
        net["mtu"] = fresh["mtu"]
        net["pfc"] = fresh["pfc"]
        net["pfc_since"] = fresh["pfc_since"]
        net["dscp_to_tc"] = fresh["dscp_to_tc"]
        net["tls"]["enable"] = fresh["tls"]["enable"]
        kept = conf.get(dev, {}) if conf is not None else hccnconf.persisted(net)
        net["persisted"] = dict(kept)
        for key, field in hccnconf.KEYS:
            net[field] = kept.get(key)  # None: the driver has no such value (what a fresh node without it has)
        hccn._flap(data, dev)  # pylint: disable=protected-access
        ports_reset += 1
    data["governor"] = node_mod.DEFAULT_GOVERNOR
    if conf is None:
        hccnconf.write(path, data)  # a state never initialised through init: its file from now on
    return ports_reset, ended, conf is not None


def cmd_reboot(args, path, res):
    with statefile.transaction(path) as data:
        ports_reset, ended, _read = reboot_node(data, path)
        hostname = data.get("hostname")
        governor = data["governor"]
        flap = float(data.get("settings", {}).get("flap_seconds", 5.0))
    if ports_reset:
        ports_text = "%d ports back at driver defaults (%s), addresses from hccn.conf, links up after %gs" % (
            ports_reset, ", ".join(REBOOT_PORT_DEFAULTS), flap)
    else:
        ports_text = "no RoCE ports"
    ended_text = ", %d NPU processes ended" % ended if ended else ""
    res.o("rebooted %s: %s, governor %s%s" % (hostname, ports_text, governor, ended_text))


def _parse_value(text):
    try:
        return json.loads(text)
    except ValueError:
        return text


def cmd_state(args, path, res):
    if args.action == "show":
        res.o(json.dumps(statefile.load(path), indent=1))
        return
    if args.action == "effective":
        res.o(json.dumps(model.effective(statefile.load(path)), indent=1))
        return
    if not args.key:
        raise ControlError("state %s needs KEY" % args.action)
    if args.action == "get":
        try:
            res.o(json.dumps(statefile.get_path(statefile.load(path), args.key)))
        except (KeyError, IndexError, ValueError):
            raise ControlError("no key %s in the state" % args.key) from None
        return
    if args.value is None:
        raise ControlError("state set needs KEY VALUE")
    value = _parse_value(args.value)
    _check_host_value(args.key, value)
    with statefile.transaction(path) as data:
        try:
            statefile.set_path(data, args.key, value)
        except (KeyError, IndexError, ValueError, TypeError):
            raise ControlError("cannot set %s" % args.key) from None
        if args.key.split(".")[0] == "npus":
            hccnconf.write(path, data)  # npus.N.net.persisted is what the node's hccn.conf holds
        snapshot = statefile.deep_copy(data)
    if args.key.startswith("versions") or args.key == "arch":
        render_version_files(snapshot)
    if args.key.split(".")[0] in ("host", "numa"):
        render_host_files(snapshot)
    res.o("set %s" % args.key)


HOST_INT_KEYS = ("hugepages_total", "hugepages_free", "hugepage_size_kb", "swappiness", "swap_total_kb", "shm_size_mb")


def _check_host_value(key, value):
    """Values of the ``host`` section must render as the kernel would show them."""
    parts = key.split(".")
    if parts == ["host"]:
        if not isinstance(value, dict):
            raise ControlError("host must be a JSON object")
        for name, item in value.items():
            _check_host_value("host." + name, item)
        return
    if parts[0] != "host" or len(parts) != 2:
        return
    if parts[1] == "transparent_hugepage" and value not in node_mod.THP_MODES:
        raise ControlError("host.transparent_hugepage must be one of %s" % "|".join(node_mod.THP_MODES))
    if parts[1] in HOST_INT_KEYS and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise ControlError("host.%s must be an integer >= 0" % parts[1])
    if parts[1] == "swappiness" and value > 200:
        raise ControlError("host.swappiness must be 0-200 (the kernel's range)")
    if parts[1] == "shm_size_mb" and value < 1:
        raise ControlError("host.shm_size_mb must be 1 or more (MB of the node's /dev/shm tmpfs)")
    if parts[1] == "iowait_pct" and (isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 100):
        raise ControlError("host.iowait_pct must be a number 0-100 (percent of CPU time waiting for IO)")


def cpu_totals(lines):
    """The CPU the logged calls used, from their ``cpu_s`` and ``start_cpu_s`` fields (seconds of user+sys per call,
    written by npu_sim.__main__.log_call): {"calls", "measured" (the calls whose entry has cpu_s; entries written
    before the field existed have none), "cpu_s", "start_cpu_s" (the part spent before the simulator's code ran:
    the wrapper's sh and the interpreter's start-up), "cpu_ms_per_call"}. The CPU of a call after its line is
    written (printing the output, the process's exit) is not in it: about 0.2 ms per call through the installed
    wrappers on the machine of docs/simulator-cost.md (more under ``python -m``, which finalizes the interpreter)."""
    entries = [json.loads(line) for line in lines]
    measured = [entry for entry in entries if "cpu_s" in entry]
    cpu = sum(float(entry["cpu_s"]) for entry in measured)
    start = sum(float(entry.get("start_cpu_s") or 0.0) for entry in measured)
    return {"calls": len(entries), "measured": len(measured), "cpu_s": round(cpu, 6), "start_cpu_s": round(start, 6),
            "cpu_ms_per_call": round(1000.0 * cpu / len(measured), 3) if measured else None}


def cmd_calls(args, path, res):
    log = statefile.calls_path(path)
    if args.clear:
        with open(log, "w", encoding="utf-8"):
            pass
        res.o("call log cleared")
        return
    lines = []
    if os.path.exists(log):
        with open(log, encoding="utf-8") as handle:
            lines = [line.rstrip("\n") for line in handle if line.strip()]
    if args.tool:
        lines = [line for line in lines if json.loads(line).get("tool") == args.tool]
    if args.cpu:
        res.o(json.dumps(cpu_totals(lines), indent=1))
        return
    if args.count:
        res.o(str(len(lines)))
        return
    for line in lines:
        res.o(line)


def _pod(path):
    st = statefile.load(path)
    return st, [node for _path, node in statefile.pod_states(st, path)]


def _require_ports(states):
    """The training models (train, allreduce, busbw) run over the RoCE ports of the nodes."""
    for node in states:
        if any(npu.get("net") is None for npu in node["npus"]):
            raise ControlError("%s (%s) has no RoCE parameter plane: the simulator models training and collective "
                               "communication only on nodes with RoCE ports" % (node.get("hostname"), node.get("product")))


def cmd_train(args, path, res):
    st, states = _pod(path)
    _require_ports(states)
    if args.nodes:
        states = states[:args.nodes]
    if args.npus is not None and not 1 <= args.npus <= len(st["npus"]):
        raise ControlError("--npus must be 1-%d, the NPUs of %s (got %d)" % (len(st["npus"]), st.get("hostname"), args.npus))
    # a rank of a launched job (LOCAL_RANK set: npu-launch, torchrun) says which NPU and binding it runs with; only
    # the job's last rank prints the iteration lines, as MindSpeed does
    said = perf.rank_line(st, os.environ)
    if said:
        res.e(said)
    if not perf.prints_log(os.environ):
        return
    # The clock of the state (settings.clock pins it) dates the lines: same state + seed, same output.
    shift = 0.0
    if args.seed is None and perf.noise_shift(st, 0):
        # count the runs under the noise fault (only then is the state written) to shift each one
        with statefile.transaction(path) as data:
            runs = int(data["settings"].get("noisy_runs", 0))
            data["settings"]["noisy_runs"] = runs + 1
        shift = perf.noise_shift(st, runs)
    for line in perf.train_lines(states, st, steps=args.steps, seed=args.seed, log_interval=args.log_interval,
                                 start=node_mod.now(st), run_shift=shift, npus=args.npus):
        res.o(line)


def cmd_allreduce(args, path, res):
    st, states = _pod(path)
    _require_ports(states)
    nodes = args.nodes or len(states)
    for line in perf.allreduce_lines(states[:nodes] if nodes <= len(states) else states, nodes, args.b, args.e, args.f,
                                     npus_per_node=args.p or len(st["npus"])):
        res.o(line)


def cmd_busbw(args, path, res):
    st, states = _pod(path)
    _require_ports(states)
    reasons = perf.roce_check(states)
    # slow-port/slow-node faults only slow a run over more than one node
    slowed_by = perf.slow_culprits(states) if len(states) > 1 else []
    res.o(json.dumps({"nodes": len(states), "intra_busbw_gbs": round(perf.intra_busbw(states), 2),
                      "devices_held": perf.devices_held(states),
                      "inter_busbw_gbs": round(perf.inter_busbw(states), 2), "lossless": not reasons,
                      "reasons": reasons, "slow_factor": perf.slow_factor(states), "slowed_by": slowed_by,
                      "step_time_ms": round(perf.step_time_ms(states, st), 1)}, indent=1))


def cmd_shm(args, path, res):
    """``npu-sim shm sync``: make the node's /dev/shm match the shm-full fault (podctl runs it when a node starts)."""
    res.o(host.sync_shm(statefile.load(path), path))


def build_parser():
    parser = _Parser(prog="npu-sim", description="Control the Ascend tool simulator of one node.")
    parser.add_argument("--state", help="state file (default $NPU_SIM_STATE or %s)" % statefile.DEFAULT_STATE_PATH)
    sub = parser.add_subparsers(dest="command")

    init = sub.add_parser("init", help="write a fresh, untuned node state")
    init.add_argument("--state", dest="state_sub")
    init.add_argument("--hostname", required=True)
    init.add_argument("--index", type=int, required=True)
    init.add_argument("--npus", type=int, help="NPUs (cards) of the node (default: all of the product's)")
    init.add_argument("--product", choices=tuple(node_mod.PRODUCTS), default=node_mod.DEFAULT_PRODUCT,
                      help="product profile: %s (default %%(default)s)" % ", ".join(
                          "%s = %s" % (key, spec["name"]) for key, spec in node_mod.PRODUCTS.items()))
    init.add_argument("--pod-dir")
    init.add_argument("--force", action="store_true")

    inst = sub.add_parser("install", help="write wrappers and version files under a prefix")
    inst.add_argument("--state", dest="state_sub")
    inst.add_argument("--prefix", required=True)
    inst.add_argument("--python")
    inst.add_argument("--no-server", dest="server", action="store_false",
                      help="wrappers that always run their own interpreter (no thin client for the node's server)")

    fault = sub.add_parser("fault", help="inject, clear or list faults")
    fault.add_argument("action", choices=("set", "clear", "list"))
    fault.add_argument("kind", nargs="?", help="one of: %s" % ", ".join(FAULT_KINDS))
    fault.add_argument("--device", type=int)
    value_help = ("the fault's value (switch-frame: max frame size 64-16000, default %d; switch-pfc-priority: priority "
                  "0-7, default %d; switch-no-ecn: none)" % (model.SWITCH_FRAME_DEFAULT, model.SWITCH_PFC_PRIORITY_DEFAULT))
    fault.add_argument("--value", help=value_help)
    fault.add_argument("--tool", help="limit busy/hang to one tool (hccn_tool or npu-smi)")
    fault.add_argument("--state", dest="state_sub")

    stc = sub.add_parser("state", help="show, get or set state values")
    stc.add_argument("action", choices=("show", "get", "set", "effective"))
    stc.add_argument("key", nargs="?")
    stc.add_argument("value", nargs="?")
    stc.add_argument("--state", dest="state_sub")

    calls = sub.add_parser("calls", help="print, count or clear the call log, or sum the CPU time of the calls")
    calls.add_argument("--clear", action="store_true")
    calls.add_argument("--count", action="store_true")
    calls.add_argument("--cpu", action="store_true",
                       help="print the CPU time (user+sys) the logged calls used, as JSON (see docs/simulator-cost.md)")
    calls.add_argument("--tool")
    calls.add_argument("--state", dest="state_sub")

    train = sub.add_parser("train", help="print modelled MindSpeed iteration lines")
    train.add_argument("--steps", type=int, default=20)
    train.add_argument("--seed", type=int, help="same lines for the same seed and state (default: new each run)")
    train.add_argument("--log-interval", type=int, default=1)
    train.add_argument("--nodes", type=int)
    train.add_argument("--npus", type=int, help="NPUs per node the job runs on, the first of ASCEND_RT_VISIBLE_DEVICES "
                       "(torchrun's --nproc_per_node; default: the whole node)")
    train.add_argument("--state", dest="state_sub")

    allr = sub.add_parser("allreduce", help="print a modelled hccl_test all_reduce_test table")
    allr.add_argument("--nodes", type=int)
    allr.add_argument("-b", default="8K")
    allr.add_argument("-e", default="1G")
    allr.add_argument("-f", type=int, default=2)
    allr.add_argument("-p", type=int, help="NPUs per node (default: all of the node)")
    allr.add_argument("--state", dest="state_sub")

    busbw = sub.add_parser("busbw", help="print the model's busbw and why RoCE is (not) lossless")
    busbw.add_argument("--state", dest="state_sub")

    reboot = sub.add_parser("reboot", help="reboot the node: port settings not in hccn.conf back at the driver "
                            "defaults, addresses from hccn.conf, links flap, governor %s" % node_mod.DEFAULT_GOVERNOR)
    reboot.add_argument("--state", dest="state_sub")

    shm = sub.add_parser("shm", help="fill or empty the node's /dev/shm as the shm-full fault says")
    shm.add_argument("action", choices=("sync",))
    shm.add_argument("--state", dest="state_sub")
    return parser


COMMANDS = {"init": cmd_init, "install": cmd_install, "fault": cmd_fault, "state": cmd_state, "calls": cmd_calls,
            "train": cmd_train, "allreduce": cmd_allreduce, "busbw": cmd_busbw, "shm": cmd_shm,
            "reboot": cmd_reboot}


def run(argv):
    res = Result()
    try:
        args = build_parser().parse_args(list(argv))
        if not args.command:
            raise ControlError("usage: npu-sim {%s} ..." % ",".join(COMMANDS))
        path = statefile.state_path(getattr(args, "state_sub", None) or args.state)
        COMMANDS[args.command](args, path, res)
    except (ControlError, statefile.StateError) as exc:
        res.out = []
        res.e("npu-sim: %s" % exc)
        res.fail(2 if isinstance(exc, ControlError) else 1)
    return res
