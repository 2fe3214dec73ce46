"""The stage 0 report template (roles/health_check/templates/report.md.j2) rendered by Ansible's own templating."""

from __future__ import annotations

import os

import pytest

templating = pytest.importorskip('ansible.template')
dataloader = pytest.importorskip('ansible.parsing.dataloader')

TEMPLATE = os.path.join(os.path.dirname(__file__), '..', '..', 'roles', 'health_check', 'templates', 'report.md.j2')
QUERIES = ['link', 'ip', 'net_health', 'tls']


def render(queries):
    ports = {'devices': {str(dev): {'link': 'UP', 'address': '10.20.%d.11' % dev, 'netmask': '255.255.255.0',
                                    'net_health': 'Success', 'tls': True, **({'pfc_priorities': [4]} if 'pfc' in queries else {})}
                         for dev in range(2)}}
    npu = {'devices': {str(dev): {'info': {'health': 'OK', 'temp_c': 40 + dev, 'power_w': 90.5}} for dev in range(2)}}
    variables = {'inventory_hostname': 'node01', 'ansible_check_mode': False, 'gate_run_id': '20261204T000000',
                 'health_check_port_queries': queries,
                 'health_check_node': {'ports': ports, 'npu': npu, 'numa': {'devices': {'0': {'numa_node': 6}}},
                                       'host_info': {}, 'findings': []},
                 'health_check_pod': {'findings': []}}
    with open(TEMPLATE, encoding='utf-8') as handle:
        source = handle.read()
    templar = templating.Templar(loader=dataloader.DataLoader(), variables=variables)
    return templar.template(templating.trust_as_template(source))


def npu_table(text):
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('| NPU | device |'))
    table = []
    for line in lines[start:]:
        if not line.startswith('|'):
            break
        table.append([cell.strip() for cell in line.strip('|').split('|')])
    return table


@pytest.mark.parametrize('queries, pfc', [(QUERIES, False), (QUERIES + ['pfc'], True)])
def test_the_pfc_column_is_there_only_when_pfc_was_read(queries, pfc):
    table = npu_table(render(queries))
    header, rows = table[0], table[2:]
    assert ('PFC' in header) is pfc
    assert header[-1] == 'NUMA node' and len(rows) == 2
    assert all(len(row) == len(header) for row in table)   # every row has a cell per column
    by_name = [dict(zip(header, row)) for row in rows]
    assert by_name[0]['address'] == '10.20.0.11/255.255.255.0' and by_name[0]['NUMA node'] == '6'
    assert by_name[1]['temp C'] == '41' and by_name[1]['NUMA node'] == '-'
    if pfc:
        assert [row['PFC'] for row in by_name] == ['[4]', '[4]']
