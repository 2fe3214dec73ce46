"""Host shims of an Atlas 800T A2 (4 x Kunpeng 920 5250, 192 CPUs, 8 NUMA nodes of 24):
``numactl`` (-H and as a launcher), ``lscpu`` and ``cpupower`` (frequency-info / frequency-set).
"""

import os

from . import state as st_mod
from .output import Result

LSCPU_FLAGS = "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm jscvt fcma dcpop asimddp asimdfhm ssbs"
LSCPU_VULNS = (
    ("Itlb multihit", "Not affected"), ("L1tf", "Not affected"), ("Mds", "Not affected"),
    ("Meltdown", "Not affected"), ("Spec store bypass", "Mitigation; Speculative Store Bypass disabled via prctl"),
    ("Spectre v1", "Mitigation; __user pointer sanitization"), ("Spectre v2", "Not affected"),
    ("Srbds", "Not affected"), ("Tsx async abort", "Not affected"),
)


def _cpus(st):
    return st["numa"]["sockets"] * st["numa"]["cores_per_socket"]


def render_numactl_hardware(st):
    numa = st["numa"]
    per_node = numa["cpus_per_node"]
    nodes = numa["nodes"]
    lines = ["available: %d nodes (0-%d)" % (len(nodes), len(nodes) - 1)]
    for node in nodes:
        first = node["id"] * per_node
        lines.append("node %d cpus: %s" % (node["id"], " ".join(str(cpu) for cpu in range(first, first + per_node))))
        lines.append("node %d size: %d MB" % (node["id"], node["size_mb"]))
        lines.append("node %d free: %d MB" % (node["id"], node["free_mb"]))
    lines.append("node distances:")
    lines.append("node " + "".join("% 3d " % node["id"] for node in nodes))
    for node, row in zip(nodes, numa["distances"]):
        lines.append("% 3d: " % node["id"] + "".join("% 3d " % dist for dist in row))
    return lines


def render_lscpu(st):
    """util-linux 2.37+ layout of the openEuler 22.03 capture (Atlas 800I A2)."""
    numa = st["numa"]
    cpu = st["cpu"]
    total = _cpus(st)
    cores = numa["cores_per_socket"]
    rows = [
        ("Architecture:", st.get("arch", "aarch64")), ("  CPU op-mode(s):", "64-bit"), ("  Byte Order:", "Little Endian"),
        ("CPU(s):", str(total)), ("  On-line CPU(s) list:", "0-%d" % (total - 1)),
        ("Vendor ID:", "HiSilicon"), ("  BIOS Vendor ID:", "HiSilicon"), ("  Model name:", cpu["model"]),
        ("    BIOS Model name:", cpu["bios_model"]), ("    Model:", "0"), ("    Thread(s) per core:", "1"),
        ("    Core(s) per socket:", str(cores)), ("    Socket(s):", str(numa["sockets"])), ("    Stepping:", "0x1"),
        ("    Frequency boost:", "disabled"), ("    CPU max MHz:", "%.4f" % cpu["max_mhz"]),
        ("    CPU min MHz:", "%.4f" % cpu["min_mhz"]), ("    BogoMIPS:", "200.00"), ("    Flags:", LSCPU_FLAGS),
        ("Caches (sum of all):", ""),
        ("  L1d:", "%d MiB (%d instances)" % (total // 16, total)),
        ("  L1i:", "%d MiB (%d instances)" % (total // 16, total)),
        ("  L2:", "%d MiB (%d instances)" % (total // 2, total)),
        ("  L3:", "%d MiB (%d instances)" % (total, len(numa["nodes"]))),
        ("NUMA:", ""), ("  NUMA node(s):", str(len(numa["nodes"]))),
    ]
    for node in numa["nodes"]:
        rows.append(("  NUMA node%d CPU(s):" % node["id"], st_mod.cpu_range(node["id"], numa["cpus_per_node"])))
    rows.append(("Vulnerabilities:", ""))
    rows += [("  %s:" % name, value) for name, value in LSCPU_VULNS]
    return ["%-24s%s" % (label, value) for label, value in rows]


def lscpu(argv, path):
    res = Result()
    st = st_mod.load(path)
    for line in render_lscpu(st):
        res.o(line)
    return res


def _node_arg(text, count):
    nodes = []
    for part in str(text).split(","):
        if "-" in part:
            low, high = part.split("-", 1)
            nodes.extend(range(int(low), int(high) + 1))
        else:
            nodes.append(int(part))
    for node in nodes:
        if not 0 <= node < count:
            raise ValueError(node)
    return nodes


def numactl(argv, path, launch=True):
    """``numactl -H`` prints the layout; ``numactl -N n -m n [--] cmd ...`` execs cmd with the binding
    recorded in NPU_SIM_NUMA_NODE / NPU_SIM_MEM_NODE (read by the performance model)."""
    res = Result()
    st = st_mod.load(path)
    count = len(st["numa"]["nodes"])
    words = list(argv)
    if not words:
        res.e("usage: numactl [--all | -a] [--interleave= | -i <nodes>] [--preferred= | -p <node>]")
        return res.fail(1)
    if words[0] in ("-H", "--hardware"):
        for line in render_numactl_hardware(st):
            res.o(line)
        return res
    env = {}
    pos = 0
    while pos < len(words):
        word = words[pos]
        if word == "--":
            pos += 1
            break
        if not word.startswith("-"):
            break
        key, value = word, None
        if word.startswith("--") and "=" in word:
            key, value = word.split("=", 1)
        elif word in ("-N", "-m", "-C", "-p", "-i", "--cpunodebind", "--membind", "--physcpubind", "--preferred", "--interleave"):
            if pos + 1 >= len(words):
                res.e("numactl: option requires an argument -- '%s'" % word.lstrip("-"))
                return res.fail(1)
            value = words[pos + 1]
            pos += 1
        elif word in ("-l", "--localalloc"):
            env["NPU_SIM_MEM_NODE"] = "local"
            pos += 1
            continue
        else:
            res.e("numactl: unrecognized option '%s'" % word)
            return res.fail(1)
        pos += 1
        try:
            if key in ("-N", "--cpunodebind"):
                env["NPU_SIM_NUMA_NODE"] = ",".join(str(n) for n in _node_arg(value, count))
            elif key in ("-m", "--membind", "-p", "--preferred", "-i", "--interleave"):
                env["NPU_SIM_MEM_NODE"] = ",".join(str(n) for n in _node_arg(value, count))
            elif key in ("-C", "--physcpubind"):
                env["NPU_SIM_CPUS"] = value
        except ValueError:
            res.e("libnuma: Warning: node argument %s is out of range" % value)
            res.e("<%s> is invalid" % value)
            return res.fail(1)
    command = words[pos:]
    if not command:
        res.e("numactl: no command given")
        return res.fail(1)
    if launch:
        environ = dict(os.environ)
        environ.update(env)
        try:
            os.execvpe(command[0], command, environ)
        except OSError as exc:
            res.e("numactl: execution of `%s': %s" % (command[0], exc.strerror))
            return res.fail(1)
    res.exec_env = env
    res.exec_argv = command
    return res


def _ghz(mhz):
    return "%d MHz" % mhz if mhz < 1000 else "%.2f GHz" % (mhz / 1000.0)


def cpupower(argv, path):
    """cpupower frequency-info / frequency-set -g GOV. Format follows cpupower (kernel tools/power/cpupower);
    no capture from an Atlas host exists (source-derived)."""
    res = Result()
    words = list(argv)
    cpu_arg = None
    while words[:1] == ["-c"] or (words and words[0].startswith("--cpu")):
        if "=" in words[0]:
            cpu_arg, words = words[0].split("=", 1)[1], words[1:]
        else:
            cpu_arg, words = (words[1] if len(words) > 1 else ""), words[2:]
    if not words or words[0] not in ("frequency-info", "frequency-set"):
        res.e("Usage:\tcpupower [-d|--debug] [-c|--cpu cpulist ] <command> [<args>]")
        return res.fail(1)
    st = st_mod.load(path)
    cpu = st["cpu"]
    total = _cpus(st)
    # cpupower's defaults: info commands look at CPU 0, frequency-set works on every CPU.
    # The simulator keeps one governor for the whole node (all CPUs share one policy here).
    chosen = _cpu_selection(cpu_arg, total, [0] if words[0] == "frequency-info" else list(range(total)))
    if chosen is None:
        res.e("invalid or unknown argument")
        return res.fail(1)
    if words[0] == "frequency-info":
        policy = ["  current policy: frequency should be within %s and %s." % (_ghz(cpu["min_mhz"]), _ghz(cpu["max_mhz"])),
                  '                  The governor "%s" may decide which speed to use' % st["governor"],
                  "                  within this range."]
        if "-p" in words or "--policy" in words:
            for cpu_id in chosen:
                res.o("analyzing CPU %d:" % cpu_id)
                for line in policy:
                    res.o(line)
            return res
        res.o("analyzing CPU %d:" % chosen[0])
        res.o("  driver: cppc_cpufreq")
        res.o("  CPUs which run at the same hardware frequency: 0")
        res.o("  CPUs which need to have their frequency coordinated by software: 0")
        res.o("  maximum transition latency:  Cannot determine or is not supported.")
        res.o("  hardware limits: %s - %s" % (_ghz(cpu["min_mhz"]), _ghz(cpu["max_mhz"])))
        res.o("  available cpufreq governors: %s" % " ".join(st_mod.GOVERNORS))
        for line in policy:
            res.o(line)
        current = cpu["max_mhz"] if st["governor"] == "performance" else 2000
        res.o("  current CPU frequency: Unable to call hardware")
        res.o("  current CPU frequency: %s (asserted by call to kernel)" % _ghz(current))
        return res
    governor = None
    if "-g" in words and words.index("-g") + 1 < len(words):
        governor = words[words.index("-g") + 1]
    for word in words:
        if word.startswith("--governor="):
            governor = word.split("=", 1)[1]
    euid = os.environ.get("NPU_SIM_EUID")
    euid = int(euid) if euid not in (None, "") else os.geteuid()
    if governor is None or governor not in st_mod.GOVERNORS or euid != 0:
        res.e("Error setting new values. Common errors:")
        res.e("- Do you have proper administration rights? (super-user?)")
        res.e("- Is the governor you requested available and modprobed?")
        res.e("- Trying to set an invalid policy?")
        res.e("- Trying to set a specific frequency, but userspace governor is not available,")
        res.e("   for example because of hardware which cannot be set to a specific frequency")
        res.e("   or because the userspace governor isn't loaded?")
        return res.fail(237)
    with st_mod.transaction(path) as data:
        data["governor"] = governor
    for cpu_id in chosen:
        res.o("Setting cpu: %d" % cpu_id)
    return res


def _cpu_selection(arg, total, default):
    """CPU ids of a cpupower -c argument ('all', '0-3,8'); None when it names no valid CPU."""
    if arg is None:
        return default
    if arg == "all":
        return list(range(total))
    chosen = []
    for part in arg.split(","):
        lo, _sep, hi = part.partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()):
            return None
        first, last = int(lo), int(hi or lo)
        if first > last or last >= total:
            return None
        chosen.extend(range(first, last + 1))
    return sorted(set(chosen))
