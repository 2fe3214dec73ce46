"""diagnose.yml on the simulated PoD: injected faults leave plog lines on their node (tools/npu_sim/plog.py); the
summary says how far each code reaches - a link down on one card of node02 is that card's (EI0006), the HCCP error of
every NPU of node02 is the node's (EJ0001 names no card), a driver error of one card is that card's, a timeout on every
node is PoD-wide - with its cause and fix, and names no other node for the local faults."""

import re

from conftest import NODES

LOCAL = (
    # (npu-sim fault set arguments on node02, code, headline after "CODE: on ", words of its cause, words of its fix)
    (("link-stuck-down", "--device", "3"), "EI0006", "card 3 of node02 only (1/2 nodes) - a fault of that card or of what only it uses",
     "HCCL_CONNECT_TIMEOUT", "LINK_ERROR_INFO"),
    (("busy",), "EJ0001", "node02 only (1/2 nodes), no card named in the logs - a fault of that node",
     "HCCP process", "wait 10 s"),
    (("health", "--device", "1", "--value", "Alarm"), "E?9999", "card 1 of node02 only (1/2 nodes) - a fault of that card",
     "internal error", "msnpureport"),
)


def _summary_block(out, code):
    line = re.search(r'"%s: on ([^"]*)"' % re.escape(code), out)
    assert line, "%s missing from the summary:\n%s" % (code, out)
    rest = out[line.end():]
    following = re.search(r'"(?!  )[^"]*: on ', rest)
    return line.group(1), rest[:following.start()] if following else rest


def _clean(pod):
    """No fault and no plog line left on any node by an earlier test of the session."""
    for node in NODES:
        pod.node(node, "npu-sim", "fault", "clear")
        pod.node(node, "rm", "-rf", "/root/ascend/log/debug/plog")


def test_diagnose_says_card_node_or_pod_with_cause_and_fix(pod):
    _clean(pod)
    for argv, *_rest in LOCAL:
        pod.node("node02", "npu-sim", "fault", "set", *argv)
    try:
        rc, out = pod.playbook("diagnose.yml")
        assert rc == 0, out
        for _argv, code, headline, cause, fix in LOCAL:
            where, block = _summary_block(out, code)
            assert where.startswith(headline), (where, out)
            assert re.search(r'"  node node02: \d+ line', block), block
            assert cause in block.split('"  fix:')[0], block
            assert fix in block, block
        assert "node node01" not in out, out
        # then a link down on card 5 of every node: EI0006 on every node is PoD-wide, though each line names a card
        for node in NODES:
            pod.node(node, "npu-sim", "fault", "set", "link-stuck-down", "--device", "5")
        rc, out = pod.playbook("diagnose.yml")
        assert rc == 0, out
    finally:
        for node in NODES:
            pod.node(node, "npu-sim", "fault", "clear")
            pod.node(node, "rm", "-rf", "/root/ascend/log/debug/plog")
    where, block = _summary_block(out, "EI0006")
    assert where.startswith("every node (2/2) - a PoD-wide cause"), (where, out)
    assert re.search(r'"  node node01: \d+ line\(s\), card 5, first ', block), block
    assert re.search(r'"  node node02: \d+ line\(s\), cards 3, 5, first ', block), block
    assert "HCCL_CONNECT_TIMEOUT" in block
    # the codes of node02 alone stay local
    assert _summary_block(out, "EJ0001")[0].startswith("node02 only"), out


def test_many_newer_junk_files_do_not_hide_the_plog_and_what_was_not_read_is_said(pod):
    """300 files newer than the plog of a link fault on node02: the plog is read first (the CANN logs before the
    rest), and the summary names node02 as not read in full instead of calling its logs clean."""
    _clean(pod)
    pod.node("node02", "npu-sim", "fault", "set", "link-stuck-down", "--device", "3")
    try:
        pod.node("node02", "sh", "-c", "touch -d 2020-01-01 /root/ascend/log/debug/plog/*.log && "
                 "mkdir -p /root/ascend/log/debug/many && cd /root/ascend/log/debug/many && "
                 "i=0; while [ $i -lt 300 ]; do echo junk > f$i; i=$((i+1)); done")
        rc, out = pod.playbook("diagnose.yml")
        assert rc == 0, out
        where, block = _summary_block(out, "EI0006")
        assert where.startswith("card 3 of node02 only (1/2 nodes)"), (where, out)
        assert re.search(r'"not every log file was read on node02: read 200 of 30\d files \(the CANN logs first, then the '
                         r'newest\): raise max_files or narrow paths"', out), out
        # with the budget raised, everything is read and nothing is said about it
        rc, out = pod.playbook("diagnose.yml", {"npuops_diagnose_max_files": 1000})
        assert rc == 0, out
        assert "not every log file was read" not in out, out
        assert _summary_block(out, "EI0006")[0].startswith("card 3 of node02 only"), out
    finally:
        pod.node("node02", "npu-sim", "fault", "clear")
        pod.node("node02", "rm", "-rf", "/root/ascend/log/debug/plog", "/root/ascend/log/debug/many")
