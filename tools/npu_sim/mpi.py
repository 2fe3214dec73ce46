"""``all_reduce_test`` (CANN hccl_test) and a stand-in for MPICH's ``mpirun``.

``all_reduce_test`` parses the options of hccl_test (``hccl_test_common.cc``: ``-b -e -i -f -n -o -d -r
-w -c -p -h`` and their long forms) and prints the table of the performance model (perf.allreduce_lines)
in the layout of the real tool (tests/fixtures/captures/extra_hccl_test.txt). Its error texts are those
of the hccl_test source (printed on stdout); no capture shows them. It honours ASCEND_RT_VISIBLE_DEVICES
(CANN's runtime shows the job only the NPUs it lists, logical device i being the i-th of them): the job's
NPUs on every node of the run are the first ``-p`` visible ones, and only their ports slow the run or count
its CNPs.

``mpirun`` is NOT an MPI launcher: it starts no ranks. It reads the host list (``-f``/``-hostfile``/
``--hostfile``/``-machinefile`` FILE, ``-hosts a,b``), exports ``-genv``/``-env`` values, and then runs the
program once, with the node count in ``NPU_SIM_MPI_NODES`` (``NPU_SIM_MPI_HOSTS``, ``NPU_SIM_MPI_NP`` beside
it); the program's output and exit code are those of the run.
"""

import os

from . import model
from . import perf
from . import statefile
from .output import Result

HCCL_DTYPES = ("int8", "int16", "int32", "fp16", "fp32", "int64", "uint64", "uint8", "uint16", "uint32",
               "fp64", "bfp16")
HCCL_OPS = ("sum", "prod", "min", "max")
HCCL_DEFAULT_BYTES = "64M"
HCCL_HELP = ("USAGE: ./test \n\t"
             "[-b,--minbytes <min size in bytes>] \n\t"
             "[-e,--maxbytes <max size in bytes>] \n\t"
             "[-i,--stepbytes <increment size>] \n\t"
             "[-f,--stepfactor <increment factor>] \n\t"
             "[-n,--iters <iteration count>] \n\t"
             "[-o,--op <sum/prod/min/max>] \n\t"
             "[-d,--datatype <int8/int16/int32/fp16/fp32/int64/uint64/uint8/uint16/uint32/fp64/bfp16>] \n\t"
             "[-r,--root <root>] \n\t"
             "[-w,--warmup_iters <warmup iteration count>] \n\t"
             "[-c,--check <result verification> 0:disabled 1:enabled.] \n\t"
             "[-p,--npus <npus used for one node>] \n\t"
             "[-h,--help]")
HCCL_LONG = {"--minbytes": "b", "--maxbytes": "e", "--stepbytes": "i", "--stepfactor": "f", "--iters": "n",
             "--op": "o", "--datatype": "d", "--root": "r", "--warmup_iters": "w", "--check": "c", "--npus": "p",
             "--help": "h"}
HCCL_WITH_VALUE = "odbeifrnwcp"
# hccl_test's main returns -1 on a bad command line; the process exits with 255.
HCCL_BAD_USAGE = 255

MPI_NODES_ENV = "NPU_SIM_MPI_NODES"
MPI_HOSTS_ENV = "NPU_SIM_MPI_HOSTS"
MPI_NP_ENV = "NPU_SIM_MPI_NP"


class HcclUsage(Exception):
    pass


def parse_size(text):
    """hccl_test parsesize: a number with an optional K/M/G suffix (either case); -1 when invalid."""
    text = str(text).strip()
    mult = 1
    if text[-1:].upper() in ("K", "M", "G"):
        mult = {"K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}[text[-1].upper()]
        text = text[:-1]
    return int(text) * mult if text.isdigit() else -1


def _int(text):
    text = str(text).strip()
    return int(text) if text.lstrip("-").isdigit() else -1


def _hccl_options(argv):
    opts = {}
    words = list(argv)
    pos = 0
    while pos < len(words):
        word = words[pos]
        pos += 1
        if word.startswith("--"):
            name, eq, inline = word.partition("=")
            letter = HCCL_LONG.get(name)
            value = inline if eq else None
        elif word.startswith("-") and len(word) >= 2:
            letter, value = word[1], (word[2:] or None)
        else:
            raise HcclUsage(["non-option ARGV-elements: %s " % " ".join(words[pos - 1:])])
        if letter is None or (letter not in HCCL_WITH_VALUE and letter != "h"):
            raise HcclUsage(["invalid option ", "Try [-h --help] for more information."])
        if letter == "h":
            opts["h"] = True
            continue
        if value is None:
            if pos >= len(words):
                raise HcclUsage(["invalid option ", "Try [-h --help] for more information."])
            value = words[pos]
            pos += 1
        opts[letter] = value
    return opts


def _plan(opts, devices, ranks):
    """The run as hccl_test's check_data_count/check_cmd_line validate it -> dict, or HcclUsage."""
    low = parse_size(opts.get("b", HCCL_DEFAULT_BYTES))
    high = parse_size(opts.get("e", HCCL_DEFAULT_BYTES))
    if low <= 0 or high <= 0:
        raise HcclUsage(["invalid size specified for [-b,--minbytes] or [-e,--maxbytes]"])
    notes = []
    step = None
    if "i" in opts:
        step = _int(opts["i"])
        if step < 0:
            raise HcclUsage(["Error: [-i,--stepbytes] must be greater than or equal to 0."])
    if high < low:
        raise HcclUsage(["invalid option: maxbytes < minbytes, Check the [-b,--minbytes] and [-e,--maxbytes] options."])
    if step is None:
        step = 1 if high == low else (high - low) // 10
    factor = None
    if "f" in opts:
        try:
            factor = float(opts["f"])
        except ValueError:
            factor = 0.0
        if factor <= 1.0:
            raise HcclUsage(["Error: [-f,--stepfactor] Must be greater than 1.0f, Start step mod."])
        if "i" in opts:
            notes.append("Warning: [-f,--stepfactor] and [-i,--stepbytes] are set, [-f,--stepfactor] is enabled by default.")
    if opts.get("d", "fp32") not in HCCL_DTYPES:
        raise HcclUsage(["Error: [-d,--datatype] is invalid, Use [-h,--help] to check the correct input parameter."])
    if opts.get("o", "sum") not in HCCL_OPS:
        raise HcclUsage(["Error: [-o,--op] is invalid, Use [-h,--help] to check the correct input parameter."])
    warmup = _int(opts.get("w", perf.HCCL_WARMUP))
    if warmup < 0:
        raise HcclUsage(["Error: [-w,--warmup_iters] is invalid, warmup_iters must be greater than or equal to 0."])
    iters = _int(opts.get("n", perf.HCCL_ITERS))
    if iters < 0:
        raise HcclUsage(["Error: [-n,--iters] is invalid, iters must be greater than or equal to 0."])
    npus = _int(opts.get("p", devices))
    root = _int(opts.get("r", 0))
    if root < 0 or root >= (ranks or max(1, npus)):
        raise HcclUsage(["Error: [-r,--root <root>] is invalid, root rank must be greater than or equal to 0 and "
                         "less than or equal to %d." % ((ranks or max(1, npus)) - 1)])
    check = _int(opts.get("c", 1))
    if check not in (0, 1):
        raise HcclUsage(["Error: [-c,--check] is invalid, check should be 0 or 1"])
    if npus < 1 or npus > devices:
        raise HcclUsage(["Error: [-p,--npus <npus used for one node>] is invalid, npus must be greater than or "
                         "equal to 1 and less than or equal to %d." % devices])
    return {"low": low, "high": high, "step": step, "factor": factor, "iters": iters, "warmup": warmup,
            "check": bool(check), "npus": npus, "notes": notes}


def _sizes(plan):
    size = plan["low"]
    while size <= plan["high"]:
        yield size
        if plan["factor"]:
            size = int(size * plan["factor"])
        elif plan["step"] > 0:
            size += plan["step"]
        else:
            return  # hccl_test repeats the first size for ever with -i 0; one row here


def _same_host(name, node):
    hostname = str(node.get("hostname") or "")
    return name == hostname or name.split(".", maxsplit=1)[0] == hostname.split(".", maxsplit=1)[0]


def run_nodes(st, path, nodes, env):
    """The node states a run covers, ``nodes`` in all: the hosts mpirun named that the PoD registry knows
    (by hostname or its first label), in the order given, whether or not this node is one of them (a pair
    can be measured from any node); when fewer are known, this node and then the other nodes of the
    registry fill up the run."""
    return [node for _path, node in run_node_paths(st, path, nodes, env)]


def run_node_paths(st, path, nodes, env):
    """run_nodes as (state path, state) pairs."""
    pairs = statefile.pod_states(st, path)
    paths = dict((id(node), node_path) for node_path, node in pairs)
    paths.setdefault(id(st), path)
    return [(paths[id(node)], node) for node in _run_nodes(st, [node for _path, node in pairs], nodes, env)]


def _run_nodes(st, registry, nodes, env):
    local = st.get("hostname")
    named = [h.split(":")[0] for h in str(env.get(MPI_HOSTS_ENV) or "").split(",") if h]
    chosen = []
    for name in named:
        for node in registry:
            if _same_host(name, node) and not any(node is seen for seen in chosen):
                chosen.append(node)
                break
    others = sorted((node for node in registry if node.get("hostname") != local),
                    key=lambda node: node.get("hostname") or "")
    for node in [st] + others:
        if not any(node is seen for seen in chosen):
            chosen.append(node)
    return chosen[:max(1, nodes)]


VISIBLE_ENV = "ASCEND_RT_VISIBLE_DEVICES"


def visible_devices(env, count):
    """The physical NPUs CANN's runtime shows the job: the ids of ASCEND_RT_VISIBLE_DEVICES (comma-separated, in
    their order; logical device i is the i-th of them) when it is set, else 0..count-1. -> (ids, the ids that are
    not NPUs of the node)."""
    text = str(env.get(VISIBLE_ENV) or "").strip()
    if not text:
        return list(range(count)), []
    ids, unknown = [], []
    for item in text.split(","):
        item = item.strip()
        if item.isdigit() and int(item) < count:
            if int(item) not in ids:
                ids.append(int(item))
        elif item:
            unknown.append(item)
    return ids, unknown


def job_devices(env, count, npus):
    """The job's physical NPUs on every node of the run: the first ``npus`` of the visible ones."""
    return visible_devices(env, count)[0][:max(0, int(npus))]


def mpi_nodes(env=None):
    env = os.environ if env is None else env
    value = str(env.get(MPI_NODES_ENV) or "1")
    return max(1, int(value)) if value.isdigit() else 1


def all_reduce_test(argv, path, env=None):
    """hccl_test ``all_reduce_test``: the modelled table for the nodes ``mpirun`` names (first N of the PoD)."""
    env = os.environ if env is None else env
    res = Result()
    st = statefile.load(path)
    if any(npu.get("net") is None for npu in st["npus"]):
        # an inference host of PCIe-only chips (Atlas 300I Duo): its HCCL bandwidth is not modelled
        res.e("npu-sim: %s (%s) links its chips over PCIe only; the simulator models all_reduce_test on HCCS and RoCE "
              "nodes only" % (st.get("hostname"), st.get("product")))
        return res.fail(1)
    visible, unknown = visible_devices(env, len(st["npus"]))
    if unknown or not visible:
        res.e("npu-sim: %s=%s names no NPU of %s (NPUs 0-%d): no device is visible to the job"
              % (VISIBLE_ENV, env.get(VISIBLE_ENV), st.get("hostname"), len(st["npus"]) - 1))
        return res.fail(1)
    devices = len(visible)
    nodes = mpi_nodes(env)
    ranks = _int(env.get(MPI_NP_ENV, "")) if env.get(MPI_NP_ENV) else 0
    try:
        opts = _hccl_options(argv)
        if opts.get("h"):
            res.o(HCCL_HELP)
            return res
        plan = _plan(opts, devices, ranks if ranks > 0 else 0)
    except HcclUsage as exc:
        for line in exc.args[0]:
            res.o(line)
        return res.fail(HCCL_BAD_USAGE)
    for line in plan["notes"]:
        res.o(line)
    pairs = run_node_paths(st, path, nodes, env)
    states = [node for _path, node in pairs]
    job = visible[:plan["npus"]]
    lines = perf.allreduce_lines(states, nodes, plan["low"], plan["high"], env=env, npus_per_node=plan["npus"],
                                 iters=plan["iters"], warmup=plan["warmup"], check=plan["check"],
                                 sizes=list(_sizes(plan)), devices=job)
    for line in lines:
        res.o(line)
    sizes = list(_sizes(plan))
    if len(pairs) > 1 and not perf.roce_check(states, env):
        record_cnp(pairs, plan["npus"], model.cnp_per_port(sizes, plan["iters"], plan["warmup"], len(pairs)), job)
    return res


def record_cnp(pairs, npus, count, devices=None):
    """The CNPs of a lossless cross-node run: ``count`` more sent and received on the job's NPUs of every node
    of the run (``devices``, its physical NPUs; else 0..npus-1; not on a port whose switch does not mark ECN),
    written into each node's state file under that node's lock, one node after the other (no two locks held at
    once). A node whose state cannot be written is skipped: the run's output does not depend on it."""
    if count <= 0:
        return
    for node_path, _node in pairs:
        try:
            with statefile.transaction(node_path) as data:
                model.add_cnp(data, npus, count, devices)
        except (statefile.StateError, OSError):
            continue


# ---------------------------------------------------------------------------------------------
# mpirun (stand-in)

MPIRUN_USAGE = "Usage: mpirun [-n N] [-f HOSTFILE | -hosts a,b] [-genv VAR VALUE] PROGRAM [ARGS...]"
# Options that take one value and change nothing here (MPICH Hydra and Open MPI spellings).
MPIRUN_IGNORED_VALUE = ("-ppn", "--map-by", "-map-by", "--bind-to", "-bind-to", "-wdir", "--wdir", "-launcher",
                        "-bootstrap", "-iface", "--npernode", "-npernode", "-N", "-genvlist", "-envlist")
MPIRUN_IGNORED_FLAG = ("--allow-run-as-root", "--oversubscribe", "-genvall", "-envall", "-genvnone", "-envnone",
                       "-l", "-prepend-rank", "--tag-output", "-v", "-verbose")


def read_hostfile(path):
    """Hosts of an MPICH host file: one host a line, ``host:slots`` or Open MPI's ``host slots=N``; ``#`` comments."""
    hosts = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            hosts.append(line.split()[0].split(":", 1)[0])
    return hosts


def _unique(hosts):
    seen = []
    for host in hosts:
        if host and host not in seen:
            seen.append(host)
    return seen


def mpirun(argv, path):
    """Parse the launcher options, then hand the program to ``__main__`` to exec once (no ranks are started)."""
    res = Result()
    words = list(argv)
    env = {}
    hosts = None
    nprocs = None
    pos = 0
    while pos < len(words):
        word = words[pos]
        if word == "--":
            pos += 1
            break
        if not word.startswith("-"):
            break
        value = words[pos + 1] if pos + 1 < len(words) else None
        if word in ("-n", "-np", "--n", "--np", "-c"):
            if value is None or not value.isdigit():
                res.e("mpirun: %s needs a process count" % word)
                return res.fail(255)
            nprocs = int(value)
            pos += 2
        elif word in ("-f", "-hostfile", "--hostfile", "-machinefile", "--machinefile"):
            if value is None:
                res.e("mpirun: %s needs a file" % word)
                return res.fail(255)
            try:
                hosts = read_hostfile(value)
            except OSError as exc:
                res.e("mpirun: cannot read host file %s: %s" % (value, exc.strerror))
                return res.fail(255)
            pos += 2
        elif word in ("-hosts", "--hosts", "-host", "--host", "-H"):
            if value is None:
                res.e("mpirun: %s needs a host list" % word)
                return res.fail(255)
            hosts = [item.split(":", 1)[0] for item in value.split(",")]
            pos += 2
        elif word in ("-genv", "-env"):
            if value is None:
                res.e("mpirun: %s needs VAR VALUE" % word)
                return res.fail(255)
            if "=" in value:  # -genv VAR=VALUE is accepted by Hydra too
                key, val = value.split("=", 1)
                pos += 2
            elif pos + 2 < len(words):
                key, val = value, words[pos + 2]
                pos += 3
            else:
                res.e("mpirun: %s needs VAR VALUE" % word)
                return res.fail(255)
            env[key] = val
        elif word == "-x":  # Open MPI: export VAR (inherited anyway) or set VAR=VALUE
            if value is not None and "=" in value:
                key, val = value.split("=", 1)
                env[key] = val
            pos += 2
        elif word in ("--mca", "-mca", "-gmca"):
            pos += 3
        elif word in MPIRUN_IGNORED_VALUE:
            pos += 2
        elif word in MPIRUN_IGNORED_FLAG:
            pos += 1
        else:
            res.e("mpirun: unrecognized argument %s" % word)
            res.e(MPIRUN_USAGE)
            return res.fail(255)
    command = words[pos:]
    if not command:
        res.e("mpirun: no program given")
        res.e(MPIRUN_USAGE)
        return res.fail(255)
    hosts = _unique(hosts or [])
    env[MPI_NODES_ENV] = str(max(1, len(hosts)))
    env[MPI_HOSTS_ENV] = ",".join(hosts)
    if nprocs is not None:
        env[MPI_NP_ENV] = str(nprocs)
    res.exec_env = env
    res.exec_argv = command
    return res
