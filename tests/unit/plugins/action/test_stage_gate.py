"""npuops.ascend.stage_gate run by ansible-playbook through the internal gate role: each node records its stage in the
run's store, the verdict reads the records (a lost node and a failing node named in one message), the summary is made
from the store, and a stopped window's decided results are written for nodes no longer in the play."""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from ansible_collections.npuops.ascend.plugins.action import stage_gate as action

COLLECTIONS_ROOT = os.path.abspath(os.path.join(os.path.dirname(action.__file__), '..', '..', '..', '..', '..'))
ANSIBLE_PLAYBOOK = shutil.which('ansible-playbook', path=os.path.dirname(sys.executable)) or shutil.which('ansible-playbook')
pytestmark = pytest.mark.skipif(ANSIBLE_PLAYBOOK is None, reason='ansible-playbook is not installed')

INVENTORY = textwrap.dedent("""\
    [pod]
    node01
    node02
    node03

    [pod:vars]
    ansible_connection=local
    ansible_python_interpreter=%s
    """) % sys.executable

PLAY = """\
- name: A stage and its gate
  hosts: pod
  gather_facts: false
  vars:
    npuops_report_dir: "%(reports)s"
  tasks:
    - name: Prepare the run directory
      ansible.builtin.import_role:
        name: npuops.ascend.gate
        tasks_from: run

    - name: Every node is reached (an unreachable node drops out here)
      ansible.builtin.ping:
      when: reach | default(false) | bool

    - name: A node drops out before the gate
      ansible.builtin.fail:
        msg: lost on the way
      when: inventory_hostname == 'node03' and drop | default(false) | bool

    - name: The gate of stage 3
      ansible.builtin.import_role:
        name: npuops.ascend.gate
      vars:
        gate_stage: 3
        gate_role: hccl_bench
        gate_findings: "%(findings)s"
        gate_data: {busbw_gb_s: 21.5}
      when: inventory_hostname != 'node03' or not skip3 | default(false) | bool

- name: The summary
  hosts: pod
  gather_facts: false
  vars:
    npuops_report_dir: "%(reports)s"
  tasks:
    - name: Show the result of every stage
      ansible.builtin.import_role:
        name: npuops.ascend.gate
        tasks_from: summary
"""


def run(tmp_path, findings, *extra, inventory=INVENTORY):
    (tmp_path / 'inventory.ini').write_text(inventory)
    (tmp_path / 'play.yml').write_text(PLAY % {'reports': tmp_path / 'reports', 'findings': findings})
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS_ROOT, ANSIBLE_RETRY_FILES_ENABLED='false',
               ANSIBLE_NOCOLOR='1', ANSIBLE_FORCE_COLOR='0', ANSIBLE_STDOUT_CALLBACK='default')
    proc = subprocess.run([ANSIBLE_PLAYBOOK, '-i', str(tmp_path / 'inventory.ini'), str(tmp_path / 'play.yml'),
                           '-e', 'npuops_run_id=R1'] + list(extra),
                          cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=180, check=False)
    return proc, proc.stdout + proc.stderr


def load(path):
    with open(path, encoding='utf-8') as handle:
        return json.load(handle)


FAILING = ("{{ [{'host': 'node02', 'device': 5, 'check': 'busbw', 'value': 9.1, 'expected': 20, 'severity': 'fail', "
           "'msg': 'node02 NPU 5: bus bandwidth 9.1 GB/s, expected at least 20'}] if inventory_hostname == 'node02' "
           "else [{'host': inventory_hostname, 'device': none, 'check': 'x', 'value': 1, 'expected': 0, "
           "'severity': 'warn', 'msg': inventory_hostname ~ ': a warning'}] }}")


def test_the_verdict_reads_the_records_and_names_the_failing_and_the_lost_node(tmp_path):
    proc, out = run(tmp_path, FAILING, '-e', 'drop=true')
    assert proc.returncode == 2, out
    run_dir = tmp_path / 'reports' / 'R1'
    assert ('Stage 3 (hccl_bench) gate failed on 2 node(s) (node02, node03): node02 NPU 5: bus bandwidth 9.1 GB/s, '
            'expected at least 20; node03: the node dropped out before the gate') in out
    assert '[WARNING]: node01: a warning' in out
    assert sorted(glob.glob(str(run_dir / 'nodes' / '*' / '*.json'))) == [
        str(run_dir / 'nodes' / 'node01' / 'stage3.json'), str(run_dir / 'nodes' / 'node02' / 'stage3.json')]
    record = load(run_dir / 'nodes' / 'node02' / 'stage3.json')
    assert (record['run'], record['status'], record['data']) == ('R1', 'failed', {'busbw_gb_s': 21.5})
    assert [f['device'] for f in record['findings']] == [5]
    summary = load(run_dir / 'summary.json')
    assert summary['nodes']['node03'] == {} and summary['nodes']['node01']['stage3']['status'] == 'passed'
    assert summary['nodes']['node02']['stage3']['failures'] == ['node02 NPU 5: bus bandwidth 9.1 GB/s, expected at least 20']
    # the run stops here, before its report: the gate wrote the metrics of what it did, for monitoring
    from prometheus_client.parser import text_string_to_metric_families  # pylint: disable=import-outside-toplevel
    text = (run_dir / 'metrics.prom').read_text(encoding='utf-8')
    status = dict((sample.labels['node'], sample.value) for family in text_string_to_metric_families(text)
                  if family.name == 'npuops_stage_status' for sample in family.samples)
    assert status == {'node01': 0, 'node02': 3}, text
    assert oct((run_dir / 'metrics.prom').stat().st_mode & 0o777) == '0o644'


def test_a_metrics_file_that_cannot_be_written_is_a_warning_not_the_verdict(tmp_path):
    proc, out = run(tmp_path, FAILING, '-e', 'npuops_metrics_file=relative.prom')
    assert proc.returncode == 2, out
    assert 'the metrics of the stopped run were not written: npuops_metrics_file is' in out
    assert 'Stage 3 (hccl_bench) gate failed on 1 node(s) (node02)' in out
    assert not (tmp_path / 'reports' / 'R1' / 'metrics.prom').exists()


def test_a_node_without_its_record_of_this_run_is_a_failure_and_a_stale_record_is_never_used(tmp_path):
    stale = tmp_path / 'reports' / 'R1' / 'nodes' / 'node03'
    stale.mkdir(parents=True)
    (stale / 'stage3.json').write_text(json.dumps({
        'schema': 'npuops.ascend/stage-record', 'version': 1, 'run': 'R0', 'node': 'node03', 'stage': 3,
        'role': 'hccl_bench', 'status': 'passed', 'check_mode': False, 'time': '2026-12-01T00:00:00Z', 'failures': [],
        'warnings': [], 'findings': [], 'data': {}}))
    proc, out = run(tmp_path, "{{ [] }}", '-e', 'skip3=true')
    assert proc.returncode == 2, out
    assert ('Stage 3 (hccl_bench) gate failed on 1 node(s) (node03): node03: the record of stage 3 in the run store (%s) '
            'is of run R0, not of this run R1: a record of another run is never used' % (stale / 'stage3.json')) in out
    (stale / 'stage3.json').unlink()
    proc, out = run(tmp_path, "{{ [] }}", '-e', 'skip3=true')
    assert proc.returncode == 2, out
    assert 'node03: no record of stage 3 in the run store (%s)' % (stale / 'stage3.json') in out


def test_a_passing_stage_and_the_summary_lines(tmp_path):
    proc, out = run(tmp_path, "{{ [] }}")
    assert proc.returncode == 0, out
    for node in ('node01', 'node02', 'node03'):
        assert '%-12s stage3 %-14s passed' % (node, 'hccl_bench') in out
    assert load(tmp_path / 'reports' / 'R1' / 'summary.json')['check_mode'] is False


def test_check_mode_records_too_and_says_so(tmp_path):
    proc, out = run(tmp_path, FAILING, '--check')
    assert proc.returncode == 2, out
    record = load(tmp_path / 'reports' / 'R1' / 'nodes' / 'node01' / 'stage3.json')
    assert record['check_mode'] is True and record['status'] == 'passed'
    assert load(tmp_path / 'reports' / 'R1' / 'summary.json')['check_mode'] is True


def test_a_bad_run_id_stops_before_anything_with_the_rule(tmp_path):
    proc, out = run(tmp_path, "{{ [] }}", '-e', 'npuops_run_id=../../etc')
    assert proc.returncode == 2, out
    assert 'npuops_run_id is "../../etc": it names the run\'s report directory' in out
    assert 'lost on the way' not in out and not (tmp_path / 'reports').exists()


def test_the_action_refuses_a_bad_run_id_itself(tmp_path):
    from ansible_collections.npuops.ascend.plugins.plugin_utils import store
    with pytest.raises(store.StoreError, match="the run id '../x' cannot name a run directory"):
        store.check_run_id('../x')


# node03 listens nowhere (port 9 of the loopback address refuses): it is unreachable at the first task that connects
UNREACHABLE = INVENTORY.replace('node03\n', 'node03 ansible_connection=ssh ansible_host=127.0.0.1 ansible_port=9\n', 1)


def test_a_node_lost_below_npuops_max_lost_nodes_is_named_once_and_the_run_goes_on(tmp_path):
    proc, out = run(tmp_path, "{{ [] }}", '-e', 'reach=true', '-e', 'npuops_max_lost_nodes=1', inventory=UNREACHABLE)
    assert proc.returncode == 4, out  # Ansible's code for a run with an unreachable host
    assert out.count('node03: lost before the gate of stage 3 (hccl_bench): unreachable; the run goes on without it '
                     '(1 of at most 1 lost node(s), npuops_max_lost_nodes)') == 1, out
    summary = load(tmp_path / 'reports' / 'R1' / 'summary.json')
    assert summary['lost'] == {'node03': {'stage': 3, 'role': 'hccl_bench'}}
    assert summary['nodes']['node01']['stage3']['status'] == 'passed'
    assert 'node03       lost before the gate of stage3 hccl_bench (unreachable); the run went on without it' in out


def test_without_npuops_max_lost_nodes_an_unreachable_node_fails_the_gate(tmp_path):
    proc, out = run(tmp_path, "{{ [] }}", '-e', 'reach=true', inventory=UNREACHABLE)
    assert proc.returncode == 4, out  # a host was unreachable (and the gate failed)
    assert 'fatal: [node01]: FAILED!' in out
    assert 'Stage 3 (hccl_bench) gate failed on 1 node(s) (node03): node03: the node dropped out before the gate' in out
    assert 'lost' not in load(tmp_path / 'reports' / 'R1' / 'summary.json')


def test_a_node_a_task_failed_on_is_not_lost_whatever_npuops_max_lost_nodes(tmp_path):
    proc, out = run(tmp_path, "{{ [] }}", '-e', 'drop=true', '-e', 'npuops_max_lost_nodes=2')
    assert proc.returncode == 2, out
    assert 'Stage 3 (hccl_bench) gate failed on 1 node(s) (node03): node03: the node dropped out before the gate' in out


def test_a_bad_npuops_max_lost_nodes_stops_the_gate_with_the_rule(tmp_path):
    proc, out = run(tmp_path, "{{ [] }}", '-e', 'npuops_max_lost_nodes=some')
    assert proc.returncode == 2, out
    assert "stage_gate: npuops_max_lost_nodes 'some' is not a number of nodes: give a whole number from 0" in out


def test_reached_leaves_out_the_nodes_this_run_lost_in_an_earlier_part(tmp_path):
    from ansible_collections.npuops.ascend.plugins.plugin_utils import store
    run_dir = str(tmp_path / 'r1')
    store.write_lost(run_dir, store.make_lost('r1', 'node03', 0, 'health_check'))
    store.write_lost(run_dir, store.make_lost('r0', 'node02', 0, 'health_check'))  # another run's: not this run's loss
    args = {'run_dir': run_dir, 'run_id': 'r1', 'nodes': ['node01', 'node02', 'node03']}
    out = action.ActionModule._reached(args, {})
    assert out['reached'] == ['node01', 'node02'] and out['lost'] == ['node03']
    assert out['msg'] == '2 node(s), 1 lost by an earlier part of run r1 (node03): left out'
    assert action.ActionModule._reached(dict(args, run_id='r2'), {})['msg'] == '3 node(s), none lost'
