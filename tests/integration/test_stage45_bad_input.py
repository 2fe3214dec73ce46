"""Bad settings of stage 4 (roce_lossless) and stage 5 (hccl_env): each run stops with a message that names the
variable, the value and the allowed range (or the reason), and nothing changes on any node.

Each run is a playbook of the collection against a fresh, untuned 2-node simulated PoD (MTU 1500, no PFC, no HCCL
env file), so any change would show in the snapshot: the simulator's state file of every node (it holds every port
setting and no get writes it), the restore points and the env file. The cases are run in groups, the bad values of
several variables at once: a check reads every setting before it stops, so the one run must name each of them (and a
case whose message another hides is in a group of its own).
"""

import pytest

# (playbook, extra args, extra vars, [every text the output must contain])
ROCE = "roce_lossless.yml"
SITE = "site.yml"
STAGE4 = ["--tags", "stage4"]
STAGE5 = ["--tags", "stage5"]

CASES = {
    # ---- the PoD's lossless intent (group variables), checked from the inventory alone ----
    "priority-out-of-range": (ROCE, [], {"npuops_lossless_priority": 8},
                              ["npuops_lossless_priority 8 is outside 0-7: PFC has the 8 priorities 0 to 7"]),
    "priority-not-a-number": (ROCE, [], {"npuops_lossless_priority": "four"},
                              ["npuops_lossless_priority 'four' is not an integer from 0 to 7"]),
    "dscp-out-of-range": (ROCE, [], {"npuops_lossless_dscp": 64},
                          ["npuops_lossless_dscp 64 is outside 0-63: a DSCP has 6 bits"]),
    "tc-4-on-910b": (ROCE, [], {"npuops_lossless_tc": 4},
                     ["npuops_lossless_tc 4 is outside 0-3: the 910B has the traffic classes 0 to 3",
                      "tc 4 exits 10"]),
    "mtu-not-jumbo": (ROCE, [], {"npuops_mtu": 1500},
                      ["npuops_mtu 1500 is not a jumbo MTU", "accepts 4096 to 9702"]),
    "mtu-above-hccn-tool-range": (SITE, STAGE4, {"npuops_mtu": 9800},
                                  ["npuops_mtu 9800 is outside 68-9702: hccn_tool -mtu -s size accepts 68 to 9702"]),
    "dscp-map-tc-5": (ROCE, [], {"npuops_dscp_to_tc": [{"dscp": 33, "tc": 5}]},
                      ["npuops_dscp_to_tc", "maps DSCP 33 to tc 5, not a traffic class from 0 to 3"]),
    "dscp-map-moves-the-lossless-dscp": (ROCE, [], {"npuops_dscp_to_tc": [{"dscp": 33, "tc": 2}]},
                                         ["maps the lossless DSCP 33 to TC 2, not to the lossless TC 3"]),
    "rdma-tc-33-is-the-dscp": (ROCE, [], {"npuops_hccl_rdma_tc": 33},
                               ["npuops_hccl_rdma_tc 33 is the DSCP, not the ToS byte", "so 132 for DSCP 33",
                                "Must be a multiple of 4"]),
    "rdma-tc-not-multiple-of-4": (SITE, STAGE4, {"npuops_hccl_rdma_tc": 130},
                                  ["npuops_hccl_rdma_tc 130 is not a multiple of 4"]),
    "rdma-sl-not-the-pfc-priority": (ROCE, [], {"npuops_hccl_rdma_sl": 3},
                                     ["npuops_hccl_rdma_sl 3 is not the lossless priority 4", "so set 4"]),
    # ---- options of the roce_lossless role ----
    "addresses-mode": (ROCE, [], {"roce_lossless_addresses": "bogus"},
                       ["roce_lossless_addresses must be one of: check, apply, ignore, got: bogus"]),
    "steps-mode": (ROCE, [], {"roce_lossless_steps": "fast"},
                   ["roce_lossless_steps must be one of: together, stepwise, got: fast"]),
    "steps-mode-in-site": (SITE, STAGE4, {"roce_lossless_steps": "all-at-once"},
                           ["roce_lossless_steps must be one of: together, stepwise, got: all-at-once"]),
    "link-timeout-zero": (ROCE, [], {"roce_lossless_link_timeout": 0},
                          ["roce_lossless_link_timeout 0 is outside 1-3600 seconds"]),
    "link-timeout-words": (ROCE, [], {"roce_lossless_link_timeout": "soon"},
                           ["roce_lossless_link_timeout soon is not a whole number of seconds (1-3600)"]),
    "busbw-gate-above-100": (ROCE, [], {"roce_lossless_busbw_min_pct": 120},
                             ["roce_lossless_busbw_min_pct 120 is outside 1-100 (percent of the line rate)"]),
    "line-rate-negative": (SITE, STAGE4, {"roce_lossless_line_rate": -1},
                           ["roce_lossless_line_rate -1 is not a bandwidth in GB/s above 0"]),
    "pfc-pause-limit": (ROCE, [], {"roce_lossless_pfc_max_pause_ms_per_s": 5000},
                        ["roce_lossless_pfc_max_pause_ms_per_s 5000 is outside 1-1000"]),
    # ---- the switch side of the intent (group variables) and its options ----
    "ecn-min-above-max": (ROCE, [], {"npuops_ecn_min_bytes": 700000},
                          ["npuops_ecn_max_bytes 614400 is not above npuops_ecn_min_bytes 700000"]),
    "watchdog-action-reboot": (ROCE, [], {"npuops_pfc_watchdog_action": "reboot"},
                               ["npuops_pfc_watchdog_action 'reboot' is not a watchdog action: drop, forward or alert"]),
    "watchdog-detect-words": (SITE, STAGE4, {"npuops_pfc_watchdog_detect_ms": "fast"},
                              ["npuops_pfc_watchdog_detect_ms 'fast' is not an integer from 1 to 60000"]),
    "switch-family-unknown": (ROCE, [], {"npuops_switch_family": "juniper"},
                              ["npuops_switch_family 'juniper' is not a switch family: the families are huawei_ce_a, "
                               "huawei_ce_b, sonic, cumulus"]),
    "switches-not-dicts": (ROCE, [], {"npuops_switches": {"leaf-01": "sonic"}},
                           ["npuops_switches['leaf-01'] 'sonic' is not a dict of family, frame_size, headroom_mb, slot"]),
    "ce-b-priority-6": (ROCE, [], {"npuops_switch_family": "huawei_ce_b", "npuops_lossless_priority": 6},
                        ["leaf-01 (huawei_ce_b): lossless_priority 6 is outside 0-5 on huawei_ce_b"]),
    "ce-frame-below-mtu": (ROCE, [], {"npuops_switches": {"leaf-02": {"family": "huawei_ce_a", "frame_size": 9000}}},
                           ["leaf-02 (huawei_ce_a): frame_size 9000 is below the NPU MTU 9000 + 18"]),
    "sonic-watchdog-too-fast": (ROCE, [], {"npuops_switch_family": "sonic", "npuops_pfc_watchdog_detect_ms": 50},
                                ["(sonic): pfcwd_detect_ms 50 is outside 100-5000"]),
    "switch-check-mode": (ROCE, [], {"roce_lossless_switch_check": "maybe"},
                          ["roce_lossless_switch_check must be one of: fail, warn, off, got: maybe"]),
    # ---- the HCCL environment of stage 5 ----
    "buffsize-in-bytes": (SITE, STAGE5, {"hccl_env_buffsize": 2147483648},
                          ["hccl_env_buffsize 2147483648 is not a size in MB", "this looks like bytes",
                           "(2147483648 B = 2048 MB)", "largest usable value is 32768"]),
    "buffsize-zero": (SITE, STAGE5, {"hccl_env_buffsize": 0},
                      ["hccl_env_buffsize 0 is below 1: HCCL_BUFFSIZE is the buffer size in MB, 1 to 32768"]),
    "connect-timeout-low": (SITE, STAGE5, {"hccl_env_connect_timeout": 60},
                            ["hccl_env_connect_timeout 60 is outside 120-7200"]),
    "connect-timeout-high": (SITE, STAGE5, {"hccl_env_connect_timeout": 9000},
                             ["hccl_env_connect_timeout 9000 is outside 120-7200"]),
    "base-port-privileged": (SITE, STAGE5, {"hccl_env_if_base_port": 80},
                             ["hccl_env_if_base_port 80 is outside 1024-65520"]),
    "exec-timeout-finer-than-10-ms": (SITE, STAGE5, {"hccl_env_op_expansion_mode": "AIV", "hccl_env_exec_timeout": 0.005},
                                      ["hccl_env_exec_timeout 0.005 has more than two decimals",
                                       "a precision of 10 ms (0.01 s) in AIV mode"]),
    "expansion-mode-unknown": (SITE, STAGE5, {"hccl_env_op_expansion_mode": "FAST"},
                               ["hccl_env_op_expansion_mode 'FAST' is not an HCCL_OP_EXPANSION_MODE: the modes are AI_CPU, "
                                "AIV, HOST, HOST_TS"]),
    "algo-reduce-scatter": (SITE, STAGE5, {"hccl_env_algo": "level0:ring;level1:reduce_scatter"},
                            ["hccl_env_algo 'level0:ring;level1:reduce_scatter' is not a valid HCCL_ALGO",
                             "level0 (inside a server) takes only NA", "reduce_scatter is an operator, not an algorithm"]),
    "socket-ifname-lo": (SITE, STAGE5, {"hccl_env_socket_ifname": "lo"},
                         ["hccl_env_socket_ifname 'lo' selects lo, the loopback interface"]),
    "socket-ifname-docker": (SITE, STAGE5, {"hccl_env_socket_ifname": "docker0"},
                             ["hccl_env_socket_ifname 'docker0' selects docker0"]),
    "if-ip-is-an-npu-port": (SITE, STAGE5, {"hccl_env_if_ip": "10.20.3.11"},
                             ["hccl_env_if_ip '10.20.3.11' is the address of the RoCE port of NPU 3",
                              "HCCL_IF_IP is a host NIC address"]),
    "env-rdma-tc-33": (SITE, STAGE5, {"hccl_env_rdma_tc": 33},
                       ["hccl_env_rdma_tc 33 is the DSCP, not the ToS byte", "so 132 for DSCP 33"]),
    "env-rdma-sl-8": (SITE, STAGE5, {"hccl_env_rdma_sl": 9},
                      ["hccl_env_rdma_sl 9 is outside 0-7"]),
    "task-queue-3": (SITE, STAGE5, {"hccl_env_task_queue_enable": 3},
                     ["hccl_env_task_queue_enable 3 is not 0, 1 or 2"]),
    "intra-roce-on-800t": (SITE, STAGE5, {"hccl_env_intra_roce_enable": 1},
                           ["hccl_env_intra_roce_enable 1 is not for Atlas 800T A2",
                            "applies only to Atlas 300T Pro, Atlas 200T A2 Box16 and Atlas A3"]),
    "deterministic-maybe": (SITE, STAGE5, {"hccl_env_deterministic": "maybe"},
                            ["hccl_env_deterministic 'maybe' is not false, true or strict"]),
    "alloc-conf-split-too-small": (SITE, STAGE5, {"hccl_env_pytorch_npu_alloc_conf": "max_split_size_mb:10"},
                                   ["hccl_env_pytorch_npu_alloc_conf 'max_split_size_mb:10' is not a valid "
                                    "PYTORCH_NPU_ALLOC_CONF", "max_split_size_mb takes an integer number of MB above 20"]),
}


# The cases run together: each group is one run with the extra vars of all of its cases (the same playbook and
# arguments), whose output must hold the texts of every case. A variable is in one case of a group at most.
GROUPS = {
    # the PoD's intent (validate_inventory, before any play on the nodes)
    "roce-intent-numbers": ["priority-out-of-range", "dscp-out-of-range", "tc-4-on-910b", "mtu-not-jumbo"],
    "roce-intent-pairs": ["rdma-sl-not-the-pfc-priority", "dscp-map-tc-5", "rdma-tc-33-is-the-dscp"],
    "roce-intent-words": ["priority-not-a-number", "dscp-map-moves-the-lossless-dscp"],
    # the switch side of the intent, then the options of the role
    "roce-switch": ["ecn-min-above-max", "watchdog-action-reboot", "switches-not-dicts"],
    "roce-switch-family": ["switch-family-unknown"],
    "roce-switch-ce-b": ["ce-b-priority-6"],
    "roce-switch-sonic": ["sonic-watchdog-too-fast", "ce-frame-below-mtu"],
    "roce-role-a": ["link-timeout-zero", "busbw-gate-above-100"],
    "roce-role-b": ["link-timeout-words", "pfc-pause-limit"],
    "roce-options": ["addresses-mode", "steps-mode", "switch-check-mode"],
    # site.yml with the tags of stage 4 and of stage 5
    "site-stage4-intent": ["mtu-above-hccn-tool-range", "rdma-tc-not-multiple-of-4"],
    "site-stage4-switch": ["watchdog-detect-words"],
    "site-stage4-values": ["line-rate-negative"],
    "site-stage4-options": ["steps-mode-in-site"],
    "site-stage5-a": ["buffsize-in-bytes", "connect-timeout-low", "base-port-privileged", "exec-timeout-finer-than-10-ms",
                      "algo-reduce-scatter", "socket-ifname-lo", "env-rdma-tc-33", "task-queue-3",
                      "intra-roce-on-800t", "deterministic-maybe", "alloc-conf-split-too-small"],
    "site-stage5-b": ["buffsize-zero", "connect-timeout-high", "expansion-mode-unknown", "socket-ifname-docker",
                      "if-ip-is-an-npu-port", "env-rdma-sl-8"],
}


def test_every_case_is_in_one_group():
    grouped = [case for cases in GROUPS.values() for case in cases]
    assert sorted(grouped) == sorted(CASES) and len(grouped) == len(set(grouped))
    for name, cases in GROUPS.items():
        assert len({CASES[case][0] for case in cases}) == 1, name          # one playbook
        assert len({tuple(CASES[case][1]) for case in cases}) == 1, name   # the same arguments
        names = [var for case in cases for var in CASES[case][2]]
        assert len(names) == len(set(names)), name                         # a variable once


@pytest.fixture(scope="module")
def untouched(pod):
    """The snapshot of the fresh PoD, taken once: every run must leave it exactly so."""
    return pod.snapshot()


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_bad_settings_stop_before_any_change(pod, untouched, group):
    cases = GROUPS[group]
    playbook, args = CASES[cases[0]][0], CASES[cases[0]][1]
    extra_vars = {}
    for case in cases:
        extra_vars.update(CASES[case][2])
    rc, out = pod.playbook(playbook, extra_vars, args)
    assert rc != 0, out[-3000:]
    missing = dict((case, [text for text in CASES[case][3] if text not in out]) for case in cases)
    missing = dict((case, texts) for case, texts in missing.items() if texts)
    assert not missing, "missing %s in:\n%s" % (missing, out[-3000:])
    said = ("nothing was changed on any node", "nothing was run on the nodes", "was not written on any node",
            "validation of arguments failed")
    assert any(text in out.lower() for text in said), out[-3000:]
    assert "PLAY [Stage 0" not in out or "--tags" in args
    assert pod.snapshot() == untouched


def test_the_same_runs_pass_with_good_settings(pod, untouched):
    """The cases above did not fail for another reason: with the inventory's settings the dry run of stages 4 and 5
    passes both gates (stage 5 checked against the ports stage 4 would set) and shows what it would write."""
    rc, out = pod.playbook(SITE, None, ["--tags", "stage4,stage5", "--check", "--diff"])
    assert rc == 0, out[-3000:]
    assert "+mtu: 9000" in out and "+pfc_priorities: [4]" in out   # the diffs of stage 4
    assert "+export HCCL_BUFFSIZE=200" in out                      # the diff of the file stage 5 would write
    assert "stage5 hccl_env       passed" in out
    assert pod.snapshot() == untouched                             # check mode: still nothing changed
