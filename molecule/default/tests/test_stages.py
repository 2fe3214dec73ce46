"""After site.yml: the reading stages set nothing; stage 4 set only the lossless intent; stage 5 wrote its file; stage 6
set the governor and installed the binding; stage 7 merged the serving settings; stage 8 and 9 read and measured."""

import json

HCCN = "/usr/local/Ascend/driver/tools/hccn_tool"
# stage 4 sets, per NPU, exactly these (the fresh simulated node has MTU 1500, no PFC, DSCP 33 on TC 2)
INTENT = [["-mtu", "-s", "size", "9000"], ["-pfc", "-s", "bitmap", "0,0,0,0,1,0,0,0"], ["-dscp_to_tc", "-s", "dscp", "33", "tc", "3"]]


def _calls(host):
    lines = host.check_output("/usr/local/sbin/npu-sim calls").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def test_the_stages_ran_the_tools(host):
    tools = {call["tool"] for call in _calls(host)}
    assert {"npu-smi", "hccn_tool", "numactl", "lscpu"} <= tools, tools


def test_only_stage_4_set_the_ports_each_intent_command_once_per_npu(host):
    sets = [call["argv"][1:] for call in _calls(host) if call["tool"] == "hccn_tool" and "-s" in call["argv"]]
    # converge set the intent once per NPU; the check run before it and the idempotence run after it set nothing
    expected = sorted(["-i", str(device)] + command for device in range(8) for command in INTENT)
    assert sorted(sets) == expected
    # stage 6 set the governor once (converge); the idempotence run found it set
    governor_sets = [call["argv"] for call in _calls(host) if call["tool"] == "cpupower" and "frequency-set" in call["argv"]]
    assert len(governor_sets) == 1 and "performance" in governor_sets[0], governor_sets


def test_every_port_holds_the_intent(host):
    for device in range(8):
        assert host.check_output("%s -i %d -mtu -g" % (HCCN, device)).strip() == "mtu:9000"
        assert "0 0 0 0 1 0 0 0" in host.check_output("%s -i %d -pfc -g" % (HCCN, device))


def test_stage_5_wrote_the_managed_env_file(host):
    env = host.file("/etc/profile.d/npuops-hccl.sh")
    assert env.mode == 0o644 and env.user == "root"
    text = env.content_string
    assert text.startswith("# managed by npuops.ascend")
    assert "export HCCL_RDMA_SL=4\n" in text and "export HCCL_RDMA_TC=132\n" in text
    assert "export HCCL_BUFFSIZE=200\n" in text
    loaded = host.check_output("sh -c '. /etc/profile.d/npuops-hccl.sh && echo $HCCL_IF_IP'")
    assert loaded == host.ansible.get_variables()["npuops_hccl_if_ip"]


def test_every_npu_is_healthy_and_idle_again(host):
    faults = json.loads(host.check_output("/usr/local/sbin/npu-sim fault list"))
    assert faults == []


def test_stage_6_bound_every_npu_and_runs_ranks_as_the_run_user(host):
    binding = json.loads(host.file("/var/lib/npuops/numa-bind.json").content_string)
    assert sorted(item["npu"] for item in binding["npus"]) == list(range(8))
    assert binding["run_user"] == "npuops"
    # NPU 0 and 1 of an Atlas 800T A2 sit on CPUs 144-167 (NUMA node 6)
    assert {item["npu"]: item["cpus"] for item in binding["npus"]}[0] == "144-167"
    env = host.check_output("/var/lib/npuops/bin/npu-bind 0 -- env")
    assert "NPU_SIM_NUMA_NODE=6" in env.splitlines() and "USER=npuops" in env.splitlines()
    assert "performance" in host.check_output("cpupower frequency-info -p")


def test_stage_7_merged_the_serving_settings_and_kept_the_rest(host):
    conf = host.file("/usr/local/Ascend/mindie/latest/mindie-service/conf/config.json")
    assert conf.mode == 0o640
    data = json.loads(conf.content_string)
    schedule = data["BackendConfig"]["ScheduleConfig"]
    assert (schedule["maxBatchSize"], schedule["maxPrefillBatchSize"], schedule["maxPrefillTokens"]) == (200, 50, 8192)
    assert data["BackendConfig"]["ModelDeployConfig"]["maxInputTokenLen"] == 4096
    # keys the settings did not name keep MindIE's defaults
    assert data["ServerConfig"]["port"] == 1025


def test_stage_8_read_its_own_dev_shm(host):
    shm = host.mount_point("/dev/shm")
    assert shm.exists and shm.filesystem == "tmpfs"
