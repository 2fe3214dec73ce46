"""The drift audit's decisions (plugins/plugin_utils/audit.py): the ports read by hccn_info on real samples against the
intent, the HCCL env file against the last applied record, the files of stages 5-7, the governor, the host settings,
MindIE's settings, what /etc/hccn.conf keeps, the newest applied record of a node in the report directory, and the
PoD's verdict from the node records."""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.npuops.ascend.plugins.plugin_utils import audit, node_files, store
from ansible_collections.npuops.ascend.plugins.plugin_utils.roce.plan import roce_desired_config
from ansible_collections.npuops.ascend.tests.unit.plugins.modules.conftest import sample
from ansible_collections.npuops.ascend.tests.unit.plugins.plugin_utils import node_reads


H = 'node02'
INTENT = {'lossless_priority': 4, 'lossless_dscp': 33, 'lossless_tc': 2, 'dscp_to_tc': None, 'mtu': 9000}
WANT = roce_desired_config(range(8), INTENT)
PFC_ON = sample('hccn_tool/pfc/hixl_dev0_prio4')            # bitmap 0,0,0,0,1,0,0,0
PFC_OFF = sample('hccn_tool/pfc/derived_none_enabled')      # bitmap 0,0,0,0,0,0,0,0
MTU_9000 = sample('hccn_tool/mtu/derived_9000')             # mtu:9000
DSCP_33_2 = sample('hccn_tool/dscp_to_tc/derived_single_dscp')  # dscp 33 -> tc 2
QUERIES = ('mtu', 'pfc', 'dscp_to_tc')


def read(run_module, **changed):
    """hccn_info of 8 ports on the samples (MTU 9000, PFC on priority 4, DSCP 33 -> TC 2), ``changed`` as
    node_reads.ports_read takes it ('<query>_<device>': reply)."""
    replies = {'mtu': MTU_9000, 'pfc': PFC_ON, 'dscp_to_tc': DSCP_33_2}
    cmds = {}
    for dev in range(8):
        for query in QUERIES:
            cmds['%s_%d' % (query, dev)] = changed.get('%s_%d' % (query, dev), replies[query])
    return node_reads.ports_read(run_module, queries=QUERIES, **cmds)


def record(run, stage, data, status='passed', check_mode=False, node=H):
    out = store.make_record(run, node, stage, 'role', [], check_mode=check_mode, data=data)
    out['status'] = status
    return out


# ---- the ports -------------------------------------------------------------------------------------------------------

def test_ports_that_hold_the_intent_have_no_drift(run_module):
    assert audit.port_drift(H, WANT, read(run_module)) == []


def test_a_port_whose_pfc_was_lost_names_node_npu_setting_expected_found_and_the_playbook(run_module):
    found = audit.port_drift(H, WANT, read(run_module, pfc_3=PFC_OFF))
    assert [(f['host'], f['device'], f['check'], f['value'], f['expected'], f['severity']) for f in found] == [
        (H, 3, 'pfc_priorities', [], [4], 'fail')]
    assert found[0]['msg'] == ('node02 NPU 3: pfc_priorities is [], expected [4]; playbooks/roce_lossless.yml '
                               '(npuops.ascend.roce_lossless) sets it again')
    assert found[0]['fix'].startswith('playbooks/roce_lossless.yml')


def test_mtu_and_dscp_map_back_at_defaults_after_a_reboot(run_module):
    found = audit.port_drift(H, WANT, read(run_module, mtu_0='mtu:1500\n',
                                           dscp_to_tc_0='dscp      tc\n  33       0\n'))
    assert [(f['device'], f['check'], f['value'], f['expected']) for f in found] == [
        (0, 'mtu', 1500, 9000), (0, 'dscp_to_tc', 'DSCP 33 -> TC 0', 'DSCP 33 -> TC 2')]


def test_the_last_applied_stage4_record_is_named(run_module):
    stage4 = record('r1', 4, {'plan': {'after': [{'device': 3, 'pfc_priorities': [4], 'mtu': 9000}]}})
    found = audit.port_drift(H, WANT, read(run_module, pfc_3=PFC_OFF), stage4)
    assert '(run r1 set [4])' in found[0]['msg']


def test_a_port_that_could_not_be_read_is_drift_that_says_so(run_module):
    found = audit.port_drift(H, WANT, {'failed': True, 'msg': 'hccn_tool not found'})
    assert [(f['check'], f['severity']) for f in found] == [('ports', 'fail')]
    assert 'hccn_tool not found' in found[0]['msg']
    assert audit.port_drift(H, [], {'failed': True}) == []  # nothing wanted: the ports are not audited


def test_an_intent_that_changed_since_the_last_run_is_a_warning():
    stage4 = record('r1', 4, {'plan': {'after': [dict(WANT[0], mtu=4200)]}})
    found = audit.intent_changes(H, WANT[:1], stage4)
    assert [(f['device'], f['check'], f['value'], f['expected'], f['severity']) for f in found] == [
        (0, 'intent_mtu', 4200, 9000, 'warn')]


# ---- /etc/hccn.conf: what the driver keeps across a reboot ----------------------------------------------------------

def test_persistence_from_the_real_keys_of_hccn_conf():
    variables = dict(('%s_%d' % (key, dev), 'x') for dev in range(8) for key in ('address', 'netmask', 'netdetect'))
    out = audit.persistence(H, {'exists': True, 'variables': variables}, range(8), '/etc/hccn.conf',
                            ['mtu', 'pfc_priorities', 'dscp_to_tc'])
    assert out['lost'] == ['mtu', 'pfc_priorities', 'dscp_to_tc']
    assert out['kept'] == {'mtu': [], 'pfc_priorities': [], 'dscp_to_tc': []}
    assert 'a reboot brings them back at the driver defaults' in out['msg']
    kept = audit.persistence(H, {'exists': True, 'variables': variables}, range(8), '/etc/hccn.conf',
                             ['address', 'netmask'])
    assert kept['lost'] == [] and kept['kept']['address'] == list(range(8))
    assert 'holds every managed port setting of NPU 0-7' in kept['msg']
    assert out['restored'] == ['address', 'netmask', 'netdetect'] and 'holds address, netmask, netdetect of NPU 0-7' in out['msg']


def test_without_hccn_conf_nothing_is_kept():
    out = audit.persistence(H, {'exists': False, 'variables': {}}, [0, 1], '/etc/hccn.conf', ['mtu'])
    assert out['lost'] == ['mtu'] and 'there is no /etc/hccn.conf, so the driver restores no port setting' in out['msg']


# ---- the HCCL env file and the files of stages 5-7 ---------------------------------------------------------------------

ENV = [['HCCL_RDMA_SL', '4'], ['HCCL_RDMA_TC', '132'], ['HCCL_BUFFSIZE', '200']]


def test_env_variables_against_the_last_applied_record():
    stage5 = record('r1', 5, {'env': ENV})
    same = {'exists': True, 'variables': {'HCCL_RDMA_SL': '4', 'HCCL_RDMA_TC': '132', 'HCCL_BUFFSIZE': '200'}}
    assert audit.env_drift(H, same, stage5, '/etc/profile.d/npuops-hccl.sh') == []
    edited = {'exists': True, 'variables': {'HCCL_RDMA_SL': '4', 'HCCL_RDMA_TC': '0', 'HCCL_ALGO': 'ring'}}
    found = audit.env_drift(H, edited, stage5, '/etc/profile.d/npuops-hccl.sh')
    assert [(f['check'], f['value'], f['expected']) for f in found] == [
        ('HCCL_RDMA_TC', '0', '132'), ('HCCL_BUFFSIZE', None, '200'), ('HCCL_ALGO', 'ring', None)]
    assert 'site.yml --tags hccl_env' in found[0]['msg']
    missing = audit.env_drift(H, {'exists': False}, stage5, '/etc/profile.d/npuops-hccl.sh')
    assert [(f['check'], f['value']) for f in missing] == [('hccl_env_file', 'missing')]
    assert audit.env_drift(H, edited, None, '/x') == []  # no applied stage 5: nothing to compare with


def _stat(text, mode='0644', owner='root', **extra):
    return dict({'exists': True, 'isreg': True, 'islnk': False, 'mode': mode, 'pw_name': owner, 'gr_name': 'root',
                 'checksum': node_files.checksum(text)}, **extra)


def test_files_against_their_checksum_owner_and_mode():
    text = '{"npus": []}\n'
    entry = {'kind': 'map', 'path': '/etc/npuops/numa-bind.json', 'owner': 'root', 'group': 'root', 'mode': '0644',
             'checksum': node_files.checksum(text), 'run': 'r1'}
    assert audit.file_drift(H, [entry], {entry['path']: _stat(text)}, {}) == []
    assert audit.file_drift(H, [dict(entry, owner='0')], {entry['path']: _stat(text, uid=0)}, {}) == []  # a uid
    found = audit.file_drift(H, [entry], {entry['path']: _stat('{}\n', mode='0666', owner='npuops')}, {})
    assert [f['check'] for f in found] == ['map', 'map_owner', 'map_mode', 'map_writable']
    assert 'changed since run r1' in found[0]['msg'] and 'site.yml --tags numa_bind' in found[0]['msg']
    link = dict(_stat(text), islnk=True, isreg=False, lnk_target='/tmp/x')
    linked = audit.file_drift(H, [entry], {entry['path']: link}, {})
    assert [(f['check'], f['value']) for f in linked] == [('map', 'link to /tmp/x')]
    gone = audit.file_drift(H, [entry], {entry['path']: {'exists': False}}, {})
    assert [(f['check'], f['value']) for f in gone] == [('map', 'missing')]


def test_a_secret_file_is_never_compared_by_content():
    entry = {'kind': 'vllm_secrets', 'path': '/etc/npuops/vllm/secrets.env', 'mode': '0640', 'checksum': None, 'run': 'r1'}
    assert audit.file_drift(H, [entry], {entry['path']: _stat('KEY=other\n', mode='0640')}, {}) == []


def test_record_files_take_the_run_that_wrote_them():
    records = {5: record('r5', 5, {'files': [{'kind': 'hccl_env', 'path': '/a'}]}), 6: None,
               7: record('r7', 7, {'files': [{'kind': 'mindie_config', 'path': '/b'}, {'kind': 'x'}]})}
    assert audit.record_files(records) == [{'kind': 'hccl_env', 'path': '/a', 'run': 'r5'},
                                           {'kind': 'mindie_config', 'path': '/b', 'run': 'r7'}]
    assert audit.record_files(records, '/a') == audit.record_files(records)
    optional = audit.record_files({}, '/etc/profile.d/npuops-hccl.sh')
    assert optional == [{'kind': 'hccl_env', 'path': '/etc/profile.d/npuops-hccl.sh', 'checksum': None, 'run': None,
                         'optional': True}]
    # no run wrote it: missing is fine, a link or write bits for others are not
    assert audit.file_drift(H, optional, {optional[0]['path']: {'exists': False}}, {}) == []
    link = {'exists': True, 'islnk': True, 'lnk_target': '/tmp/evil.sh'}
    assert [f['check'] for f in audit.file_drift(H, optional, {optional[0]['path']: link}, {})] == ['hccl_env']


# ---- the governor, the host settings, MindIE ------------------------------------------------------------------------

def test_governor_back_at_the_default():
    result = {'changed': True, 'before': {'0': 'ondemand', '1': 'ondemand', '2': 'performance'}, 'changed_cpus': '0-1'}
    found = audit.governor_drift(H, result, 'performance', record('r6', 6, {}))
    assert [(f['check'], f['value'], f['expected']) for f in found] == [('governor', ['ondemand'], 'performance')]
    assert 'ondemand on CPUs 0-1' in found[0]['msg'] and '(run r6 set performance)' in found[0]['msg']
    assert audit.governor_drift(H, {'changed': False, 'before': {}}, 'performance') == []
    assert audit.governor_drift(H, result, None) == []


def test_swappiness_and_thp():
    found = audit.host_drift(H, {'swappiness': 60, 'transparent_hugepage': 'always'}, 10, 'never')
    assert [(f['check'], f['value'], f['expected']) for f in found] == [
        ('swappiness', 60, '<= 10'), ('transparent_hugepage', 'always', 'never')]
    assert 'no playbook of the collection sets it' in found[0]['msg']
    assert audit.host_drift(H, {'swappiness': 10, 'transparent_hugepage': 'never'}, 10, 'never') == []


def test_mindie_settings_that_differ():
    stage7 = record('r7', 7, {'engine': 'mindie', 'file': '/c.json', 'settings': {'maxBatchSize': 200}})
    result = {'changed': True, 'changes': [{'key': 'maxBatchSize', 'path': 'BackendConfig.ScheduleConfig.maxBatchSize',
                                            'before': 64, 'after': 200}]}
    found = audit.serving_drift(H, result, stage7)
    assert [(f['check'], f['value'], f['expected']) for f in found] == [('maxBatchSize', 64, 200)]
    assert 'site.yml --tags mindie_config' in found[0]['msg']


# ---- the report directory: the newest applied record, the node records, the verdict ---------------------------------

def _write(report_dir, run, stage, mtime, **kwargs):
    path = store.write_record(os.path.join(report_dir, run), record(run, stage, {'n': run}, **kwargs))
    os.utime(path, (mtime, mtime))


def test_last_applied_skips_dry_runs_and_failed_runs(tmp_path):
    _write(str(tmp_path), 'r1', 4, 100)
    _write(str(tmp_path), 'r2', 4, 200, check_mode=True)
    _write(str(tmp_path), 'r3', 4, 300, status='failed')
    found, why = audit.last_applied(str(tmp_path), H, 4)
    assert found['run'] == 'r1' and why is None
    none, why = audit.last_applied(str(tmp_path), H, 5)
    assert none is None and 'no run in' in why


def test_a_link_in_the_report_directory_is_not_followed(tmp_path):
    other = tmp_path / 'elsewhere'
    _write(str(other), 'r9', 4, 100)
    (tmp_path / 'reports').mkdir()
    os.symlink(str(other / 'r9'), str(tmp_path / 'reports' / 'r9'))
    assert audit.last_applied(str(tmp_path / 'reports'), H, 4)[0] is None


def test_verdict_from_the_node_records(tmp_path):
    report_dir = str(tmp_path)
    ports = {'devices': {'0': {'mtu': 1500, 'pfc_priorities': [4], 'dscp_to_tc': [{'dscp': 33, 'tc': 2}]}}}
    drift = audit.port_drift(H, WANT[:1], ports)
    for node, findings in (('node01', []), (H, drift)):
        audit.write_node(report_dir, audit.node_document('a1', node, findings, {4: 'run r1'}, None, 'T'))
    documents, missing = audit.read_nodes(report_dir, 'a1', ['node01', H, 'node03'])
    assert sorted(documents) == ['node01', H] and list(missing) == ['node03']
    document, failed, msg = audit.summary('a1', documents, missing, 'T')
    assert failed and document['drifted'] == [H]
    assert 'node02 NPU 0: mtu is 1500, expected 9000' in msg and 'not audited: node03' in msg
    assert 'nothing was changed' in msg
    text = audit.markdown(document)
    assert '| node02 | 0 | mtu | 9000 | 1500 | fail |' in text
    with open(os.path.join(report_dir, 'audit', 'a1', 'nodes', 'node01.json'), encoding='utf-8') as handle:
        assert json.load(handle)['status'] == 'clean'
    clean, failed, msg = audit.summary('a1', {'node01': documents['node01']}, {}, 'T')
    assert not failed and 'every managed setting of 1 node(s)' in msg


def test_a_report_directory_that_is_a_link_is_used_as_the_runs_use_it(tmp_path):
    (tmp_path / 'real').mkdir()
    os.symlink(str(tmp_path / 'real'), str(tmp_path / 'reports'))
    path = audit.write_node(str(tmp_path / 'reports'), audit.node_document('a1', H, [], {}, None, 'T'))
    assert os.path.isfile(str(tmp_path / 'real' / 'audit' / 'a1' / 'nodes' / 'node02.json')) and path


def test_an_audit_id_that_is_not_a_name_is_refused(tmp_path):
    with pytest.raises(store.StoreError):
        audit.write_node(str(tmp_path), audit.node_document('../x', H, [], {}, None, 'T'))


def test_mindie_config_is_compared_by_its_managed_settings_not_by_content():
    entry = {'kind': 'mindie_config', 'path': '/c.json', 'mode': '0640', 'checksum': node_files.checksum('{}'), 'run': 'r7'}
    assert audit.file_drift(H, [entry], {'/c.json': _stat('{"operator": "edit"}', mode='0640')}, {}) == []
    found = audit.file_drift(H, [entry], {'/c.json': _stat('{}', mode='0644')}, {})
    assert [f['check'] for f in found] == ['mindie_config_mode']


def test_hccl_rdma_values_against_the_intent_of_the_inventory():
    intent = dict(INTENT, lossless_priority=3)   # the inventory moved the lossless priority since the last run
    stage5 = record('r1', 5, {'env': ENV})
    read_now = {'exists': True, 'variables': {'HCCL_RDMA_SL': '4', 'HCCL_RDMA_TC': '132', 'HCCL_BUFFSIZE': '200'}}
    found = audit.env_drift(H, read_now, stage5, '/etc/profile.d/npuops-hccl.sh', intent)
    assert [(f['check'], f['value'], f['expected'], f['stage']) for f in found] == [('HCCL_RDMA_SL', '4', 3, 5)]
    assert found[0]['fix'] == 'playbooks/site.yml --tags hccl_env writes it again'
    # without an applied stage 5 the intent still counts; an edit the record names is said once
    assert [f['check'] for f in audit.env_drift(H, read_now, None, '/p', intent)] == ['HCCL_RDMA_SL']
    edited = {'exists': True, 'variables': {'HCCL_RDMA_SL': '4', 'HCCL_RDMA_TC': '33', 'HCCL_BUFFSIZE': '200'}}
    assert [f['check'] for f in audit.env_drift(H, edited, stage5, '/p', INTENT)] == ['HCCL_RDMA_TC']


def test_a_read_that_failed_says_what_to_do_not_which_playbook():
    found = audit.port_drift(H, WANT, {'failed': True, 'msg': 'hccn_tool not found'})
    assert found[0]['fix'] == audit.UNREAD and 'roce_lossless' not in found[0]['msg']


def test_a_clean_audit_without_any_applied_run_says_it_compared_with_the_intent_only():
    document = audit.node_document('a1', H, [], {4: 'no run in /r applied stage 4 on node02'}, None, 'T')
    dummy, failed, msg = audit.summary('a1', {H: document}, {}, 'T')
    assert not failed and msg.endswith('(node02: no applied run of stages 4-7 in the report directory, so compared '
                                       'with the intent only)')


def test_the_audit_metrics_parse_as_prometheus_text_with_a_sample_per_node():
    from prometheus_client.parser import text_string_to_metric_families  # pylint: disable=import-outside-toplevel
    from ansible_collections.npuops.ascend.plugins.plugin_utils import metrics  # pylint: disable=import-outside-toplevel
    ports = {'devices': {'0': {'mtu': 1500, 'pfc_priorities': [], 'dscp_to_tc': [{'dscp': 33, 'tc': 2}]}}}
    drift = audit.port_drift(H, WANT[:1], ports)
    documents = {'node01': audit.node_document('a1', 'node01', [], {}, None, 'T'),
                 H: audit.node_document('a1', H, drift, {}, None, 'T')}
    document, dummy, dummy = audit.summary('a1', documents, {'node03': 'no audit record'}, 'T')
    samples = dict(((s.name, s.labels.get('node')), s.value)
                   for family in text_string_to_metric_families(metrics.audit_metrics(document, now=1796466900))
                   for s in family.samples)
    assert samples == {('npuops_audit_timestamp_seconds', None): 1796466900.0,
                       ('npuops_audit_node_lost', 'node01'): 0.0, ('npuops_audit_node_lost', H): 0.0,
                       ('npuops_audit_node_lost', 'node03'): 1.0,
                       ('npuops_audit_drift_findings', 'node01'): 0.0, ('npuops_audit_drift_findings', H): 2.0}
