"""The rest of the software stack the simulator renders for stage 2 - the CANN kernels package, MindIE's version.info,
the kernel release and the Python of the training environment - in the layouts of the real captures
(tests/fixtures/captures/version_files_stack.txt), and the ``version`` fault on their keys."""

import json
import os
import subprocess

import pytest

from npu_sim import versions
from simhelpers import sample, text

CAPTURE = "version_files_stack.txt"


def _fault(sim, *args):
    rc, out, err = sim.sub("npu-sim", "fault", *args)
    assert rc == 0, err
    return out


def _install(sim, tmp_path):
    prefix = str(tmp_path / "files")
    rc, _out, err = sim.sub("npu-sim", "install", "--prefix", prefix)
    assert rc == 0, err
    return prefix


def _read(path):
    with open(path) as handle:
        return handle.read()


@pytest.mark.parametrize("source, release", [("section \"kernels\"", "8.2.RC1"), ("检查Kernels算子包安装", "8.3.RC1.alpha001")])
def test_kernels_version_info_is_the_real_layout(source, release):
    lines = sample(CAPTURE, source)
    assert "\n".join(versions.kernels_info(release)) + "\n" == text(lines)


def test_kernels_of_a_release_without_a_capture_keep_the_shape():
    lines = versions.kernels_info("8.3.RC2")
    assert lines[:2] == ["Version=8.3.0.0.201", "version_dir=8.3.RC2"]
    assert lines[-1] == 'required_package_toolkit_version=">=7.6, <=8.3"'
    assert len(lines) == len(sample(CAPTURE, "section \"kernels\""))


@pytest.mark.parametrize("source, version", [("section \"MindIE\"", "2.1.RC1"), ("index id 4926109241", "2.1.RC2.B080")])
def test_mindie_version_info_is_the_real_layout(source, version):
    assert "\n".join(versions.mindie_info(version, "aarch64")) + "\n" == text(sample(CAPTURE, source))


def test_the_default_kernel_release_is_the_captured_one():
    assert [versions.STACK_DEFAULTS["kernel_release"]] == sample(CAPTURE, "section \"OS\"")


def test_install_writes_the_stack_and_the_fault_changes_every_new_key(sim, tmp_path):
    prefix = _install(sim, tmp_path)
    kernels = os.path.join(prefix, "Ascend", "ascend-toolkit", "latest", "opp_kernel", "version.info")
    mindie = os.path.join(prefix, "Ascend", "mindie", "latest", "version.info")
    osrelease = os.path.join(prefix, "host", "proc", "sys", "kernel", "osrelease")
    site = os.path.join(prefix, "Ascend", "npu-sim-python", "site-packages")
    cann = sim.data["versions"]["cann"]
    assert "version_dir=%s\n" % cann in _read(kernels)
    assert not os.path.exists(mindie)
    assert _read(osrelease) == versions.STACK_DEFAULTS["kernel_release"] + "\n"
    assert sorted(os.listdir(site)) == ["torch-%s.dist-info" % sim.data["versions"]["torch"],
                                        "torch_npu-%s.dist-info" % sim.data["versions"]["torch_npu"]]

    _fault(sim, "set", "version", "--value", "cann_kernels=8.2.RC1,mindie=2.1.RC1,kernel_release=4.19.90-2112.8.0.0131.oe1.aarch64,"
           "python=3.12.1,vllm=0.9.2,vllm_ascend=0.9.1,mindspeed=2.1.0")
    assert "version_dir=8.2.RC1\n" in _read(kernels)
    assert _read(mindie).startswith("Ascend-mindie : MindIE 2.1.RC1.B152\n")
    assert _read(osrelease) == "4.19.90-2112.8.0.0131.oe1.aarch64\n"
    assert sorted(os.listdir(site)) == ["mindspeed-2.1.0.dist-info", "torch-%s.dist-info" % sim.data["versions"]["torch"],
                                        "torch_npu-%s.dist-info" % sim.data["versions"]["torch_npu"],
                                        "vllm-0.9.2.dist-info", "vllm_ascend-0.9.1.dist-info"]

    _fault(sim, "clear", "version")
    assert "version_dir=%s\n" % cann in _read(kernels)
    assert not os.path.exists(mindie)
    assert len(os.listdir(site)) == 2


def test_the_python_of_the_environment_reports_the_node_version_and_packages(sim, tmp_path):
    prefix = _install(sim, tmp_path)
    _fault(sim, "set", "version", "--value", "python=3.10.14,vllm_ascend=0.9.1")
    python = os.path.join(prefix, "Ascend", "npu-sim-python", "bin", "python3")
    done = subprocess.run([python, "--version"], capture_output=True, text=True, check=False)
    assert (done.returncode, done.stdout) == (0, "Python 3.10.14\n")
    code = ("import json, platform, sys\nfrom importlib import metadata\n"
            "print(json.dumps([platform.python_version(), sys.argv[1:], metadata.version('vllm_ascend'), metadata.version('torch_npu')]))\n")
    done = subprocess.run([python, "-c", code, "a", "b"], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == ["3.10.14", ["a", "b"], "0.9.1", sim.data["versions"]["torch_npu"]]


def test_an_unknown_version_key_is_refused(sim):
    assert sim.sub("npu-sim", "fault", "set", "version", "--value", "bios=1")[0] == 2


def test_the_node_module_reads_what_the_simulator_renders(sim, tmp_path):
    from ansible_collections.npuops.ascend.plugins.module_utils._parsers import versions as parsers  # noqa: PLC0415
    from ansible_collections.npuops.ascend.plugins.modules import version_info  # noqa: PLC0415
    prefix = _install(sim, tmp_path)
    _fault(sim, "set", "version", "--value", "mindie=2.1.RC1,cann_kernels=8.2.RC1,python=3.11.6,vllm=0.9.1")
    python = os.path.join(prefix, "Ascend", "npu-sim-python", "bin", "python3")
    names = ["torch", "torch_npu", "mindspeed", "vllm", "vllm_ascend"]
    done = subprocess.run([python, "-c", version_info.PACKAGES_SCRIPT] + names, capture_output=True, text=True, check=False)
    assert json.loads(done.stdout) == {"python": "3.11.6", "packages": {
        "torch": sim.data["versions"]["torch"], "torch_npu": sim.data["versions"]["torch_npu"], "mindspeed": None,
        "vllm": "0.9.1", "vllm_ascend": None}}
    mindie = parsers.parse_mindie_info(_read(os.path.join(prefix, "Ascend", "mindie", "latest", "version.info")))
    assert (mindie["release"], mindie["unparsed"]) == ("2.1.RC1", [])
    kernels = parsers.parse_version_info(_read(os.path.join(prefix, "Ascend", "ascend-toolkit", "latest", "opp_kernel", "version.info")))
    assert (kernels["version_dir"], kernels["unparsed"]) == ("8.2.RC1", [])
