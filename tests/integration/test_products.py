"""An inference host of Atlas 300I Duo cards (310P3, no RoCE port, no HCCS) through the whole site.yml: stage 0 reads
the NPUs and the host and skips the ports, saying why; stages 3 (HCCS bandwidth) and 4 (lossless RoCE) say they do
not apply and are recorded as skipped; stage 5 writes no HCCL_RDMA_* setting; nothing runs hccn_tool. A PoD that
declares another family than its nodes show stops at stage 0.

A 1-node PoD of its own (podctl --product atlas-300i-duo) on 127.0.13.1, beside the session's A2 PoD."""

import glob
import json
import os

import pytest

from conftest import _skip_reason, bring_up, take_down

PREFIX = os.environ.get("NPUOPS_IT_DUO_PREFIX", "127.0.13")
GROUP_VARS = """---
npuops_product_family: 310P
npuops_npus_per_node: 8
npuops_allow_loopback_if_ip: true
# the simulated nodes share the host's /etc and /usr/local/bin: stages 6 and 7 write under /var/lib/npuops
numa_bind_map_path: /var/lib/npuops/numa-bind.json
numa_bind_launcher_path: /var/lib/npuops/bin/npu-bind
mindie_config_vllm_dir: /var/lib/npuops/vllm
"""


@pytest.fixture(scope="module")
def duo(tmp_path_factory):
    reason = _skip_reason(PREFIX, 1)  # the session's A2 PoD may be up beside it, on another prefix
    if reason:
        pytest.skip(reason)
    pod = bring_up(str(tmp_path_factory.mktemp("duo")), PREFIX, 1, GROUP_VARS, product="atlas-300i-duo")
    try:
        yield pod
    finally:
        take_down(pod)


def _calls(pod):
    out = pod.node("node01", "/usr/local/sbin/npu-sim", "calls")
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def _latest(pod, pattern):
    paths = sorted(glob.glob(os.path.join(pod.reports, "*", pattern)), key=os.path.getmtime)
    assert paths, pattern
    with open(paths[-1], encoding="utf-8") as handle:
        return json.load(handle)


def test_site_yml_skips_stages_3_and_4_and_nothing_touches_hccn_tool(duo):
    with open(duo.inventory, encoding="utf-8") as handle:
        assert "npuops_npu_ports" not in handle.read()
    duo.node("node01", "/usr/local/sbin/npu-sim", "calls", "--clear")
    rc, out = duo.playbook("site.yml")
    assert rc == 0, out[-3000:]
    flat = " ".join(out.split())
    assert "Stage 4 (lossless RoCE) does not apply: the NPUs of node01 have no RoCE port for hccn_tool " \
           "(product family 310P, 310P3). Skipped." in flat
    assert "Stage 3 (intra-node HCCL bandwidth over HCCS) does not apply to node01: its chips are linked over PCIe only " \
           "(product family 310P). Skipped." in flat
    summary = _latest(duo, "summary.json")
    stages = summary["nodes"]["node01"]
    assert dict((key, stages[key]["status"]) for key in stages) == {
        "stage0": "passed", "stage1": "skipped", "stage2": "passed", "stage3": "skipped", "stage4": "skipped",
        "stage5": "passed", "stage6": "passed", "stage7": "passed", "stage8": "passed", "stage9": "skipped"}
    env = duo.node("node01", "cat", "/etc/profile.d/npuops-hccl.sh")
    assert "export HCCL_IF_IP=" in env and "HCCL_RDMA" not in env
    health = _latest(duo, "stage0-health_check/node01.json")
    product = health["npu"]["summary"]["product"]
    assert (product["family"], product["npus"], product["chips"], product["roce_ports"]) == ("310P", 4, 8, False)
    assert health["ports"]["skipped"] is True and "no RoCE port" in health["ports"]["msg"]
    assert [f for f in health["findings"] if f["severity"] == "fail"] == []
    assert [c for c in _calls(duo) if c["tool"] == "hccn_tool"] == []


def test_a_pod_declared_as_another_family_stops_at_stage_0(duo):
    rc, out = duo.playbook("site.yml", {"npuops_product_family": "310"}, ["--tags", "stage0,stage4"])
    flat = " ".join(out.split())
    assert rc == 2, out[-3000:]
    assert "npu-smi shows 310P3 chips (family 310P) but the PoD declares family 310 (npuops_product_family)" in flat
    assert "set npuops_product_family: 310P" in flat
    assert "Stage 4" not in flat


def test_a_family_with_ports_needs_the_ports_in_the_inventory(duo):
    rc, out = duo.playbook("site.yml", {"npuops_product_family": "A2"}, ["--tags", "stage0"])
    flat = " ".join(out.split())
    assert rc == 2, out[-3000:]
    assert "The inventory is not usable" in flat and "npuops_npu_ports" in flat


def test_an_unknown_family_is_refused_before_any_connection(duo):
    duo.node("node01", "/usr/local/sbin/npu-sim", "calls", "--clear")
    rc, out = duo.playbook("site.yml", {"npuops_product_family": "910X"}, ["--tags", "stage0"])
    assert rc == 2, out[-3000:]
    assert "npuops_product_family is 910X, not one of A2, A3, 910A, 310P, 310, 310B" in " ".join(out.split())
    assert _calls(duo) == []
