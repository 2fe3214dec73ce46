"""npuops.ascend.stage_health: stage 0 on each node (health_info in one task, the node's findings, its record in the
store) and over the PoD from the records only - the ports of two nodes against each other, a record of another run
never used, the verdict counting the PoD findings for the nodes they name. The module's results are made by run_module
from real samples."""

from __future__ import annotations

import json
import os

import pytest
from ansible.errors import AnsibleActionFail

from ansible_collections.npuops.ascend.plugins.action import stage_health as action
from ansible_collections.npuops.ascend.plugins.plugin_utils import gate, store
from ansible_collections.npuops.ascend.plugins.plugin_utils.findings import finding
from ansible_collections.npuops.ascend.tests.unit.plugins.action import stage_actions
from ansible_collections.npuops.ascend.tests.unit.plugins.modules import conftest as modules_conftest
from ansible_collections.npuops.ascend.tests.unit.plugins.plugin_utils import node_reads
from ansible_collections.npuops.ascend.tests.unit.plugins.plugin_utils.node_reads import H, PLAN, ports_read

# the fixtures, bound here so that pytest finds them
run_module = modules_conftest.run_module
host_read = node_reads.host_read
node = node_reads.node
RUN = 'R1'
HEALTH_INFO = 'npuops.ascend.health_info'
ROLE_OPTIONS = dict(npu=True, npu_subset=['board', 'health', 'ecc', 'topo', 'processes'], health_view='unhealthy',
                    ecc_again=True, ecc_again_scope='errors', ports=True, port_queries=['link', 'ip', 'net_health', 'tls'],
                    host=True, container='auto')
# what the action adds for the module: the root of the container check and how many /dev/davinciN it needs
MODULE_OPTIONS = dict(ROLE_OPTIONS, container_root='/', container_npus=8)


def health_info(parts):
    """What health_info returns for the parts of a node read (each in the shape of its own module)."""
    out = dict((key, parts.get(key)) for key in action.PARTS)
    out.update(changed=False, env_files=None, failed_parts=[])
    return out


def make_action(args, check_mode=False, result=None, calls=None):
    return stage_actions.make_action(action.ActionModule, args, check_mode, lambda name: result, calls)


def node_step(tmp_path, inventory_name, result, check_mode=False, calls=None, **extra):
    args = dict(step='node', run_dir=str(tmp_path / RUN), run_id=RUN, **extra)
    return stage_actions.run_step(make_action(args, check_mode, result, calls), {'inventory_hostname': inventory_name})


def pod_step(tmp_path, active, check_mode=False, **extra):
    args = dict(step='pod', run_dir=str(tmp_path / RUN), run_id=RUN, **extra)
    return stage_actions.run_step(make_action(args, check_mode),
                                  {'inventory_hostname': active[0], 'ansible_play_hosts': active})


def read_json(path):
    with open(path, encoding='utf-8') as handle:
        return json.load(handle)


def test_the_node_step_runs_health_info_once_and_records_the_ports_and_the_product(tmp_path, node):
    parts = node()
    calls = []
    result = node_step(tmp_path, H, health_info(parts), calls=calls, plan=PLAN, **ROLE_OPTIONS)
    # one module run, with the options the role passes and nothing else
    assert calls == [(HEALTH_INFO, MODULE_OPTIONS)]
    assert result['changed'] is False and result['findings'] == [] and 'failed' not in result
    assert dict((key, result[key]) for key in action.PARTS) == dict((key, parts.get(key)) for key in action.PARTS)
    record = read_json(tmp_path / RUN / 'nodes' / H / 'stage0.json')
    assert record == result['record'] and record['status'] == 'passed' and record['role'] == 'health_check'
    # what the PoD part checks of each port, nothing more
    assert record['data']['ports'] == {'devices': dict(
        (str(dev), {'address': '10.10.0.1%d' % dev, 'netmask': '255.255.255.0', 'tls': False}) for dev in range(8))}
    assert record['data']['product'] == parts['npu']['summary']['product']
    assert record['data']['product']['family'] == 'A2' and record['data']['product']['roce_ports'] is True
    assert result['msg'] == 'recorded stage 0 (health_check) of node-07: passed'


def test_the_limits_and_the_plan_reach_the_findings(tmp_path, node):
    parts = node()
    result = node_step(tmp_path, H, health_info(parts), max_temp_c=55, product_family='A3', plan=[
        {'device': 0, 'address': '10.10.0.99', 'netmask': '255.255.255.0'}])
    checks = [(f['device'], f['check']) for f in result['findings']]
    assert (None, 'product') in checks and (0, 'address') in checks
    assert [dev for dev, check in checks if check == 'temperature'] == [2, 3, 4, 5, 6, 7]   # the idle table: 54-59 C
    record = read_json(tmp_path / RUN / 'nodes' / H / 'stage0.json')
    assert record['status'] == 'failed' and record['findings'] == result['findings']
    assert 'node-07: npu-smi shows 910B3 chips (family A2) but the PoD declares family A3' in record['failures'][0]


def test_a_module_that_could_not_run_stands_for_every_part(tmp_path):
    broken = {'failed': True, 'msg': 'node-07: the module failed: /usr/bin/python3: not found', 'rc': 127}
    result = node_step(tmp_path, H, broken)
    # not a failure of the task: a failure finding of the node for every part, so that the gate names every node
    assert 'failed' not in result
    assert [f['check'] for f in result['findings']] == ['npu', 'ports', 'numa', 'host_info']
    assert result['findings'][0]['msg'] == ('node-07: npu_info (npu-smi) could not read the node: the module failed: '
                                            '/usr/bin/python3: not found')
    assert all(result[key] == broken for key in action.PARTS)
    record = read_json(tmp_path / RUN / 'nodes' / H / 'stage0.json')
    assert record['status'] == 'failed' and len(record['failures']) == 4
    assert record['data'] == {'ports': {'devices': {}}, 'product': None, 'power': None, 'links': None}


def test_a_concern_switched_off_is_not_checked_nor_handed_on(tmp_path, node):
    parts = node()
    parts['ports'] = {'msg': 'node-07: hccn_tool not found'}    # would be a finding if it were checked
    result = node_step(tmp_path, H, health_info(parts), ports=False)
    assert result['findings'] == []
    assert read_json(tmp_path / RUN / 'nodes' / H / 'stage0.json')['data']['ports'] is None
    # the NPUs and the host switched off: what their parts hold is not looked at, the ports still are
    unread = dict((key, {'msg': 'node-07: not read'}) for key in action.PARTS)
    result = node_step(tmp_path, H, health_info(unread), npu=False, host=False)
    assert [f['check'] for f in result['findings']] == ['ports']
    assert result['record']['data'] == {'ports': {'devices': {}}, 'product': None, 'power': None, 'links': None}


def test_check_mode_reads_and_records_as_a_dry_run(tmp_path, node):
    calls = []
    result = node_step(tmp_path, H, health_info(node()), check_mode=True, calls=calls)
    assert len(calls) == 1 and result['record']['check_mode'] is True
    assert read_json(tmp_path / RUN / 'nodes' / H / 'stage0.json')['check_mode'] is True


def two_nodes(tmp_path, run_module, node):
    """node01 and node02 recorded; node02's NPU 1 has the address of node01's NPU 5, and NPU 0 one outside the plane."""
    node_step(tmp_path, 'node01', health_info(node()))
    node02 = ports_read(run_module, devices=[0, 1], queries=['link', 'ip', 'net_health', 'tls'],
                        ip={0: 'hccn_tool/ip/mc_910a_dev0', 1: 'hccn_tool/ip/mc_worker0_dev5'})
    node_step(tmp_path, 'node02', health_info(node(ports=node02)))


def test_the_pod_step_checks_the_ports_from_the_records_and_the_verdict_names_both_nodes(tmp_path, run_module, node):
    two_nodes(tmp_path, run_module, node)
    result = pod_step(tmp_path, ['node01', 'node02'], parameter_plane='10.10.0.0/24')
    conflict = 'address 10.10.0.15 is used by node01 NPU 5, node02 NPU 1'
    assert result['findings'] == [
        finding('node02', 0, 'subnet', '192.161.200.10', '10.10.0.0/24',
                'address 192.161.200.10 is outside the parameter plane 10.10.0.0/24'),
        finding('node01', 5, 'ip_conflict', '10.10.0.15', 'unique', conflict),
        finding('node02', 1, 'ip_conflict', '10.10.0.15', 'unique', conflict),
    ]
    assert result['missing'] == [] and result['changed'] is False
    pod, problem = store.read_pod_record(str(tmp_path / RUN), RUN, 0)
    assert problem is None and pod['findings'] == result['findings'] and pod['role'] == 'health_check'
    # the node records keep the node's own findings; the verdict counts the PoD's for the nodes they name
    assert store.read_record(str(tmp_path / RUN), RUN, 'node01', 0)[0]['status'] == 'passed'
    outcome = gate.verdict(str(tmp_path / RUN), RUN, 0, 'health_check', ['node01', 'node02'], ['node01', 'node02'])
    assert not outcome['passed']
    assert outcome['msg'] == ('Stage 0 (health_check) gate failed on 2 node(s) (node01, node02): node01 NPU 5, node02 NPU 1: '
                              + conflict + '; node02 NPU 0: address 192.161.200.10 is outside the parameter plane 10.10.0.0/24')


def test_the_pod_step_leaves_the_ports_alone_when_they_are_not_checked(tmp_path, run_module, node):
    two_nodes(tmp_path, run_module, node)
    result = pod_step(tmp_path, ['node01', 'node02'], ports=False, parameter_plane='10.10.0.0/24')
    assert result['findings'] == []
    assert store.read_pod_record(str(tmp_path / RUN), RUN, 0)[0]['findings'] == []


def test_the_pod_step_never_uses_a_record_of_another_run(tmp_path, run_module, node):
    two_nodes(tmp_path, run_module, node)
    path = tmp_path / RUN / 'nodes' / 'node02' / 'stage0.json'
    record = json.loads(path.read_text())
    record['run'] = 'R0'
    path.write_text(json.dumps(record))
    result = pod_step(tmp_path, ['node01', 'node02'], parameter_plane='10.10.0.0/24')
    assert result['findings'] == [] and result['missing'] == ['node02']
    # only the nodes still in the play are read
    assert pod_step(tmp_path, ['node01'])['missing'] == []


def test_a_parameter_plane_that_is_not_a_network_stops_the_pod_step(tmp_path, run_module, node):
    two_nodes(tmp_path, run_module, node)
    with pytest.raises(AnsibleActionFail, match=r"stage_health: pod_port_findings: parameter_plane '10.10.0.0/33' is not"):
        pod_step(tmp_path, ['node01', 'node02'], parameter_plane='10.10.0.0/33')
    assert not (tmp_path / RUN / 'pod').exists()


def test_a_bad_run_id_is_refused_before_the_module_runs(tmp_path, node):
    calls = []
    args = dict(step='node', run_dir=str(tmp_path / 'x'), run_id='../up')
    plugin = make_action(args, False, health_info(node()), calls)
    with pytest.raises(AnsibleActionFail, match='run id'):
        stage_actions.run_step(plugin, {'inventory_hostname': H})
    assert calls == [] and not os.path.exists(str(tmp_path / 'x'))


# ---- the node's report ----------------------------------------------------------------------------------------------

TEMPLATE = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', 'roles', 'health_check', 'templates',
                        'report.md.j2')
REPORT_VARS = {'gate_run_id': RUN, 'ansible_check_mode': False,
               'health_check_port_queries': ['link', 'ip', 'net_health', 'tls']}


def with_template(plugin):
    """The action with Ansible's loader and templar, and the role's Markdown template (as in a play)."""
    from ansible.parsing.dataloader import DataLoader  # pylint: disable=import-outside-toplevel
    from ansible.template import Templar  # pylint: disable=import-outside-toplevel
    plugin._loader = DataLoader()
    plugin._templar = Templar(loader=plugin._loader)
    plugin._find_needle = lambda folder, name: os.path.abspath(TEMPLATE) if (folder, name) == ('templates', 'report.md.j2') \
        else None
    return plugin


def report_step(tmp_path, inventory_name, result):
    args = dict(step='node', run_dir=str(tmp_path / RUN), run_id=RUN, report=True)
    plugin = with_template(make_action(args, False, result))
    return stage_actions.run_step(plugin, dict(REPORT_VARS, inventory_hostname=inventory_name))


def report_pod_step(tmp_path, active, **extra):
    args = dict(step='pod', run_dir=str(tmp_path / RUN), run_id=RUN, report=True, **extra)
    plugin = with_template(make_action(args))
    return stage_actions.run_step(plugin, dict(REPORT_VARS, inventory_hostname=active[0], ansible_play_hosts=active))


def test_the_node_step_writes_the_report_and_the_pod_step_adds_its_findings_to_the_nodes_it_names(tmp_path, run_module,
                                                                                                  node):
    one = report_step(tmp_path, 'node01', health_info(node()))
    node02 = ports_read(run_module, devices=[0, 1], queries=['link', 'ip', 'net_health', 'tls'],
                        ip={0: 'hccn_tool/ip/mc_910a_dev0', 1: 'hccn_tool/ip/mc_worker0_dev5'})
    report_step(tmp_path, 'node02', health_info(node(ports=node02)))
    directory = tmp_path / RUN / 'stage0-health_check'
    assert one['report'] == str(directory / 'node01.json')
    document = read_json(directory / 'node01.json')
    assert sorted(document) == ['container', 'findings', 'host', 'host_info', 'npu', 'numa', 'ports', 'run', 'stage']
    assert (document['host'], document['run'], document['stage']) == ('node01', RUN, 0)
    assert document['findings'] == one['findings'] and document['npu'] == one['npu'] and document['ports'] == one['ports']
    text = (directory / 'node01.md').read_text(encoding='utf-8')
    assert text.startswith('# Health check of node01\n\nRun R1, stage 0.') and '## NPUs' in text and '## Host' in text
    assert 'ip_conflict' not in text
    # the PoD step finds the address used twice: both nodes' reports are written again with it, node01's own kept
    result = report_pod_step(tmp_path, ['node01', 'node02'], parameter_plane='10.10.0.0/24')
    assert result['reports'] == [str(directory / 'node01.json'), str(directory / 'node02.json')]
    again = read_json(directory / 'node01.json')
    conflict = [f for f in again['findings'] if f['check'] == 'ip_conflict']
    assert [f['device'] for f in conflict] == [5]
    assert again['findings'][:len(one['findings'])] == one['findings'] and again['npu'] == document['npu']
    text = (directory / 'node01.md').read_text(encoding='utf-8')
    assert ('| fail | 5 | ip_conflict | 10.10.0.15 | unique | node01 NPU 5: address 10.10.0.15 is used by node01 NPU 5, '
            'node02 NPU 1 |') in text, text
    # run again, the PoD findings are not added twice
    report_pod_step(tmp_path, ['node01', 'node02'], parameter_plane='10.10.0.0/24')
    assert read_json(directory / 'node01.json') == again


def test_no_report_unless_asked(tmp_path, node):
    result = node_step(tmp_path, 'node01', health_info(node()))
    assert 'report' not in result and not (tmp_path / RUN / 'stage0-health_check').exists()


def test_the_node_record_keeps_the_power_and_the_pod_step_compares_it_across_the_pod(tmp_path, run_module, node):
    two_nodes(tmp_path, run_module, node)
    path = tmp_path / RUN / 'nodes' / 'node02' / 'stage0.json'
    record = json.loads(path.read_text())
    # per NPU the higher of the table's Power(W) (NPU 0 102.8 W ... NPU 7 105.1 W) and its -t power view (103.5 W)
    assert record['data']['power'] == {'0': 103.5, '1': 103.5, '2': 103.5, '3': 108.7, '4': 103.9, '5': 103.5, '6': 107.7,
                                       '7': 105.1}
    assert pod_step(tmp_path, ['node01', 'node02'], ports=False)['findings'] == []
    record['data']['power']['3'] = 310.0
    path.write_text(json.dumps(record))
    found = pod_step(tmp_path, ['node01', 'node02'], ports=False)['findings']
    assert [(f['host'], f['device'], f['check'], f['severity']) for f in found] == [('node02', 3, 'power_vs_median', 'warn')]
    assert 'of the other 15 NPUs of the PoD' in found[0]['msg']
    assert pod_step(tmp_path, ['node01', 'node02'], ports=False, max_power_over_median_pct=None)['findings'] == []
    assert pod_step(tmp_path, ['node01', 'node02'], ports=False, npu=False)['findings'] == []


def test_the_power_limits_take_a_number_or_null():
    assert action.optional_numbers({'max_power_w': '400', 'max_power_over_median_pct': None}) == {
        'max_power_w': 400.0, 'max_power_over_median_pct': None}
    assert action.optional_numbers({'max_power_w': 'None', 'max_power_over_median_pct': 30})['max_power_w'] is None
    for bad in ('many', -1, True):
        with pytest.raises(AnsibleActionFail, match='max_power_w must be a number'):
            action.optional_numbers({'max_power_w': bad, 'max_power_over_median_pct': 30})


# ---- link quality over time -----------------------------------------------------------------------------------------

LINK_QUERIES = ['link', 'ip', 'net_health', 'tls', 'optical', 'stat', 'link_stat']
# the real trimmed -stat -g output (hccn_tool/stat/mc_910a_trimmed) with NPU 1's receive errors grown to 12
STAT_GROWN = 'packet statistics:\nroce_rx_err_pkt_num:12\nroce_tx_err_pkt_num:0\n'


def test_the_record_keeps_the_link_quality_and_the_next_run_names_a_counter_that_grew(tmp_path, run_module, node):
    first = node_step(tmp_path, 'node02', health_info(node(ports=ports_read(run_module, queries=LINK_QUERIES))),
                      port_queries=LINK_QUERIES)
    links_a = first['record']['data']['links']
    assert sorted(links_a['devices']) == [str(dev) for dev in range(8)]
    assert links_a['devices']['1']['counters'] == {'roce_rx_err_pkt_num': 0, 'roce_tx_err_pkt_num': 0, 'link_up_count': 2,
                                                   'link_down_records': 1, 'ecc_multi_bit': 0, 'ecc_single_bit': 0}
    assert links_a['devices']['1']['optical']['lanes'][1]['rx_mw'] == 0.0054   # 'not present': kept, not judged
    assert links_a['compared']['run'] is None and 'nothing to compare with' in links_a['compared']['msg']
    assert first['findings'] == [] and first['links'] == links_a
    # the next run, in its own directory beside the first: NPU 1 counted 12 receive errors since
    later = 'R2'
    args = dict(step='node', run_dir=str(tmp_path / later), run_id=later, port_queries=LINK_QUERIES)
    grown = health_info(node(ports=ports_read(run_module, queries=LINK_QUERIES, stat_1=STAT_GROWN)))
    second = stage_actions.run_step(make_action(args, False, grown), {'inventory_hostname': 'node02'})
    assert [(f['host'], f['device'], f['check'], f['severity']) for f in second['findings']] == [
        ('node02', 1, 'roce_errors_growing', 'warn')]
    msg = second['findings'][0]['msg']
    assert msg.startswith('node02 NPU 1: RoCE errors and retransmissions grew between run %s (%s) and run %s: '
                          'roce_rx_err_pkt_num 0 -> 12;' % (RUN, links_a['time'], later)), msg
    record = read_json(tmp_path / later / 'nodes' / 'node02' / 'stage0.json')
    assert record['status'] == 'passed' and record['warnings'] == [msg]
    assert record['data']['links']['compared']['run'] == RUN
    assert record['data']['links']['compared']['grown'] == [{'device': 1, 'counter': 'roce_rx_err_pkt_num', 'before': 0,
                                                             'now': 12}]
    # fail makes it a failure of the gate; off compares and records without a finding
    failing = stage_actions.run_step(make_action(dict(args, counter_growth='fail'), False, grown),
                                     {'inventory_hostname': 'node02'})
    assert failing['record']['status'] == 'failed'
    quiet = stage_actions.run_step(make_action(dict(args, counter_growth='off'), False, grown),
                                   {'inventory_hostname': 'node02'})
    assert quiet['findings'] == [] and quiet['links']['compared']['grown'][0]['now'] == 12
    # a third run compares with the newest other run, R2, where NPU 1 already showed 12
    third = stage_actions.run_step(make_action(dict(args, run_dir=str(tmp_path / 'R3'), run_id='R3'), False, grown),
                                   {'inventory_hostname': 'node02'})
    assert third['findings'] == [] and third['links']['compared']['run'] == later
    assert third['links']['compared']['msg'].startswith('compared with run R2 (') and 'no counter grew' in third['links']['compared']['msg']
    # another node has no earlier run of its own: nothing to compare with (never another node's record)
    other = node_step(tmp_path, 'node03', grown, port_queries=LINK_QUERIES)
    assert other['findings'] == [] and other['links']['compared']['run'] is None


def test_an_rx_lane_below_the_low_threshold_fails_the_node(tmp_path, run_module, node):
    present = node_reads.OPTICAL.replace(': not present', ': present')   # the real output, module present
    ports = ports_read(run_module, devices=[0, 1], queries=LINK_QUERIES, optical_0=present)
    result = node_step(tmp_path, 'node01', health_info(node(ports=ports)), optical_margin_db=2.0)
    assert [(f['device'], f['check'], f['severity']) for f in result['findings']] == [(0, 'optical_rx_power', 'fail')]
    assert result['record']['status'] == 'failed'
