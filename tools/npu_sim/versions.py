"""Ascend version files rendered from the node state (tests/fixtures/captures/version_files.txt and
version_files_stack.txt).

Catalog entries marked ``captured`` hold the values of real files; other versions get
synthesised values of the same shape (documented in docs/simulator.md), because the inner
version numbers of those releases are not public.

Besides the driver, firmware and CANN toolkit files: the CANN kernels package
(``ascend-toolkit/latest/opp_kernel/version.info``), MindIE's ``mindie/latest/version.info`` (only
when the node has a ``mindie`` version), the kernel release (``host/proc/sys/kernel/osrelease``, which
podctl can bind on ``/proc/sys/kernel/osrelease``) and the Python of the training environment:
``Ascend/npu-sim-python/bin/python3``, a launcher of the simulator's own interpreter that reports the
node's Python version and sees one ``.dist-info`` per package version of the node (torch, torch_npu,
and mindspeed, vllm, vllm_ascend when set) - the interpreter ``version_check_python`` points at.
Keys of ``versions`` beyond the driver, firmware, cann, torch and torch_npu of the state default to
the values of ``STACK_DEFAULTS``; ``npu-sim fault set version --value KEY=V`` sets any of them.
"""

import os
import re
import shutil

# driver/version.info
DRIVER_CATALOG = {
    "23.0.7": {"captured": True, "ascendhal": "7.35.19", "inner": "V100R001C15SPC012B220",
               "compat": "[V100R001C29],[V100R001C30],[V100R001C13],[V100R001C15]", "compat_fw": "[7.0.0,7.1.99]"},
    "24.1.rc1": {"captured": True, "ascendhal": "7.35.19", "inner": "V100R001C15SPC006B220",
                 "compat": "[V100R001C30],[V100R001C13],[V100R001C15],[V100R001C17]", "compat_fw": "[7.0.0,7.2.99]"},
    "25.3.rc1": {"captured": True, "ascendhal": "7.35.23", "inner": "V100R001C23SPC002B212",
                 "compat": "[V100R001C19],[V100R001C20],[V100R001C21],[V100R001C22],[V100R001C23]",
                 "compat_fw": "[6.4.0,6.4.99],[7.0.0,8.9.9]"},
}

# firmware/version.info
FIRMWARE_CATALOG = {
    "7.1.0.11.220": {"captured": True, "package": "23.0.7", "compat_drv": "[23.0.rc3,23.0.rc3.],[23.0.0,23.0.0.]"},
}

# ascend_toolkit_install.info (+ the component version used in version.cfg)
CANN_CATALOG = {
    "7.0.T10": {"inner": "V100R001C13B222", "compat": "[V100R001C29],[V100R001C30],[V100R001C13],[V100R003C10],[V100R003C11]"},
    "8.0.0": {"inner": "V100R001C20SPC001B251", "compat": "[V100R001C15],[V100R001C17],[V100R001C18],[V100R001C19],[V100R001C20]",
              "component": "7.6.0.1.220"},
    "8.1.RC1": {"inner": "V100R001C21SPC001B238", "compat": "[V100R001C15],[V100R001C18],[V100R001C19],[V100R001C20],[V100R001C21]"},
    "8.2.RC1": {"inner": "V100R001C22SPC001B231",
                "compat": "[V100R001C15],[V100R001C18],[V100R001C19],[V100R001C20],[V100R001C21],[V100R001C23]"},
    "8.3.RC1": {"inner": "V100R001C23SPC001B235",
                "compat": "[V100R001C15],[V100R001C18],[V100R001C19],[V100R001C20],[V100R001C21],[V100R001C23]"},
    "8.3.RC2": {"inner": "V100R001C23SPC002B210",
                "compat": "[V100R001C15],[V100R001C18],[V100R001C19],[V100R001C20],[V100R001C21],[V100R001C23]"},
    "8.5.0": {"inner": "V100R001C25SPC001B212",
              "compat": "[V100R001C15],[V100R001C18],[V100R001C19],[V100R001C20],[V100R001C21],[V100R001C23]",
              "path": "/usr/local/Ascend/cann-8.5.0/{arch}-linux"},
}

CFG_COMPONENTS = ("runtime", "compiler", "hccl", "opp", "toolkit", "aoe", "ncs")

# opp_kernel/version.info: the build number and timestamp of a kernels release (version_dir).
KERNELS_CATALOG = {
    "8.2.RC1": {"captured": True, "build": "8.2.0.0.201", "timestamp": "20250724_194044950"},
    "8.3.RC1.alpha001": {"captured": True, "build": "8.3.T5.0.B028", "timestamp": "20250807_092944934"},
}
KERNELS_REQUIRED = ("amct_acl", "aoe", "compiler", "fwkplugin", "hccl", "nca", "ncs", "opp", "runtime", "toolkit")
# mindie/latest/version.info: the build of a MindIE release.
MINDIE_CATALOG = {"2.1.RC1": "2.1.RC1.B152", "2.1.RC2": "2.1.RC2.B080"}
MINDIE_COMPONENTS = ("mindie-rt", "mindie-torch", "mindie-service", "mindie-llm", "mindie-sd")

# The rest of the stack when the state does not set it: the kernels of the toolkit's own release, no MindIE, the
# openEuler 22.03 kernel and the Python 3.11.6 of the captured MindIE 2.1.RC1 stack, no MindSpeed / vLLM / vLLM-Ascend.
STACK_DEFAULTS = {"cann_kernels": None, "mindie": None, "kernel_release": "5.10.0-60.18.0.50.0e2203.aarch64",
                  "python": "3.11.6", "mindspeed": None, "vllm": None, "vllm_ascend": None}
PACKAGE_KEYS = ("torch", "torch_npu", "mindspeed", "vllm", "vllm_ascend")
PYTHON_DIR = os.path.join("Ascend", "npu-sim-python")
OSRELEASE = os.path.join("host", "proc", "sys", "kernel", "osrelease")


def _major_family(version):
    """Synthesised inner-version family of a driver release (C15 for 23.x, C17 for 24.x, C23 for 25.x)."""
    major = version.split(".", 1)[0]
    return {"23": 15, "24": 17, "25": 23, "26": 25}.get(major, 23)


def driver_info(version):
    entry = DRIVER_CATALOG.get(version)
    if entry is None:
        fam = _major_family(version)
        entry = {"captured": False, "ascendhal": "7.35.23", "inner": "V100R001C%dSPC001B220" % fam,
                 "compat": ",".join("[V100R001C%d]" % c for c in range(fam - 4, fam + 1)),
                 "compat_fw": "[7.0.0,8.9.9]"}
    return ["Version=%s" % version, "ascendhal_version=%s" % entry["ascendhal"], "aicpu_version=1.0", "tdt_version=1.0",
            "log_version=1.0", "prof_version=2.0", "dvppkernels_version=1.1", "tsfw_version=1.0",
            "Innerversion=%s" % entry["inner"], "compatible_version=%s" % entry["compat"],
            "compatible_version_fw=%s" % entry["compat_fw"], "package_version=%s" % version]


def firmware_info(version, driver):
    entry = FIRMWARE_CATALOG.get(version)
    if entry is None:
        train = ".".join(driver.split(".")[:2])
        entry = {"package": driver, "compat_drv": "[%s.rc1,%s.rc1.],[%s.0,%s.0.]" % (train, train, train, train)}
    return ["Version=%s" % version, "firmware_version=1.0", "package_version=%s" % entry["package"],
            "compatible_version_drv=%s" % entry["compat_drv"]]


def toolkit_info(version, arch):
    entry = CANN_CATALOG.get(version)
    if entry is None:
        entry = {"inner": "V100R001C25SPC001B200",
                 "compat": "[V100R001C15],[V100R001C18],[V100R001C19],[V100R001C20],[V100R001C21],[V100R001C23]"}
    path = entry.get("path", "/usr/local/Ascend/ascend-toolkit/{version}/{arch}-linux").format(version=version, arch=arch)
    return ["package_name=Ascend-cann-toolkit", "version=%s" % version, "innerversion=%s" % entry["inner"],
            "compatible_version=%s" % entry["compat"], "arch=%s" % arch, "os=linux", "path=%s" % path]


def _component(version):
    entry = CANN_CATALOG.get(version, {})
    if "component" in entry:
        return entry["component"]
    # Synthesised: CANN 8.x.y -> component 7.(x+6).0.1.220 (8.0.0 -> 7.6.0.1.220 is the captured pair).
    parts = version.split(".")
    try:
        minor = int(parts[1])
    except (IndexError, ValueError):
        minor = 0
    return "7.%d.0.1.220" % (minor + 6)


def version_cfg(version):
    comp = _component(version)
    lines = ["# version: 1.0"]
    for kind in ("running", "upgrade", "installed"):
        for name in CFG_COMPONENTS:
            lines.append("%s_%s_version=[%s:%s]" % (name, kind, comp, version))
    return lines


def stack(st):
    """The versions of a state with the defaults of the keys it does not set (``cann_kernels``: the toolkit's)."""
    out = dict(STACK_DEFAULTS)
    out.update(dict((key, value) for key, value in st["versions"].items() if value not in (None, "")))
    if not out.get("cann_kernels"):
        out["cann_kernels"] = out["cann"]
    return out


def kernels_info(release):
    """opp_kernel/version.info of a kernels release, in the layout of the real file."""
    entry = KERNELS_CATALOG.get(release)
    if entry is None:
        numbers = re.findall(r"\d+", release)[:2] + ["0", "0"]
        entry = {"build": "%s.%s.0.0.201" % (numbers[0], numbers[1]), "timestamp": "20250101_000000000"}
    train = ".".join(entry["build"].split(".")[:2])
    lines = ["Version=%s" % entry["build"], "version_dir=%s" % release, "timestamp=%s" % entry["timestamp"],
             "ops_version=%s" % entry["build"], "adk_version=%s" % entry["build"]]
    lines += ['required_package_%s_version=">=7.6, <=%s"' % (name, train) for name in KERNELS_REQUIRED]
    return lines


def mindie_info(version, arch):
    """mindie/latest/version.info of a MindIE release or build (``2.1.RC1`` or ``2.1.RC1.B152``)."""
    build = version if re.search(r"\.B\d+$", version) else MINDIE_CATALOG.get(version, version + ".B010")
    lines = ["Ascend-mindie : MindIE %s" % build]
    lines += ["%s: %s" % (name, build) for name in MINDIE_COMPONENTS[:-1]]
    lines.append("%s:%s" % (MINDIE_COMPONENTS[-1], build))   # the real file has no space after mindie-sd:
    lines.append("Platform : %s" % arch)
    return lines


def python_launcher(interpreter, version):
    """The ``python3`` of the simulated environment: runs ``-c CODE ARGS`` in the simulator's interpreter with the
    node's packages on the path and the node's Python version; ``--version`` prints it."""
    return "\n".join([
        "#!%s" % interpreter,
        "# npu-sim: the Python of the simulated training environment (version and packages from the node state)",
        "import os, platform, sys",
        "VERSION = %r" % version,
        "sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'site-packages'))",
        "platform.python_version = lambda: VERSION",
        "args = sys.argv[1:]",
        "if args[:1] in (['--version'], ['-V']):",
        "    print('Python ' + VERSION)",
        "    sys.exit(0)",
        "if len(args) >= 2 and args[0] == '-c':",
        "    sys.argv = ['-c'] + args[2:]",
        "    exec(compile(args[1], '<string>', 'exec'), {'__name__': '__main__'})",
        "    sys.exit(0)",
        "sys.stderr.write('npu-sim python: only -c CODE and --version are simulated\\n')",
        "sys.exit(2)",
    ]) + "\n"


def dist_infos(versions):
    """{directory name: METADATA text} of the packages the node has."""
    out = {}
    for name in PACKAGE_KEYS:
        version = versions.get(name)
        if version:
            out["%s-%s.dist-info" % (name, version)] = "Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name, version)
    return out


def files(st):
    """{relative path under the install prefix: text} for the version files of a state."""
    versions = stack(st)
    arch = st.get("arch", "aarch64")
    out = {
        os.path.join("Ascend", "driver", "version.info"): "\n".join(driver_info(versions["driver"])) + "\n",
        os.path.join("Ascend", "firmware", "version.info"): "\n".join(firmware_info(versions["firmware"], versions["driver"])) + "\n",
        os.path.join("Ascend", "ascend-toolkit", "latest", "version.cfg"): "\n".join(version_cfg(versions["cann"])) + "\n",
        os.path.join("Ascend", "ascend-toolkit", "latest", "%s-linux" % arch, "ascend_toolkit_install.info"):
            "\n".join(toolkit_info(versions["cann"], arch)) + "\n",
        os.path.join("Ascend", "ascend-toolkit", "latest", "opp_kernel", "version.info"):
            "\n".join(kernels_info(versions["cann_kernels"])) + "\n",
        OSRELEASE: versions["kernel_release"] + "\n",
    }
    if versions.get("mindie"):
        out[os.path.join("Ascend", "mindie", "latest", "version.info")] = "\n".join(mindie_info(versions["mindie"], arch)) + "\n"
    for name, text in dist_infos(versions).items():
        out[os.path.join(PYTHON_DIR, "site-packages", name, "METADATA")] = text
    return out


def _write(target, text, mode=None):
    os.makedirs(os.path.dirname(target), exist_ok=True)
    tmp = target + ".tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
    if mode is not None:
        os.chmod(tmp, mode)
    os.replace(tmp, target)


def write(st, prefix):
    rendered = files(st)
    for rel, text in rendered.items():
        if rel == OSRELEASE:
            # podctl binds this file on the node's /proc/sys/kernel/osrelease: rewritten in place, the bind sees it
            from .host import _write_in_place  # pylint: disable=import-outside-toplevel
            _write_in_place(os.path.join(prefix, rel), text)
        else:
            _write(os.path.join(prefix, rel), text)
    versions = stack(st)
    if not versions.get("mindie"):    # a MindIE version cleared: its version.info goes (config.json stays)
        stale = os.path.join(prefix, "Ascend", "mindie", "latest", "version.info")
        if os.path.isfile(stale) and not os.path.islink(stale):
            os.unlink(stale)
    site = os.path.join(prefix, PYTHON_DIR, "site-packages")
    keep = set(dist_infos(versions))
    for name in os.listdir(site) if os.path.isdir(site) else []:
        path = os.path.join(site, name)
        if name.endswith(".dist-info") and name not in keep and os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
    interpreter = st.get("python")
    if interpreter:
        _write(os.path.join(prefix, PYTHON_DIR, "bin", "python3"), python_launcher(interpreter, versions["python"]), 0o755)
