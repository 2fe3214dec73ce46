"""Helpers and fixtures for the simulator tests: capture extraction, state building, running the tools."""

import os
import subprocess
import sys

import pytest

from npu_sim import node as node_mod
from npu_sim import statefile
from npu_sim.__main__ import run_tool

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CAPTURES = os.path.join(REPO, "tests", "fixtures", "captures")
TOOLS = os.path.join(REPO, "tools")
CREATED = 1767225600.0  # 2026-01-01 00:00:00 UTC, a fixed creation time for reproducible states


def _is_annotation(line):
    if line == "# version: 1.0":  # real version.cfg content (see version_files.txt)
        return False
    return line == "#" or line.startswith("# ") or line.startswith("##")


def samples(name):
    """Samples of one capture file: [{'source': str, 'lines': [...]}] with annotation lines dropped.

    A sample is everything after a '# source:' line up to the next '# source:' line; trailing blank
    lines are removed (they separate samples in the files)."""
    with open(os.path.join(CAPTURES, name), encoding="utf-8") as handle:
        text = handle.read()
    found = []
    current = None
    for line in text.split("\n"):
        if line.startswith("# source:"):
            current = {"source": line[len("# source:"):].strip(), "lines": []}
            found.append(current)
            continue
        if _is_annotation(line) or current is None:
            continue
        current["lines"].append(line)
    for item in found:
        while item["lines"] and not item["lines"][-1].strip():
            item["lines"].pop()
        while item["lines"] and not item["lines"][0].strip():
            item["lines"].pop(0)
    return found


def sample(name, contains, index=0):
    """The ``index``-th sample of ``name`` whose source line contains ``contains``."""
    matching = [item for item in samples(name) if contains in item["source"]]
    assert len(matching) > index, "no sample %r in %s" % (contains, name)
    return list(matching[index]["lines"])


def detab(lines, spaces=8):
    """Docs and Go test fixtures render the leading TAB of npu-smi lines as spaces; restore it."""
    pad = " " * spaces
    return ["\t" + line[spaces:] if line.startswith(pad) else line for line in lines]


def text(lines, tail=""):
    return "\n".join(lines) + "\n" + tail


def assert_segments(expected_lines, actual):
    """Compare a sample that elides parts with '...' lines: every segment must appear, in order,
    the first one at the start of the output. Without '...' this is an exact comparison."""
    segments = [[]]
    for line in expected_lines:
        if line.strip() in ("...", "... ..."):
            segments.append([])
        else:
            segments[-1].append(line)
    segments = [seg for seg in segments if seg]
    if len(segments) == 1 and "..." not in [line.strip() for line in expected_lines]:
        assert actual == text(segments[0])
        return
    pos = 0
    for number, seg in enumerate(segments):
        chunk = "\n".join(seg) + "\n"
        found = actual.find(chunk, pos)
        assert found >= 0, "segment %d not found:\n%s\n--- in ---\n%s" % (number, chunk, actual)
        if number == 0:
            assert found == 0, "first segment is not at the start"
        pos = found + len(chunk)


class Sim:
    """One simulated node in a temporary directory."""

    def __init__(self, base, hostname="node01", index=1, pod_dir=None):
        self.dir = os.path.join(base, hostname, "state")
        os.makedirs(self.dir, exist_ok=True)
        self.path = os.path.join(self.dir, "state.json")
        self.data = node_mod.new_state(hostname, index, pod_dir=pod_dir, created=CREATED)
        self.save()

    def save(self):
        statefile.save(self.path, self.data)
        return self

    def reload(self):
        self.data = statefile.load(self.path)
        return self.data

    def npu(self, dev):
        return self.data["npus"][dev]

    def run(self, tool, *args):
        """In-process run -> (rc, stdout, stderr)."""
        res = run_tool(tool, list(args), self.path)
        return res.exit_code, res.stdout, res.stderr

    def sub(self, tool, *args, env=None, timeout=60):
        """Run through ``python -m npu_sim`` in a subprocess -> (rc, stdout, stderr)."""
        environ = dict(os.environ)
        environ["PYTHONPATH"] = TOOLS
        environ["NPU_SIM_STATE"] = self.path
        environ.pop("NPU_SIM_LATENCY_MS", None)
        environ.pop("NPU_SIM_EUID", None)
        environ.update(env or {})
        proc = subprocess.run([sys.executable, "-m", "npu_sim", tool] + [str(a) for a in args],
                              capture_output=True, env=environ,
                              timeout=timeout, check=False, text=True)
        return proc.returncode, proc.stdout, proc.stderr


@pytest.fixture
def sim(tmp_path):
    return Sim(str(tmp_path))


@pytest.fixture
def nodes(tmp_path):
    """Factory of nodes sharing one pod_dir: nodes(hostname, index) -> Sim."""
    base = str(tmp_path / "nodes")

    def make(hostname, index):
        return Sim(base, hostname, index, pod_dir=base)
    return make


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    for name in ("NPU_SIM_LATENCY_MS", "NPU_SIM_EUID", "NPU_SIM_NUMA_NODE", "HCCL_RDMA_SL", "HCCL_RDMA_TC"):
        monkeypatch.delenv(name, raising=False)
