"""diagnose.yml on the simulated PoD: faults injected on node02 leave plog lines there (tools/npu_sim/plog.py);
the summary names node02 with each code, its cause and fix, and nothing on node01."""

import re

FAULTS = (
    # (npu-sim fault set arguments, code the summary must name, words of its cause, words of its fix)
    (("link-stuck-down", "--device", "3"), "EI0006", "HCCL_CONNECT_TIMEOUT", "LINK_ERROR_INFO"),
    (("busy",), "EJ0001", "HCCP process", "wait 10 s"),
    (("health", "--device", "1", "--value", "Alarm"), "E?9999", "internal error", "msnpureport"),
)


def test_diagnose_names_node_code_cause_and_fix(pod):
    for argv, _code, _cause, _fix in FAULTS:
        pod.node("node02", "npu-sim", "fault", "set", *argv)
    try:
        rc, out = pod.playbook("diagnose.yml")
    finally:
        pod.node("node02", "npu-sim", "fault", "clear")
        pod.node("node02", "rm", "-rf", "/root/ascend/log/debug/plog")
    assert rc == 0, out
    for _argv, code, cause, fix in FAULTS:
        line = re.search(r'"%s: on ([^"]*)"' % re.escape(code), out)
        assert line, "%s missing from the summary:\n%s" % (code, out)
        assert "node02 only" in line.group(1) and "local fault" in line.group(1), line.group(0)
        block = out[line.start():]
        assert re.search(r'"  node node02: \d+ line', block), block
        assert cause in block.split('"  fix:')[0], block
        assert fix in block, block
    assert "node node01" not in out, out
