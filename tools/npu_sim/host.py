"""Host shims of an Atlas 800T A2 (4 x Kunpeng 920 5250, 192 CPUs, 8 NUMA nodes of 24):
``numactl`` (-H and as a launcher), ``lscpu`` and ``cpupower`` (frequency-info / frequency-set).
"""

import os

from . import faults as faults_mod
from . import node as node_mod
from . import statefile
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
        rows.append(("  NUMA node%d CPU(s):" % node["id"], node_mod.cpu_range(node["id"], numa["cpus_per_node"])))
    rows.append(("Vulnerabilities:", ""))
    rows += [("  %s:" % name, value) for name, value in LSCPU_VULNS]
    return ["%-24s%s" % (label, value) for label, value in rows]


def lscpu(argv, path):
    res = Result()
    st = statefile.load(path)
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


def numactl_tool(argv, path):
    """numactl as a dispatched tool: the command it would launch is not executed in-process."""
    return numactl(argv, path, launch=False)


def numactl(argv, path, launch=True):
    """``numactl -H`` prints the layout; ``numactl -N n -m n [--] cmd ...`` execs cmd with the binding
    recorded in NPU_SIM_NUMA_NODE / NPU_SIM_MEM_NODE (read by the performance model)."""
    res = Result()
    st = statefile.load(path)
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
    st = statefile.load(path)
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
        res.o("  available cpufreq governors: %s" % " ".join(node_mod.GOVERNORS))
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
    if governor is None or governor not in node_mod.GOVERNORS or euid != 0:
        res.e("Error setting new values. Common errors:")
        res.e("- Do you have proper administration rights? (super-user?)")
        res.e("- Is the governor you requested available and modprobed?")
        res.e("- Trying to set an invalid policy?")
        res.e("- Trying to set a specific frequency, but userspace governor is not available,")
        res.e("   for example because of hardware which cannot be set to a specific frequency")
        res.e("   or because the userspace governor isn't loaded?")
        return res.fail(237)
    with statefile.transaction(path) as data:
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


# ---------------------------------------------------------------------------------------------
# lspci: the node's NPUs as pciutils prints them (tests/fixtures/captures/lspci_ascend.txt).

LSPCI_VENDOR_NAME = "Huawei Technologies Co., Ltd."
# pci.ids has no name for 19e5:d802 (the captures print "Device d802"); class 12 subclass 00.
LSPCI_CLASS_NAMES = {"1200": "Processing accelerators"}
LSPCI_USAGE = "Usage: lspci [<switches>]"
LSPCI_SIMULATED = ("-D", "-n", "-d", "-s", "-i")


class LspciError(Exception):
    pass


def _hex_id(text):
    return "%04x" % int(str(text), 16)


def pci_functions(st):
    """(domain, bus, dev, func, vendor, device, class, rev) of every NPU lspci shows, sorted as lspci sorts."""
    hidden = set()
    for fault in st.get("faults", []):
        if fault.get("kind") == "pcie-missing":
            if fault.get("device") is None:
                hidden.update(npu["id"] for npu in st["npus"])
            else:
                hidden.add(int(fault["device"]))
    found = []
    for npu in st["npus"]:
        if npu["id"] in hidden:
            continue
        domain, bus, rest = npu["bus_id"].lower().split(":")
        dev, func = rest.split(".")
        pci = npu.get("pci") or {"class": "1200", "revision": "20"}
        found.append((int(domain, 16), int(bus, 16), int(dev, 16), int(func, 16),
                      _hex_id(npu["board"]["pci_vendor_id"]), _hex_id(npu["board"]["pci_device_id"]),
                      pci["class"], pci["revision"]))
    # the two chips of an Atlas 300I Duo card share the card's PCIe function (npu-smi shows one bus id for both)
    return sorted(set(found))


def _lspci_id_filter(text):
    """-d [<vendor>]:[<device>][:<class>] -> (vendor, device, class), None = any (pciutils' messages)."""
    fields = text.split(":")
    if len(fields) < 2:
        raise LspciError("-d: At least two fields must be given")
    if len(fields) > 3:
        raise LspciError("-d: Too many fields")
    names = ("vendor ID", "device ID", "class code")
    result = []
    for name, field in zip(names, fields):
        if field in ("", "*"):
            result.append(None)
            continue
        try:
            value = int(field, 16)
        except ValueError:
            raise LspciError("-d: Invalid %s" % name) from None
        if value > 0xFFFF:
            raise LspciError("-d: Invalid %s" % name)
        result.append("%04x" % value)
    while len(result) < 3:
        result.append(None)
    return tuple(result)


def _lspci_slot_filter(text):
    """-s [[[[<domain>]:]<bus>]:][<slot>][.[<func>]] -> (domain, bus, slot, func), None = any."""
    head, _dot, func = text.partition(".")
    parts = head.split(":")
    if len(parts) > 3:
        raise LspciError("-s: Too many fields")
    parts = [None] * (3 - len(parts)) + parts
    limits = (("domain number", 0xFFFFFFFF), ("bus number", 0xFF), ("slot number", 0x1F))
    result = []
    for (name, limit), field in zip(limits, parts):
        if field in (None, "", "*"):
            result.append(None)
            continue
        try:
            value = int(field, 16)
        except ValueError:
            raise LspciError("-s: Invalid %s" % name) from None
        if value > limit:
            raise LspciError("-s: Invalid %s" % name)
        result.append(value)
    if func in ("", "*"):
        result.append(None)
    else:
        try:
            value = int(func, 16)
        except ValueError:
            raise LspciError("-s: Invalid function number") from None
        if value > 7:
            raise LspciError("-s: Invalid function number")
        result.append(value)
    return tuple(result)


def _lspci_line(fn, numeric, domain):
    dom, bus, dev, func, vendor, device, klass, rev = fn
    slot = "%02x:%02x.%d" % (bus, dev, func)
    if domain:
        slot = "%04x:%s" % (dom, slot)
    if numeric == 1:
        return "%s %s: %s:%s (rev %s)" % (slot, klass, vendor, device, rev)
    class_name = LSPCI_CLASS_NAMES.get(klass, "Class %s" % klass)
    if numeric >= 2:
        # pciutils -nn: a device without a pci.ids name is printed "Device [vvvv:dddd]".
        return "%s %s [%s]: %s Device [%s:%s] (rev %s)" % (slot, class_name, klass, LSPCI_VENDOR_NAME, vendor, device, rev)
    return "%s %s: %s Device %s (rev %s)" % (slot, class_name, LSPCI_VENDOR_NAME, device, rev)


def lspci(argv, path):
    """``lspci [-D] [-n|-nn] [-d V:D[:C]] [-s SLOT]``: one line per NPU of the node (no other devices are
    modelled). The ``pcie-missing`` fault hides an NPU here and nowhere else."""
    res = Result()
    numeric, domain, ids, slot = 0, False, None, None
    words = list(argv)
    pos = 0
    try:
        while pos < len(words):
            word = words[pos]
            if not word.startswith("-") or word == "-":
                raise LspciError(None)
            letters = word[1:]
            pos += 1
            while letters:
                letter, letters = letters[0], letters[1:]
                if letter == "n":
                    numeric += 1
                elif letter == "D":
                    domain = True
                elif letter in "dsi":
                    value = letters or (words[pos] if pos < len(words) else None)
                    if value is None:
                        res.e("lspci: option requires an argument -- '%s'" % letter)
                        raise LspciError(None)
                    if not letters:
                        pos += 1
                    letters = ""
                    if letter == "d":
                        ids = _lspci_id_filter(value)
                    elif letter == "s":
                        slot = _lspci_slot_filter(value)
                elif letter in "vkxbtmPqQAOGHFpM":
                    res.e("lspci: option -%s is not simulated (supported: %s)" % (letter, " ".join(LSPCI_SIMULATED)))
                    return res.fail(1)
                else:
                    res.e("lspci: invalid option -- '%s'" % letter)
                    raise LspciError(None)
    except LspciError as exc:
        if exc.args and exc.args[0]:
            res.e("lspci: %s" % exc.args[0])
        else:
            res.e(LSPCI_USAGE)
        return res.fail(1)
    st = statefile.load(path)
    for fn in pci_functions(st):
        if ids and any(want is not None and want != have for want, have in zip(ids, (fn[4], fn[5], fn[6]))):
            continue
        if slot and any(want is not None and want != have for want, have in zip(slot, fn[:4])):
            continue
        res.o(_lspci_line(fn, numeric, domain))
    return res


# ---------------------------------------------------------------------------------------------
# Host files a health check reads: /proc/meminfo, /proc/sys/vm/swappiness and
# /sys/kernel/mm/transparent_hugepage/enabled, rendered from the node state into
# <prefix>/host/... and bind-mounted over those paths inside a simulated node (podctl).

HOST_FILES = {
    "meminfo": os.path.join("host", "proc", "meminfo"),
    "swappiness": os.path.join("host", "proc", "sys", "vm", "swappiness"),
    "transparent_hugepage": os.path.join("host", "sys", "kernel", "mm", "transparent_hugepage", "enabled"),
}

# Keys and order of a real /proc/meminfo (tests/fixtures/captures/proc_meminfo_swappiness_thp.txt, Linux 6.18)
# without its x86-only DirectMap lines: arm64 kernels print none.
MEMINFO_KEYS = (
    "MemTotal", "MemFree", "MemAvailable", "Buffers", "Cached", "SwapCached", "Active", "Inactive",
    "Active(anon)", "Inactive(anon)", "Active(file)", "Inactive(file)", "Unevictable", "Mlocked",
    "SwapTotal", "SwapFree", "Zswap", "Zswapped", "Dirty", "Writeback", "AnonPages", "Mapped", "Shmem",
    "KReclaimable", "Slab", "SReclaimable", "SUnreclaim", "KernelStack", "PageTables", "SecPageTables",
    "NFS_Unstable", "Bounce", "WritebackTmp", "CommitLimit", "Committed_AS", "VmallocTotal", "VmallocUsed",
    "VmallocChunk", "Percpu", "AnonHugePages", "ShmemHugePages", "ShmemPmdMapped", "FileHugePages",
    "FilePmdMapped", "Balloon", "HugePages_Total", "HugePages_Free", "HugePages_Rsvd", "HugePages_Surp",
    "Hugepagesize", "Hugetlb",
)
MEMINFO_COUNTS = ("HugePages_Total", "HugePages_Free", "HugePages_Rsvd", "HugePages_Surp")
# arm64 with 4 KB pages and 48-bit virtual addresses (the openEuler kernels of Atlas A2 hosts).
ARM64_VMALLOC_TOTAL_KB = 135290159040


def meminfo_values(st):
    """A modelled /proc/meminfo of the node, in kB: MemTotal/MemFree agree with ``numactl -H`` (the sum of the
    NUMA node sizes / free memory); the hugepage pool comes from the ``host`` section; the rest is a
    plausible split of the used memory (page cache, anonymous memory, slab) of a training node."""
    host = node_mod.host_settings(st)
    nodes = st["numa"]["nodes"]
    total = sum(int(node["size_mb"]) for node in nodes) * 1024
    free = sum(int(node["free_mb"]) for node in nodes) * 1024
    size_kb = int(host["hugepage_size_kb"])
    hp_total = max(0, int(host["hugepages_total"]))
    hp_free = max(0, min(int(host["hugepages_free"]), hp_total))
    hugetlb = hp_total * size_kb
    used = max(0, total - free - hugetlb)
    cached = used * 62 // 100
    buffers = used * 2 // 100
    anon = used * 24 // 100
    slab = used * 4 // 100
    sreclaim = slab * 3 // 4
    shmem = used // 200
    swap = int(host.get("swap_total_kb") or 0)
    cpus = st["numa"]["sockets"] * st["numa"]["cores_per_socket"]
    thp = host.get("transparent_hugepage")
    values = {
        "MemTotal": total, "MemFree": free, "MemAvailable": free + cached * 9 // 10 + buffers + sreclaim,
        "Buffers": buffers, "Cached": cached, "SwapCached": 0,
        "Active": anon * 3 // 4 + cached // 2, "Inactive": anon // 4 + cached // 2,
        "Active(anon)": anon * 3 // 4, "Inactive(anon)": anon // 4,
        "Active(file)": cached // 2, "Inactive(file)": cached // 2,
        "Unevictable": 0, "Mlocked": 0, "SwapTotal": swap, "SwapFree": swap, "Zswap": 0, "Zswapped": 0,
        "Dirty": 1204, "Writeback": 0, "AnonPages": anon, "Mapped": cached // 20, "Shmem": shmem,
        "KReclaimable": sreclaim, "Slab": slab, "SReclaimable": sreclaim, "SUnreclaim": slab - sreclaim,
        "KernelStack": cpus * 416, "PageTables": anon // 100, "SecPageTables": 0, "NFS_Unstable": 0,
        "Bounce": 0, "WritebackTmp": 0, "CommitLimit": (total - hugetlb) // 2 + swap,
        "Committed_AS": anon * 13 // 10, "VmallocTotal": ARM64_VMALLOC_TOTAL_KB, "VmallocUsed": 412288,
        "VmallocChunk": 0, "Percpu": cpus * 1024, "AnonHugePages": anon // 2 if thp == "always" else 0,
        "ShmemHugePages": 0, "ShmemPmdMapped": 0, "FileHugePages": 0, "FilePmdMapped": 0, "Balloon": 0,
        "HugePages_Total": hp_total, "HugePages_Free": hp_free, "HugePages_Rsvd": 0, "HugePages_Surp": 0,
        "Hugepagesize": size_kb, "Hugetlb": hugetlb,
    }
    # The kernel prints page counts x 4 (kB of 4 KB pages); the counts of HugePages_* are pages.
    return [(key, values[key] if key in MEMINFO_COUNTS else values[key] - values[key] % 4) for key in MEMINFO_KEYS]


def format_meminfo(pairs):
    """fs/proc/meminfo.c layout: ``%-16s%8lu kB`` (label incl. colon padded to 16), HugePages_* counts ``%-19s%5lu``."""
    lines = []
    for key, value in pairs:
        if key in MEMINFO_COUNTS:
            lines.append("%-19s%5d" % (key + ":", value))
        else:
            lines.append("%-16s%8d kB" % (key + ":", value))
    return lines


def render_meminfo(st):
    return format_meminfo(meminfo_values(st))


def render_swappiness(st):
    return ["%d" % int(node_mod.host_settings(st)["swappiness"])]


def render_thp(st):
    """``always madvise [never]``: the active mode in brackets, as sysfs prints it."""
    mode = node_mod.host_settings(st)["transparent_hugepage"]
    return [" ".join("[%s]" % word if word == mode else word for word in node_mod.THP_MODES)]


HOST_RENDERERS = {"meminfo": render_meminfo, "swappiness": render_swappiness, "transparent_hugepage": render_thp}


def _write_in_place(path, text):
    """Rewrite a file without replacing its inode: a bind mount of it (inside a node) must see the change."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    data = text.encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        os.write(fd, data)
        os.ftruncate(fd, len(data))
    finally:
        os.close(fd)


def write_host_files(st, prefix):
    """Render the three host files under ``prefix/host/`` from the state; returns their paths."""
    written = []
    for name, rel in HOST_FILES.items():
        target = os.path.join(prefix, rel)
        _write_in_place(target, "\n".join(HOST_RENDERERS[name](st)) + "\n")
        written.append(target)
    return written


# ---------------------------------------------------------------------------------------------
# The IO side of the node (stage 8): vmstat and iostat in the layouts of tests/fixtures/captures/vmstat.txt
# (procps-ng 4.0.2) and iostat_-c.txt (sysstat, C locale), with the CPU time waiting for IO from the state
# (host.iowait_pct) or an ``iowait`` fault, and the node's own /dev/shm (a tmpfs of host.shm_size_mb MB that
# podctl mounts in the node's mount namespace; the ``shm-full`` fault fills it with a real file).

IO_DEFAULTS = {"iowait_pct": 0.3, "shm_size_mb": 1024}
IOWAIT_FAULT_DEFAULT = 20.0
SHM_FULL_DEFAULT = 100.0
SHM_FILL_NAME = "npu-sim-shm-full"
SHM_PID_FILE = "namespace.pid"   # beside state.json: the PID of a process in the node's mount namespace (podctl)
VMSTAT_HEADER = ("procs -----------memory---------- ---swap-- -----io---- -system-- ------cpu-----",
                 " r  b   swpd   free   buff  cache   si   so    bi    bo   in   cs us sy id wa st")
VMSTAT_ROW = "%2d %2d %6d %6d %6d %6d %4d %4d %5d %5d %4d %4d %2d %2d %2d %2d %2d"
IOSTAT_CPU_HEADER = "avg-cpu:  %user   %nice %system %iowait  %steal   %idle"
VMSTAT_USAGE = "Usage:\n vmstat [options] [delay [count]]"
IOSTAT_USAGE = "Usage: iostat [ options ] [ <interval> [ <count> ] ]"


def io_settings(st):
    """iowait_pct and shm_size_mb of the ``host`` section, with their defaults."""
    host = node_mod.host_settings(st)
    return dict((key, host.get(key, default) if host.get(key) is not None else default) for key, default in IO_DEFAULTS.items())


def iowait_pct(st):
    """The modelled CPU time waiting for IO, percent: an ``iowait`` fault wins over host.iowait_pct."""
    value = float(io_settings(st)["iowait_pct"])
    for fault in faults_mod.faults_for(st, "iowait"):
        value = max(value, float(fault.get("value") or IOWAIT_FAULT_DEFAULT))
    return min(100.0, max(0.0, value))


def _io_rng(st, when, index):
    import random
    return random.Random("%s:%d:%d" % (st.get("hostname"), int(when), index))


def cpu_split(st, when, index, since_boot=False):
    """(us, sy, wa, idle, nice, steal) percentages of one sample; the since-boot sample is calmer."""
    rng = _io_rng(st, when, index)
    wait = iowait_pct(st)
    if since_boot:
        return 1.8, 0.9, round(wait * 0.8, 2), round(100.0 - 2.7 - wait * 0.8, 2), 0.01, 0.0
    user = round(2.5 + rng.uniform(-0.5, 0.5), 2)
    system = round(1.0 + rng.uniform(-0.2, 0.2), 2)
    wa = round(max(0.0, wait * (1.0 + rng.uniform(-0.1, 0.1))), 2)
    idle = round(max(0.0, 100.0 - user - system - wa), 2)
    return user, system, wa, idle, 0.0, 0.0


def _interval_args(words, usage):
    """[delay [count]] as vmstat/iostat take them -> (delay, count) or a message."""
    numbers = []
    for word in words:
        if not word.isdigit():
            return None, usage
        numbers.append(int(word))
    if len(numbers) > 2:
        return None, usage
    if numbers and numbers[0] < 1:
        return None, usage
    delay = numbers[0] if numbers else None
    count = numbers[1] if len(numbers) > 1 else (None if delay else 1)
    if count is None:
        return None, "npu-sim: %s without COUNT would never end; give a count" % usage.split()[1]
    return (delay or 0, count), None


def _pause(st, delay):
    """Sleep between samples like the real tools, except under a pinned clock (tests)."""
    if delay and st.get("settings", {}).get("clock") is None:
        import time
        time.sleep(delay)


def vmstat(argv, path):
    """``vmstat [delay [count]]``: procps-ng 4.0.2 layout; the first row is the average since boot."""
    res = Result()
    words = list(argv)
    if any(word.startswith("-") for word in words):
        res.e("vmstat: option not simulated (supported: vmstat [delay [count]])")
        res.e(VMSTAT_USAGE)
        return res.fail(1)
    parsed, problem = _interval_args(words, VMSTAT_USAGE)
    if problem:
        res.e(problem)
        return res.fail(1)
    delay, count = parsed
    st = statefile.load(path)
    mem = dict(meminfo_values(st))
    cpus = _cpus(st)
    for line in VMSTAT_HEADER:
        res.o(line)
    start = node_mod.now(st)
    for index in range(count):
        if index:
            _pause(st, delay)
        when = start + index * delay
        user, system, wa, idle, _nice, _steal = cpu_split(st, when, index, since_boot=index == 0)
        rng = _io_rng(st, when, index + 1000)
        wait = iowait_pct(st)
        blocked = int(round(cpus * wait / 100.0 / 4.0))
        wa_i, us_i, sy_i = int(round(wa)), int(round(user)), int(round(system))
        id_i = max(0, 100 - us_i - sy_i - wa_i)
        res.o(VMSTAT_ROW % (1 + rng.randint(0, 2), blocked, 0, mem["MemFree"], mem["Buffers"], mem["Cached"] + mem["SReclaimable"],
                            0, 0, int(40 + wait * 900 + rng.randint(0, 20)), int(120 + rng.randint(0, 60)),
                            int(2400 + rng.randint(0, 400)), int(3900 + rng.randint(0, 600)), us_i, sy_i, id_i, wa_i, 0))
    return res


# iostat -x of sysstat 12 (the layout of tests/unit/fixtures/io/iostat_x_sysstat12.txt, a real capture): the header
# and one row per block device. The node has a system disk and a data disk; the disk-busy fault saturates the data disk.
IOSTAT_X_HEADER = ("Device   r/s   rkB/s  rrqm/s  %rrqm r_await rareq-sz   w/s   wkB/s  wrqm/s  %wrqm w_await wareq-sz   "
                   "f/s f_await  aqu-sz  %util")
IOSTAT_X_ROW = "%-7s %5.1f %7.1f %7.2f %6.2f %7.2f %8.2f %5.1f %7.1f %7.2f %6.2f %7.2f %8.2f %5.2f %7.2f %7.2f %6.2f"
SIM_DISKS = ("nvme0n1", "sda")      # the dataset disk (the one disk-busy saturates), the system disk
DISK_BUSY_DEFAULT = 99.0


def disk_busy_pct(st):
    """%util of the data disk under the ``disk-busy`` fault (None without it)."""
    found = None
    for fault in faults_mod.faults_for(st, "disk-busy"):
        found = min(100.0, max(0.0, float(fault.get("value") or DISK_BUSY_DEFAULT)))
    return found


def disk_rows(st, when, index, since_boot=False):
    """One row of values per simulated disk: a quiet disk, or a saturated data disk (long reads queued) under
    disk-busy."""
    rng = _io_rng(st, when, index + 2000)
    busy = disk_busy_pct(st)
    rows = []
    for disk in SIM_DISKS:
        reads = round(20.0 + rng.uniform(0, 5), 1)
        writes = round(3.0 + rng.uniform(0, 2), 1)
        util = round(0.8 + rng.uniform(0, 1.2), 2)
        r_await, w_await, queue = round(0.15 + rng.uniform(0, 0.1), 2), round(0.5 + rng.uniform(0, 0.3), 2), 0.01
        if disk == SIM_DISKS[0] and busy is not None and not since_boot:
            reads = round(1800.0 + rng.uniform(0, 100), 1)
            util = round(min(100.0, busy + rng.uniform(-0.3, 0.3)), 2)
            r_await = round(45.0 + rng.uniform(0, 10), 2)
            queue = round(reads * r_await / 1000.0, 2)
        rkb = round(reads * 128.0, 1)
        wkb = round(writes * 16.0, 1)
        rows.append(IOSTAT_X_ROW % (disk, reads, rkb, 0.0, 0.0, r_await, round(rkb / reads, 2), writes, wkb, 0.12,
                                    round(100.0 * 0.12 / (writes + 0.12), 2), w_await, round(wkb / writes, 2), 0.5, 0.9,
                                    queue, util))
    return rows


def iostat(argv, path):
    """``iostat -c|-x [-y] [interval [count]]``: sysstat layout in the C locale (date %m/%d/%y); -c the CPU report,
    -x the CPU report and the extended device report of sysstat 12."""
    res = Result()
    words = list(argv)
    skip_first = False
    rest = []
    cpu_only = False
    extended = False
    for word in words:
        if word == "-c":
            cpu_only = True
        elif word == "-x":
            extended = True
        elif word == "-y":
            skip_first = True
        elif word.startswith("-"):
            res.e(IOSTAT_USAGE)
            return res.fail(1)
        else:
            rest.append(word)
    if cpu_only == extended:
        res.e("npu-sim: iostat is simulated with -c (CPU report) or -x (CPU and extended device report)")
        return res.fail(1)
    parsed, problem = _interval_args(rest, IOSTAT_USAGE)
    if problem:
        res.e(problem)
        return res.fail(1)
    delay, count = parsed
    st = statefile.load(path)
    import time
    start = node_mod.now(st)
    date = time.strftime("%m/%d/%y", time.localtime(start))
    res.o("%s %s (%s) \t%s \t_%s_\t(%d CPU)" % (os.uname().sysname, os.uname().release, st.get("hostname"), date,
                                                st.get("arch", "aarch64"), _cpus(st)))
    res.o()
    reports = list(range(1, count + 1)) if skip_first else list(range(count))
    for number, index in enumerate(reports):
        if number or skip_first:
            _pause(st, delay)
        when = start + index * delay
        user, system, wa, idle, nice, steal = cpu_split(st, when, index, since_boot=index == 0)
        res.o(IOSTAT_CPU_HEADER)
        res.o("       " + "".join("%8.2f" % value for value in (user, nice, system, wa, steal, idle)))
        res.o()
        if extended:
            res.o(IOSTAT_X_HEADER)
            for row in disk_rows(st, when, index, since_boot=index == 0):
                res.o(row)
            res.o()
        if number < len(reports) - 1 and not extended:
            res.o()
            res.o()
    return res


def shm_fill_pct(st):
    """Percent of /dev/shm the ``shm-full`` fault fills (None without the fault)."""
    found = None
    for fault in faults_mod.faults_for(st, "shm-full"):
        found = float(fault.get("value") or SHM_FULL_DEFAULT)
    return found


def shm_dir_of_node(st, path):
    """The node's /dev/shm as this process can reach it: /dev/shm inside the node (its hostname), else through
    /proc/PID/root of the process recorded by podctl in ``namespace.pid`` beside the state; None when neither."""
    if os.uname().nodename == st.get("hostname"):
        return "/dev/shm"
    pid_file = os.path.join(os.path.dirname(os.path.abspath(path)), SHM_PID_FILE)
    try:
        with open(pid_file, encoding="utf-8") as handle:
            pid = int(handle.read().strip())
    except (OSError, ValueError):
        return None
    target = "/proc/%d/root/dev/shm" % pid
    return target if os.path.isdir(target) else None


def sync_shm(st, path):
    """Make the node's /dev/shm show the ``shm-full`` fault: a fill file up to the fault's percentage, or none.

    Only a tmpfs of exactly host.shm_size_mb MB is ever touched (never the host's /dev/shm). Returns a sentence."""
    target = shm_dir_of_node(st, path)
    if target is None:
        return "node /dev/shm not reachable from here (the node is not running); the fault is applied when it starts"
    size_mb = int(io_settings(st)["shm_size_mb"])
    stat = os.statvfs(target)
    if stat.f_blocks * stat.f_frsize != size_mb * 1024 * 1024:
        return "%s is not the node's tmpfs of %d MB; left alone" % (target, size_mb)
    fill = os.path.join(target, SHM_FILL_NAME)
    pct = shm_fill_pct(st)
    if pct is None:
        if os.path.exists(fill):
            os.unlink(fill)
        return "%s: fill file removed" % target
    current = os.path.getsize(fill) if os.path.exists(fill) else 0
    used_by_others = (stat.f_blocks - stat.f_bfree) * stat.f_frsize - current
    want = max(0, int(size_mb * 1024 * 1024 * pct / 100.0) - used_by_others)
    chunk = b"\0" * (1024 * 1024)
    try:
        with open(fill, "wb") as handle:
            written = 0
            while written < want:
                step = min(len(chunk), want - written)
                handle.write(chunk[:step])
                written += step
    except OSError:
        pass   # ENOSPC: the tmpfs is full, which is the point
    return "%s: filled to %s %%" % (target, ("%g" % pct))


# ---------------------------------------------------------------------------------------------
# The host network of the node (stage 5): ``ip -j addr show`` in the iproute2 JSON layout of
# tests/unit/fixtures/hccl_env/ip_-d_-j_addr_netplan.txt (without the -d keys). The node's host address is the
# address its sshd answers on (the server address of SSH_CONNECTION), on the service NIC enp189s0f0 of an Atlas 800T
# A2; the ``if-ip-elsewhere`` fault moves it to enp189s0f1.

SERVICE_NICS = ("enp189s0f0", "enp189s0f1")


def _link(index, name, mac, addresses, loopback=False):
    item = {"ifindex": index, "ifname": name,
            "flags": ["LOOPBACK", "UP", "LOWER_UP"] if loopback else ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"],
            "mtu": 65536 if loopback else 1500, "qdisc": "noqueue" if loopback else "mq",
            "operstate": "UNKNOWN" if loopback else "UP", "group": "default", "txqlen": 1000,
            "link_type": "loopback" if loopback else "ether", "address": mac,
            "broadcast": "00:00:00:00:00:00" if loopback else "ff:ff:ff:ff:ff:ff", "addr_info": []}
    for address, prefixlen in addresses:
        entry = {"family": "inet6" if ":" in address else "inet", "local": address, "prefixlen": prefixlen,
                 "scope": "host" if loopback else "global"}
        if ":" not in address:
            entry["label"] = name
        entry.update(valid_life_time=4294967295, preferred_life_time=4294967295)
        item["addr_info"].append(entry)
    return item


def node_address():
    """The address this node's sshd answers on (SSH_CONNECTION: client, client port, server, server port)."""
    words = os.environ.get("SSH_CONNECTION", "").split()
    return words[2] if len(words) == 4 else None


def ip_links(st):
    index = int(st.get("index") or 0)
    address = node_address()
    moved = bool(faults_mod.faults_for(st, "if-ip-elsewhere"))
    links = [_link(1, "lo", "00:00:00:00:00:00", [("127.0.0.1", 8), ("::1", 128)], loopback=True)]
    for number, name in enumerate(SERVICE_NICS):
        holds = address is not None and (number == 1) == moved
        links.append(_link(2 + number, name, "a4:be:2b:%02x:00:%02x" % (index & 0xff, number),
                           [(address, 24)] if holds else []))
    return links


def ip(argv, path):
    """``ip -j addr show`` / ``ip -j addr`` / ``ip -j a``: the node's interfaces as iproute2 prints them (one line)."""
    import json
    res = Result()
    words = list(argv)
    if words[:1] != ["-j"] or words[1:2] not in (["addr"], ["a"], ["address"]) or words[2:] not in ([], ["show"]):
        res.e("npu-sim: only `ip -j addr show` is simulated")
        return res.fail(1)
    st = statefile.load(path)
    res.o(json.dumps(ip_links(st), separators=(",", ":")))
    return res


# ---------------------------------------------------------------------------------------------
# The node's login scripts (stage 5): the ``log-level`` fault writes ASCEND_GLOBAL_LOG_LEVEL into a script of the
# node's own /etc/profile.d (<pod_dir>/<hostname>/profile.d); clearing it removes the script.

LOG_LEVEL_SCRIPT = "npu-sim-ascend-log.sh"
LOG_LEVEL_DEFAULT = "0"


def sync_log_level(st):
    """Make the node's /etc/profile.d match the log-level fault; returns a sentence."""
    pod_dir, hostname = st.get("pod_dir"), st.get("hostname")
    if not pod_dir or not hostname:
        return "no PoD directory: the fault is recorded only"
    directory = os.path.join(pod_dir, hostname, "profile.d")
    if not os.path.isdir(directory) or os.path.islink(directory):
        return "%s is not the node's profile.d; left alone" % directory
    target = os.path.join(directory, LOG_LEVEL_SCRIPT)
    value = None
    for fault in faults_mod.faults_for(st, "log-level"):
        value = str(fault.get("value") if fault.get("value") not in (None, "") else LOG_LEVEL_DEFAULT)
    if value is None:
        if os.path.lexists(target):
            os.unlink(target)
        return "%s removed" % target
    _write_in_place(target, "# written by npu-sim (fault log-level)\nexport ASCEND_GLOBAL_LOG_LEVEL=%s\n" % value)
    return "%s: ASCEND_GLOBAL_LOG_LEVEL=%s" % (target, value)


# ---------------------------------------------------------------------------------------------
# fio (stage 8): one job group with --output-format=json in the fio 3.x JSON layout of
# tests/unit/fixtures/io/fio_json_normal_3.42_libaio_randwrite.txt (the keys io_info reads, with their siblings).
# The data disk reads host.disk_read_mb_s (default 2000 MB/s); under disk-busy it crawls (150 MB/s, long latency).

FIO_VERSION = "fio-3.29"
DISK_READ_DEFAULT_MB_S = 2000.0
DISK_BUSY_READ_MB_S = 150.0


def _fio_size_bytes(text):
    units = {"": 1, "k": 1024, "m": 1024 ** 2, "g": 1024 ** 3}
    text = text.strip().lower()
    unit = text[-1] if text[-1:] in units and not text[-1:].isdigit() else ""
    number = text[:-1] if unit else text
    return int(number) * units[unit] if number.isdigit() else None


def _fio_direction(io_bytes, bw_bytes, iops, runtime_ms, lat_ns):
    total = int(round(iops * runtime_ms / 1000.0))
    return {"io_bytes": io_bytes, "io_kbytes": io_bytes // 1024, "bw_bytes": int(bw_bytes), "bw": int(bw_bytes // 1024),
            "iops": round(iops, 6), "runtime": runtime_ms, "total_ios": total, "short_ios": 0, "drop_ios": 0,
            "slat_ns": {"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0},
            "clat_ns": {"min": int(lat_ns * 0.5), "max": int(lat_ns * 4), "mean": round(lat_ns * 0.99, 6),
                        "stddev": round(lat_ns * 0.2, 6), "N": total,
                        "percentile": {"1.000000": int(lat_ns * 0.6), "50.000000": int(lat_ns),
                                       "99.000000": int(lat_ns * 2.1), "99.900000": int(lat_ns * 3)}},
            "lat_ns": {"min": int(lat_ns * 0.5), "max": int(lat_ns * 4), "mean": round(lat_ns, 6),
                       "stddev": round(lat_ns * 0.2, 6), "N": total},
            "bw_min": 0, "bw_max": 0, "bw_agg": 100.0, "bw_mean": 0.0, "bw_dev": 0.0, "bw_samples": 0,
            "iops_min": 0, "iops_max": 0, "iops_mean": 0.0, "iops_stddev": 0.0, "iops_samples": 0}


def _fio_empty():
    return _fio_direction(0, 0, 0.0, 0, 0)


def fio(argv, path):
    """``fio --name=N --filename=F --rw=read|randread --bs=B --size=S --numjobs=J --iodepth=D --ioengine=E
    [--direct=1] [--runtime=R] --group_reporting [--unlink=1] --output-format=json``: no file is written."""
    import json
    import time
    res = Result()
    options = {}
    for word in argv:
        if not word.startswith("--"):
            res.e("fio: unknown argument %s" % word)
            return res.fail(1)
        key, _sep, value = word[2:].partition("=")
        options[key] = value
    if options.get("output-format") != "json" or options.get("rw") not in ("read", "randread", "write", "randwrite"):
        res.e("npu-sim: fio is simulated with --output-format=json and --rw=read|randread|write|randwrite")
        return res.fail(1)
    block = _fio_size_bytes(options.get("bs", "4k"))
    size = _fio_size_bytes(options.get("size", ""))
    jobs = int(options.get("numjobs", "1")) if options.get("numjobs", "1").isdigit() else 0
    depth = int(options.get("iodepth", "1")) if options.get("iodepth", "1").isdigit() else 0
    if not block or not size or jobs < 1 or depth < 1:
        res.e("fio: bad --bs, --size, --numjobs or --iodepth")
        return res.fail(1)
    st = statefile.load(path)
    busy = disk_busy_pct(st) is not None
    host = node_mod.host_settings(st)
    mb_s = DISK_BUSY_READ_MB_S if busy else float(host.get("disk_read_mb_s") or DISK_READ_DEFAULT_MB_S)
    bw_bytes = mb_s * 1000.0 ** 2
    io_bytes = size * jobs
    runtime_ms = int(io_bytes / bw_bytes * 1000.0) or 1
    if options.get("runtime", "").isdigit() and int(options["runtime"]) * 1000 < runtime_ms:
        runtime_ms = int(options["runtime"]) * 1000
        io_bytes = int(bw_bytes * runtime_ms / 1000.0) // block * block
    iops = bw_bytes / block
    in_flight = jobs * (depth if options.get("ioengine") in ("libaio", "io_uring", "posixaio") else 1)
    lat_ns = in_flight / iops * 1e9
    direction = _fio_direction(io_bytes, bw_bytes, iops, runtime_ms, lat_ns)
    reads = options["rw"] in ("read", "randread")
    now = int(node_mod.now(st))
    document = {
        "fio version": FIO_VERSION, "timestamp": now, "timestamp_ms": now * 1000,
        "time": time.strftime("%a %b %d %H:%M:%S %Y", time.localtime(now)),
        "global options": {},
        "jobs": [{"jobname": options.get("name", "job"), "groupid": 0, "error": 0, "eta": 0,
                  "elapsed": runtime_ms // 1000 + 1,
                  "job options": dict((key, options[key]) for key in ("name", "filename", "rw", "bs", "size", "numjobs",
                                                                      "iodepth", "ioengine", "direct", "runtime")
                                      if key in options),
                  "read": direction if reads else _fio_empty(), "write": _fio_empty() if reads else direction,
                  "trim": _fio_empty(), "job_runtime": runtime_ms, "usr_cpu": 0.4, "sys_cpu": 3.1, "ctx": 1000,
                  "majf": 0, "minf": 100}],
        "disk_util": [{"name": SIM_DISKS[0], "read_ios": direction["total_ios"] if reads else 0,
                       "write_ios": 0 if reads else direction["total_ios"], "read_merges": 0, "write_merges": 0,
                       "read_ticks": 0, "write_ticks": 0, "in_queue": 0,
                       "util": 99.9 if busy else round(min(99.0, 60.0 + jobs * depth * 0.5), 6)}],
    }
    for line in json.dumps(document, indent=2).replace('": ', '" : ').splitlines():
        res.o(line)
    return res
