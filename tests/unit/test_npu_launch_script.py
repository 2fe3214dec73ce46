"""npu-launch (roles/numa_bind/templates/npu-launch.j2), rendered by Ansible's templating and run on this host with a
stand-in for npu-bind that reports its argv, its environment and its process group."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

templating = pytest.importorskip('ansible.template')
dataloader = pytest.importorskip('ansible.parsing.dataloader')

from ansible_collections.npuops.ascend.plugins.plugin_utils import launch  # noqa: E402

TEMPLATE = __file__.rsplit('/tests/', 1)[0] + '/roles/numa_bind/templates/npu-launch.j2'
BINDING = [{'npu': 0, 'numa_node': 6, 'cpus': '144-167'}, {'npu': 1, 'numa_node': 6, 'cpus': '144-167'},
           {'npu': 2, 'numa_node': 4, 'cpus': '96-119'}]
# the stand-in for npu-bind: one JSON line per rank; NPU 1 exits with FAIL_RC when set, NPU 2 sleeps when SLEEP is set
BIND = '''#!%s
import json, os, sys, time
npu = sys.argv[1]
keys = ("LOCAL_RANK", "RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "OMP_NUM_THREADS",
        "CPU_AFFINITY_CONF", "KEEP")
print(json.dumps({"argv": sys.argv[1:], "env": dict((k, os.environ.get(k)) for k in keys),
                  "own_group": os.getpgid(0) == os.getpid()}), flush=True)
if npu == "1" and os.environ.get("FAIL_RC"):
    sys.exit(int(os.environ["FAIL_RC"]))
if npu == "2" and os.environ.get("SLEEP"):
    time.sleep(float(os.environ["SLEEP"]))
''' % sys.executable


def script(tmp_path, mode=0):
    document = launch.launch_document({'map_path': '/m', 'launcher_path': str(tmp_path / 'npu-bind')},
                                      {'nodes': ['n1', 'n2'], 'master_addr': '127.0.1.1', 'npus_per_node': 3,
                                       'affinity_mode': mode}, BINDING, 'n2')
    (tmp_path / 'launch.json').write_text(json.dumps(document))
    (tmp_path / 'npu-bind').write_text(BIND)
    (tmp_path / 'npu-bind').chmod(0o755)
    with open(TEMPLATE, encoding='utf-8') as handle:
        source = handle.read()
    templar = templating.Templar(loader=dataloader.DataLoader(), variables={
        'numa_bind_launcher_python': sys.executable, 'numa_bind_launch_path': str(tmp_path / 'launch.json'),
        'numa_bind_launcher_path': str(tmp_path / 'npu-bind'), 'numa_bind_launch_grace_seconds': 1})
    path = tmp_path / 'npu-launch'
    path.write_text(templar.template(templating.trust_as_template(source)))
    path.chmod(0o755)
    return str(path)


def run(path, *argv, **env):
    return subprocess.run([sys.executable, path] + list(argv), capture_output=True, text=True, timeout=60, check=False,
                          env=dict({'PATH': '/usr/bin:/bin', 'KEEP': 'kept'}, **env))


def test_one_process_per_npu_each_through_npu_bind_with_its_rank_environment(tmp_path):
    proc = run(script(tmp_path), '--', 'train.py', '--steps', '3')
    assert proc.returncode == 0, proc.stderr
    ranks = sorted((json.loads(line) for line in proc.stdout.splitlines()), key=lambda r: r['argv'][0])
    assert [r['argv'] for r in ranks] == [[npu, '--', 'train.py', '--steps', '3'] for npu in ('0', '1', '2')]
    assert [(r['env']['LOCAL_RANK'], r['env']['RANK'], r['env']['WORLD_SIZE'], r['env']['OMP_NUM_THREADS'])
            for r in ranks] == [('0', '3', '6', '12'), ('1', '4', '6', '12'), ('2', '5', '6', '24')]
    assert all(r['env']['MASTER_ADDR'] == '127.0.1.1' and r['env']['MASTER_PORT'] == '29500' for r in ranks)
    assert all(r['env']['KEEP'] == 'kept' and r['env']['CPU_AFFINITY_CONF'] is None for r in ranks)
    assert all(r['own_group'] for r in ranks)  # each rank leads a process group of its own


def test_cpu_affinity_conf_is_set_when_the_launch_file_has_it(tmp_path):
    proc = run(script(tmp_path, mode=2), '--', 'x')
    confs = set(json.loads(line)['env']['CPU_AFFINITY_CONF'] for line in proc.stdout.splitlines())
    assert confs == {'2,npu0:144-155,npu1:156-167,npu2:96-119'}


def test_a_failed_rank_stops_the_others_and_its_status_is_the_exit_status(tmp_path):
    started = time.time()
    proc = run(script(tmp_path), '--', 'x', FAIL_RC='3', SLEEP='30')
    assert proc.returncode == 3, proc.stderr
    assert time.time() - started < 20  # the sleeping rank was stopped, not waited for
    assert 'npu-launch: rank 4 (NPU 1) ended with status 3; stopping the other ranks' in proc.stderr


def test_dry_run_starts_nothing(tmp_path):
    proc = run(script(tmp_path), '--dry-run', '--', 'x')
    assert proc.returncode == 0 and proc.stderr == ''
    plan = json.loads(proc.stdout)
    assert [p['argv'][1:] for p in plan] == [['0', '--', 'x'], ['1', '--', 'x'], ['2', '--', 'x']]
    assert plan[2]['env']['RANK'] == '5' and plan[2]['numa_node'] == 4


@pytest.mark.parametrize('argv, code, words', [
    (['x'], 2, "missing '--' before the command"), (['--'], 2, "no command after '--'"),
    (['--bogus', '--', 'x'], 2, "unknown argument(s) before '--': '--bogus'"),
])
def test_bad_usage(tmp_path, argv, code, words):
    proc = run(script(tmp_path), *argv)
    assert proc.returncode == code and words in proc.stderr and 'usage: npu-launch' in proc.stderr


def test_a_missing_launch_file_is_exit_1(tmp_path):
    path = script(tmp_path)
    (tmp_path / 'launch.json').unlink()
    proc = run(path, '--', 'x')
    assert proc.returncode == 1 and 'cannot read the launch file' in proc.stderr and 'stage 6' in proc.stderr
