"""Stage 2 on the session's simulated PoD with the rest of the stack: the CANN kernels package, MindIE, vLLM-Ascend and
its vLLM, the Python of the environment (the simulator's launcher, ``version_check_python``) - every one read on each
node by the one version_info call, paired against the table, and compared across the nodes. node02 gets a version
fault on the new keys; the findings name it, the component, its value and what node01 has. The fault is cleared after."""

import glob
import json
import os

STAGE2 = ["--tags", "stage2"]
PYTHON = "/usr/local/Ascend/npu-sim-python/bin/python3"
SIM = "/usr/local/sbin/npu-sim"


def _latest(pod, pattern):
    paths = sorted(glob.glob(os.path.join(pod.reports, "*", pattern)), key=os.path.getmtime)
    assert paths, pattern
    with open(paths[-1], encoding="utf-8") as handle:
        return json.load(handle)


def test_the_new_components_are_read_paired_and_compared_across_the_nodes(pod):
    rc, out = pod.playbook("site.yml", {"npuops_run_id": "stack-good", "version_check_python": PYTHON}, STAGE2)
    assert rc == 0, out[-4000:]
    report = _latest(pod, "stage2-version_check/versions.json")
    prints = report["fingerprints"]
    assert prints["node01"]["python"] == "3.11.6" and prints["node01"]["package:torch_npu"] == "2.8.0"
    assert prints["node01"]["cann_kernels"] == prints["node01"]["cann"]
    assert report["differences"] == []

    pod.node("node02", SIM, "fault", "set", "version", "--value",
             "cann_kernels=8.2.RC1,mindie=2.1.RC1,vllm=0.9.2,vllm_ascend=0.9.1,python=3.12.1")
    try:
        rc, out = pod.playbook("site.yml", {"npuops_run_id": "stack-bad", "version_check_python": PYTHON}, STAGE2)
        assert rc != 0, out[-4000:]
        # two nodes that disagree: the fingerprint names both; the pairings name node02 only
        assert "Stage 2 (version_check) gate failed on 2 node(s) (node01, node02)" in out, out[-4000:]
        report = _latest(pod, "stage2-version_check/versions.json")
        checks = sorted(set((f["host"], f["check"], f["severity"]) for f in report["findings"]))
        for expected in [("node02", "cann_kernels", "fail"), ("node02", "mindie_cann", "fail"),
                         ("node02", "vllm_ascend_vllm", "fail"), ("node02", "vllm_ascend_python", "fail"),
                         ("node02", "vllm_ascend_torch", "fail"), ("node02", "python", "fail"), ("node01", "python", "fail"),
                         ("node02", "mindie", "fail"), ("node02", "package:vllm_ascend", "fail")]:
            assert expected in checks, (expected, checks)
        messages = [f["msg"] for f in report["findings"]]
        assert not [f["msg"] for f in report["findings"]
                    if f["host"] == "node01" and f["severity"] == "fail" and "the nodes disagree" not in f["msg"]], messages
        assert any(m.startswith("node02: the CANN kernels package is 8.2.RC1 while the toolkit is ") for m in messages), messages
        assert ("node02: python is 3.12.1; the nodes disagree and no value is held by most of them "
                "(node01 3.11.6, node02 3.12.1)") in messages, messages
        assert any(m.startswith("node02: vLLM 0.9.2 with vLLM-Ascend 0.9.1, which is released for vLLM 0.9.1") for m in messages)
        assert any(m.startswith("node02: MindIE 2.1.RC1.B152 is built for CANN 8.2.RC1") for m in messages), messages
    finally:
        pod.node("node02", SIM, "fault", "clear", "version")
