"""Ascend version files rendered from the node state (tests/fixtures/captures/version_files.txt).

Catalog entries marked ``captured`` hold the values of real files; other versions get
synthesised values of the same shape (documented in docs/simulator.md), because the inner
version numbers of those releases are not public.
"""

import os

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


def files(st):
    """{relative path under the install prefix: text} for the version files of a state."""
    versions = st["versions"]
    arch = st.get("arch", "aarch64")
    return {
        os.path.join("Ascend", "driver", "version.info"): "\n".join(driver_info(versions["driver"])) + "\n",
        os.path.join("Ascend", "firmware", "version.info"): "\n".join(firmware_info(versions["firmware"], versions["driver"])) + "\n",
        os.path.join("Ascend", "ascend-toolkit", "latest", "version.cfg"): "\n".join(version_cfg(versions["cann"])) + "\n",
        os.path.join("Ascend", "ascend-toolkit", "latest", "%s-linux" % arch, "ascend_toolkit_install.info"):
            "\n".join(toolkit_info(versions["cann"], arch)) + "\n",
    }


def write(st, prefix):
    for rel, text in files(st).items():
        target = os.path.join(prefix, rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        tmp = target + ".tmp"
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, target)
