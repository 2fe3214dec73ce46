"""Stage 7 on the simulated PoD: MindIE config.json converge, idempotence, check mode, a refused setting, and the
vLLM-Ascend launch files."""

import hashlib
import json
import os
import re
import shutil

import pytest
from npu_sim.serving import ServingSim

from conftest import NODES, REPO

PLAYBOOK = "../tests/integration/playbooks/stage7.yml"
DEFAULT = os.path.join(REPO, "tests", "unit", "fixtures", "mindie", "config_default.json")
CONF = os.path.join("files", "Ascend", "mindie", "latest", "mindie-service", "conf", "config.json")
SETTINGS = {"maxBatchSize": 64, "maxPrefillTokens": 16384, "maxInputTokenLen": 8192, "maxSeqLen": 16384,
            "worldSize": 8, "npuDeviceIds": [[0, 1, 2, 3, 4, 5, 6, 7]], "httpsEnabled": False}


def conf_path(pod, node):
    return os.path.join(pod.node_dir(node), CONF)


@pytest.fixture(scope="module")
def mindie(pod):
    """The default config.json on every node (only where it is missing)."""
    for node in NODES:
        path = conf_path(pod, node)
        if not os.path.exists(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            shutil.copyfile(DEFAULT, path)
            os.chmod(path, 0o640)
    return pod


def digests(pod):
    out = {}
    for node in NODES:
        with open(conf_path(pod, node), "rb") as handle:
            out[node] = hashlib.sha256(handle.read()).hexdigest()
    return out


def test_converge_check_mode_and_idempotence(mindie):
    pod = mindie
    before = digests(pod)
    rc, out = pod.playbook(PLAYBOOK, {"mindie_config_settings": SETTINGS}, ["--check", "--diff"])
    assert rc == 0, out[-4000:]
    assert '"maxBatchSize": 64' in out
    assert digests(pod) == before

    rc, out = pod.playbook(PLAYBOOK, {"mindie_config_settings": SETTINGS})
    assert rc == 0, out[-4000:]
    assert "TASK [npuops.ascend.mindie_config : Check the gate on every node of the PoD at stage 7 (mindie_config)] ***\n" \
           "ok: [node01]" in out, out[-4000:]
    reports = [os.path.join(root, name) for root, _dirs, names in os.walk(pod.reports) for name in names
               if root.endswith("stage7-mindie_config")]
    assert any(path.endswith("mindie_config.md") for path in reports), reports
    for node in NODES:
        with open(conf_path(pod, node)) as handle:
            doc = json.load(handle)
        assert doc["BackendConfig"]["ScheduleConfig"]["maxBatchSize"] == 64
        assert doc["BackendConfig"]["ModelDeployConfig"]["maxInputTokenLen"] == 8192
        assert doc["BackendConfig"]["ModelDeployConfig"]["ModelConfig"][0]["worldSize"] == 8
        assert doc["BackendConfig"]["npuDeviceIds"] == [[0, 1, 2, 3, 4, 5, 6, 7]]
        assert doc["ServerConfig"]["httpsEnabled"] is False
        assert doc["ServerConfig"]["tlsCaFile"] == ["ca.pem"]          # untouched keys are kept
        assert os.stat(conf_path(pod, node)).st_mode & 0o777 == 0o640
    written = digests(pod)
    assert written != before

    rc, out = pod.playbook(PLAYBOOK, {"mindie_config_settings": SETTINGS})
    assert rc == 0, out[-4000:]
    assert "changed=0" in out and "changed=1" not in out and "changed=2" not in out, out[-3000:]
    assert digests(pod) == written

    rc, out = pod.playbook(PLAYBOOK, {"mindie_config_settings": dict(SETTINGS, maxBatchSize=100)}, ["--check"])
    assert rc == 0, out[-4000:]
    assert digests(pod) == written


def test_a_setting_against_the_file_stops_at_the_gate_and_writes_nothing(mindie):
    pod = mindie
    before = digests(pod)
    # maxPrefillTokens stays 16384 (or 8192) in the file: 32768 breaks maxPrefillTokens >= maxInputTokenLen
    rc, out = pod.playbook(PLAYBOOK, {"mindie_config_settings": {"maxInputTokenLen": 32768}})
    assert rc != 0, out[-4000:]
    assert "is less than maxInputTokenLen 32768 (maxPrefillTokens from the file): MindIE needs maxPrefillTokens >= " \
           "maxInputTokenLen" in out
    assert "Stage 7" in out
    assert digests(pod) == before


def test_a_bad_setting_stops_before_any_connection(mindie):
    pod = mindie
    before = digests(pod)
    rc, out = pod.playbook(PLAYBOOK, {"mindie_config_settings": {"maxPreemptCount": 300, "maxBatchSize": 200,
                                                                 "cpuMemSize": 5}})
    assert rc != 0, out[-4000:]
    assert "so nothing was written on any node: node01: maxPreemptCount 300 is more than maxBatchSize 200: MindIE " \
           "needs maxPreemptCount <= maxBatchSize" in out
    assert digests(pod) == before


def test_vllm_engine_writes_its_launch_and_refuses_device_npu(mindie):
    pod = mindie
    before = digests(pod)
    # /var/lib/npuops is per node in the simulated PoD (/etc is the host's)
    vllm = {"mindie_config_engine": "vllm", "mindie_config_service": "qwen", "mindie_config_vllm_dir": "/var/lib/npuops/vllm",
            "mindie_config_vllm_model": "/data/weights/qwen2.5-7b",
            "mindie_config_vllm_args": {"tensor-parallel-size": 8, "max-model-len": 32768},
            "mindie_config_vllm_env": {"TASK_QUEUE_ENABLE": 1}}
    files = dict((node, os.path.join(pod.node_dir(node), "npuops", "vllm")) for node in NODES)

    rc, out = pod.playbook(PLAYBOOK, dict(vllm, mindie_config_vllm_args={"device": "npu"}))
    assert rc != 0, out[-4000:]
    assert "node01: mindie_config_vllm_args device: --device is gone from vLLM: deprecated in vLLM PR #18399" in out
    assert not any(os.path.exists(path) for path in files.values())

    rc, out = pod.playbook(PLAYBOOK, dict(vllm, mindie_config_settings={"maxBatchSize": 64}))
    assert rc != 0, out[-4000:]
    assert "service qwen is configured for both engines" in out
    assert not any(os.path.exists(path) for path in files.values())

    rc, out = pod.playbook(PLAYBOOK, vllm)
    assert rc == 0, out[-4000:]
    for node in NODES:
        script = pod.node(node, "cat", "/var/lib/npuops/vllm/vllm-qwen.sh")
        assert script.rstrip().endswith(
            "exec vllm serve /data/weights/qwen2.5-7b --tensor-parallel-size 8 --max-model-len 32768 \"$@\"")
        assert ". /var/lib/npuops/vllm/vllm-qwen.env" in script
        assert "--device" not in script
        assert pod.node(node, "cat", "/var/lib/npuops/vllm/vllm-qwen.env").splitlines()[1] == "TASK_QUEUE_ENABLE=1"
        assert pod.node(node, "stat", "-c", "%a", "/var/lib/npuops/vllm/vllm-qwen.env").strip() == "640"
    rc, out = pod.playbook(PLAYBOOK, vllm)
    assert rc == 0 and "changed=0" in out and "changed=1" not in out, out[-3000:]
    assert digests(pod) == before


def test_auto_npu_mem_size_from_the_free_hbm_dry_run(mindie):
    pod = mindie
    before = digests(pod)
    rc, out = pod.playbook(PLAYBOOK, {"mindie_config_settings": {"maxBatchSize": 100}, "mindie_config_npu_mem_size": "auto",
                                      "mindie_config_weights_gb": 10}, ["--check", "--diff"])
    assert rc == 0, out[-4000:]
    sizes = re.findall(r'^\+\s+"npuMemSize": (\d+),$', out, re.M)
    # 64 GB NPUs of the simulator, weights 10 GB, reserve 4 GB: a positive size per node
    assert len(sizes) == 2 and all(int(size) > 0 for size in sizes), out[-4000:]
    assert digests(pod) == before


# One simulated service per node (tools/npu_sim/serving.py) on the host's loopback, which the simulated nodes share:
# each node's sweep loads its own service, so one node's requests never count in the other's concurrency.
SERVE_HOST = os.environ.get("NPUOPS_IT_SERVE_HOST", "127.0.0.1")


def _sweep_vars(sims, **more):
    """Extra vars that point each node's sweep at its own service."""
    return dict({"mindie_config_settings": dict(SETTINGS, modelName="qwen-sim"),
                 "npuops_it_serving": dict((node, sim.endpoint) for node, sim in sims.items()),
                 "mindie_config_bench_endpoint": "{{ npuops_it_serving[inventory_hostname] }}",
                 "mindie_config_bench_requests": 4, "mindie_config_bench_max_tokens": 5}, **more)


def _latest(pod, name):
    found = sorted((os.path.join(root, item) for root, _dirs, names in os.walk(pod.reports) for item in names
                    if item == name and root.endswith("stage7-mindie_config")), key=os.path.getmtime)
    with open(found[-1]) as handle:
        return handle.read()


def test_load_sweep_against_a_running_service_is_reported_and_judged(mindie):
    pod = mindie
    # the engine runs 2 requests at full speed and shares itself beyond: tokens/s double from 1 to 2, then hold
    sims = dict((node, ServingSim(SERVE_HOST, model="qwen-sim", token_ms=40, prefill_ms=40, saturation=2).start())
                for node in NODES)
    try:
        rc, out = pod.playbook(PLAYBOOK, _sweep_vars(sims, mindie_config_bench_concurrency=[1, 2, 4]))
    finally:
        for sim in sims.values():
            sim.stop()
    assert rc == 0, out[-4000:]
    # each node swept its own endpoint with the served model name of its settings: 3 levels x 4 requests
    for sim in sims.values():
        assert sim.calls == [("/v1/completions", "qwen-sim", 5)] * 12
    text = _latest(pod, "mindie_config.md")
    assert "## Load sweep" in text and "### Judgement" in text
    rows = [line for line in text.splitlines() if re.match(r"^\| node0[12] \| [124] \| 4 / 0 \|", line)]
    assert len(rows) == 3 * len(NODES), text
    for node in NODES:
        judged = json.loads(_latest(pod, "%s.json" % node))["sweep_judgement"]
        # 2 requests x 5 tokens per 200 ms at saturation: 50 tokens/s in the model, less the client's overhead
        assert judged["knee"] == 2 and 35 <= judged["saturation_tokens_per_s"] <= 55, judged
        assert judged["drops"] == [] and "knee at concurrency 2: the next level (4) gains" in judged["summary"]
        assert re.search(r"^\| %s \| 2 \| [\d.]+ \| 1: " % node, text, re.M), text

    rc, out = pod.playbook(PLAYBOOK, {"mindie_config_settings": SETTINGS})
    assert rc == 0 and "Load sweep skipped: mindie_config_bench_endpoint is not set" in out, out[-3000:]


def test_a_heavy_tail_fails_the_gate_with_the_p99_finding_of_node_and_level(mindie):
    pod = mindie
    # every 4th request waits 400 ms before the engine takes it: one of the 4 requests of each level (about 100 ms)
    sims = dict((node, ServingSim(SERVE_HOST, model="qwen-sim", token_ms=20, prefill_ms=20, tail_every=4,
                                  tail_ms=400).start()) for node in NODES)
    try:
        rc, out = pod.playbook(PLAYBOOK, _sweep_vars(sims, mindie_config_bench_concurrency=[1, 4],
                                                     mindie_config_bench_p99_severity="fail"))
    finally:
        for sim in sims.values():
            sim.stop()
    assert rc != 0, out[-4000:]
    for node in NODES:
        for level in (1, 4):
            assert "%s: the load sweep of %s: at concurrency %d the P99 latency " % (node, sims[node].endpoint, level) \
                in out, out[-4000:]
    assert "more than 2 x (threshold: the method, stage 7 verification, P99 less than 2 x P50" in out


SIM = "/usr/local/sbin/npu-sim"


def test_a_link_at_the_config_path_is_refused_and_left_as_it_is(mindie):
    pod = mindie
    path = conf_path(pod, "node01")
    conf_dir = os.path.dirname(path)
    secret = os.path.join(pod.node_dir("node01"), "files", "root-only.json")
    with open(secret, "w") as handle:
        handle.write('{"auths": {"registry.example.com": {"auth": "c2VjcmV0"}}}')
    os.chmod(secret, 0o600)
    real = path + ".real"
    os.rename(path, real)
    os.symlink(secret, path)
    listing = sorted(os.listdir(conf_dir))
    try:
        rc, out = pod.playbook(PLAYBOOK, {"mindie_config_settings": {"maxBatchSize": 64}, "mindie_config_owner": "nobody"})
        assert rc != 0, out[-4000:]
        # the node's own view of the path (/usr/local/Ascend/... is bind-mounted from files/Ascend)
        assert "config.json on node01: is a symbolic link to " in out and "Point path (role: mindie_config_path) at" in out
        assert os.path.islink(path) and os.readlink(path) == secret
        assert sorted(os.listdir(conf_dir)) == listing          # no backup, no temporary file
        assert os.stat(secret).st_uid == 0 and os.stat(secret).st_mode & 0o777 == 0o600
        with open(secret) as handle:
            text = handle.read()
        assert "c2VjcmV0" in text and "BackendConfig" not in text
    finally:
        os.unlink(path)
        os.rename(real, path)
        os.unlink(secret)


def test_vllm_secrets_stay_out_of_argv_reports_and_the_diff(mindie):
    pod = mindie
    key, token = "sk-SECRET-APIKEY-123", "hf_SECRETTOKEN456"
    vllm = {"mindie_config_engine": "vllm", "mindie_config_service": "qwen", "mindie_config_vllm_dir": "/var/lib/npuops/vllm",
            "mindie_config_vllm_model": "/data/weights/qwen2.5-7b",
            "mindie_config_vllm_args": {"tensor-parallel-size": 8, "api-key": key},
            "mindie_config_vllm_env": {"TASK_QUEUE_ENABLE": 2, "HF_TOKEN": token}}
    try:
        rc, out = pod.playbook(PLAYBOOK, vllm, ["--diff"])
        assert rc == 0, out[-4000:]
        assert key not in out and token not in out, "a secret is in the output"
        assert "/var/lib/npuops/vllm/vllm-qwen.secrets was written: HF_TOKEN=<redacted>, VLLM_API_KEY=<redacted>" in out
        assert "+TASK_QUEUE_ENABLE=2" in out              # the diff of the rest is still shown
        for node in NODES:
            script = pod.node(node, "cat", "/var/lib/npuops/vllm/vllm-qwen.sh")
            exec_line = [line for line in script.splitlines() if line.startswith("exec ")]
            assert exec_line == ['exec vllm serve /data/weights/qwen2.5-7b --tensor-parallel-size 8 "$@"'], script
            assert ". /var/lib/npuops/vllm/vllm-qwen.secrets" in script
            assert key not in pod.node(node, "cat", "/var/lib/npuops/vllm/vllm-qwen.env")
            secrets = pod.node(node, "cat", "/var/lib/npuops/vllm/vllm-qwen.secrets")
            assert "VLLM_API_KEY=%s" % key in secrets and "HF_TOKEN=%s" % token in secrets
            assert pod.node(node, "stat", "-c", "%a %U", "/var/lib/npuops/vllm/vllm-qwen.secrets").split() == ["640", "root"]
        leaked = []
        for root, _dirs, names in os.walk(pod.reports):
            for name in names:
                with open(os.path.join(root, name), "rb") as handle:
                    data = handle.read()
                if key.encode() in data or token.encode() in data:
                    leaked.append(os.path.join(root, name))
        assert leaked == []
        records = sorted((os.path.join(root, name) for root, _dirs, names in os.walk(pod.reports) for name in names
                          if name == "node01.json" and root.endswith("stage7-mindie_config")), key=os.path.getmtime)
        with open(records[-1]) as handle:
            record = json.load(handle)
        assert record["vllm_env"] == {"HF_TOKEN": "<redacted>", "TASK_QUEUE_ENABLE": "2", "VLLM_API_KEY": "<redacted>"}
        assert record["vllm_argv"] == ["vllm", "serve", "/data/weights/qwen2.5-7b", "--tensor-parallel-size", "8"]

        rc, out = pod.playbook(PLAYBOOK, vllm, ["--diff"])
        assert rc == 0 and "changed=0" in out and "changed=1" not in out, out[-3000:]
        assert key not in out and token not in out

        # without a secret the secrets file goes, and the script no longer sources it
        rc, out = pod.playbook(PLAYBOOK, dict(vllm, mindie_config_vllm_args={"tensor-parallel-size": 8},
                                              mindie_config_vllm_env={"TASK_QUEUE_ENABLE": 1}))
        assert rc == 0, out[-3000:]
        for node in NODES:
            assert ".secrets" not in pod.node(node, "cat", "/var/lib/npuops/vllm/vllm-qwen.sh")
            assert not os.path.exists(os.path.join(pod.node_dir(node), "npuops", "vllm", "vllm-qwen.secrets"))
    finally:
        for node in NODES:
            shutil.rmtree(os.path.join(pod.node_dir(node), "npuops", "vllm"), ignore_errors=True)


def test_auto_npu_mem_size_is_kept_while_the_service_runs(mindie):
    pod = mindie
    auto = {"mindie_config_settings": {"maxBatchSize": 100}, "mindie_config_npu_mem_size": "auto",
            "mindie_config_weights_gb": 10}
    saved = dict((node, open(conf_path(pod, node), "rb").read()) for node in NODES)
    try:
        rc, out = pod.playbook(PLAYBOOK, auto)
        assert rc == 0, out[-4000:]
        sizes = dict((node, json.load(open(conf_path(pod, node)))["BackendConfig"]["ModelDeployConfig"]["ModelConfig"][0]
                      ["npuMemSize"]) for node in NODES)
        assert all(size > 0 for size in sizes.values()), sizes
        written = digests(pod)

        # the service starts: its KV cache takes 40 GB of HBM on every NPU of the instance
        for node in NODES:
            for npu in range(8):
                pod.node(node, SIM, "fault", "set", "process", "--device", str(npu), "--value", "mindieservice:40960")
        rc, out = pod.playbook(PLAYBOOK, auto)
        assert rc == 0, out[-4000:]
        assert "changed=0" in out and "changed=1" not in out, out[-3000:]
        assert digests(pod) == written
        reports = sorted((os.path.join(root, name) for root, _dirs, names in os.walk(pod.reports) for name in names
                          if name == "mindie_config.md"), key=os.path.getmtime)
        with open(reports[-1]) as handle:
            text = handle.read()
        assert "| node01 | %d | npuMemSize %d kept from config.json: NPU 0, 1, 2, 3, 4, 5, 6, 7 run processes (pid " \
               % (sizes["node01"], sizes["node01"]) in text, text

        # no value to keep (MindIE's default -1): refused on every node before anything is written
        for node in NODES:
            with open(conf_path(pod, node), "wb") as handle:
                handle.write(saved[node])
        before = digests(pod)
        rc, out = pod.playbook(PLAYBOOK, auto)
        assert rc != 0, out[-4000:]
        assert "Stage 7 stopped before anything was written on any node: node01: npuMemSize auto cannot be computed now: " \
               "NPU 0, 1, 2, 3, 4, 5, 6, 7 run processes (pid " in out
        assert "and config.json holds npuMemSize -1 (no value to keep)" in out
        assert digests(pod) == before
    finally:
        for node in NODES:
            pod.node(node, SIM, "fault", "clear", "process")
            with open(conf_path(pod, node), "wb") as handle:
                handle.write(saved[node])
