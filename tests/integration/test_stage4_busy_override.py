"""The busy guard of the change window: refused by default, changed anyway with roce_lossless_allow_busy and a
loud warning per process (dry-run here, so the PoD stays as it is for the other tests)."""

import pytest

SIM = "/usr/local/sbin/npu-sim"


@pytest.fixture
def busy_node02(pod):
    pod.node("node02", SIM, "fault", "set", "process", "--device", "3", "--value", "python:30780")
    try:
        yield
    finally:
        pod.node("node02", SIM, "fault", "clear", "process")


def test_a_busy_node_refuses_the_whole_window(pod, busy_node02):
    before = pod.snapshot()
    rc, out = pod.playbook("roce_lossless.yml")
    assert rc == 2, out[-3000:]
    assert "Stage 4 refused the change of node01, node02 before anything was set on them: node02 NPU 3: pid" in out
    assert "(python) runs on the NPU: its RDMA connections break while the links flap; stop the job first, or set " \
           "roce_lossless_allow_busy=true. Nothing was changed on any node." in out
    assert "PLAY [Stage 4 change window - change the NPU ports batch by batch]" not in out
    assert pod.snapshot() == before


def test_allow_busy_goes_on_with_a_warning_per_process(pod, busy_node02):
    before = pod.snapshot()
    rc, out = pod.playbook("roce_lossless.yml", {"roce_lossless_allow_busy": True}, ["--check"])
    assert rc == 0, out[-3000:]
    assert "WARNING node02 NPU 3: pid" in out
    assert "changing it anyway because roce_lossless_allow_busy=true" in out
    assert "Change ticket (roce_lossless): 1 node(s) of 1 change, 8 port(s), 8 link flap(s)" in out
    assert pod.snapshot() == before
