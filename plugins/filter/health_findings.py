# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that turn what the stage roles read into findings, and findings into a gate message.

A finding is ``{host, device, check, value, expected, severity, msg}``: ``device`` is the NPU
id (None for the node itself), ``severity`` is ``fail`` (the stage's gate stops the run) or
``warn`` (reported), ``msg`` a sentence naming the node, the device and the value against
what was expected. The documentation of each filter is in the .yml file of the same name.
"""

from __future__ import annotations

import ipaddress

from ansible.errors import AnsibleFilterError

FAIL = 'fail'
WARN = 'warn'

HEALTH_LIMITS = {
    'npus_per_node': 8,
    'max_temp_c': 80,
    'min_hugepages': 1,
    'max_swappiness': 10,
    'min_nofile': 65535,
    'product_family': None,
}


def _where(host, device):
    return '%s NPU %s' % (host, device) if device is not None else str(host)


def _own_words(host, device, text):
    """A module's message without its subject when that names the same node (and NPU): the finding names it first."""
    text = str(text)
    for subject in (['NPU %s on %s' % (device, host)] if device is not None else []) + [str(host)]:
        if text.startswith(subject + ': '):
            return text[len(subject) + 2:]
    return text


def finding(host, device, check, value, expected, text, severity=FAIL):
    """One finding; ``text`` says what is wrong after the subject."""
    return {'host': host, 'device': device, 'check': check, 'value': value, 'expected': expected, 'severity': severity,
            'msg': '%s: %s' % (_where(host, device), text)}


def _failed(result):
    """The message of a module result that failed (registered with failed_when: false), else None."""
    if not isinstance(result, dict) or result.get('skipped'):
        return None
    if 'devices' not in result and 'pairs' not in result:
        return result.get('msg') or 'the task did not return its data'
    return None


def _devices(result):
    devices = (result or {}).get('devices') or {}
    return dict((int(key), value) for key, value in devices.items() if str(key).isdigit())


def _ecc_counts(entry):
    """(multi-bit, single-bit) error counts of one NPU's ``ecc`` view, summed over chips and memories.

    Multi-bit: the larger of the current and the aggregate double-bit counts; single-bit: the
    current count (what grows while a memory degrades).
    """
    current = aggregate = single = 0
    for chip in (entry or {}).get('chips') or []:
        for key, value in chip.items():
            if not isinstance(value, int) or isinstance(value, bool):
                continue
            if key.endswith('_double_bit_error_count'):
                current += value
            elif key.endswith('_double_bit_aggregate_total_err_cnt'):
                aggregate += value
            elif key.endswith('_single_bit_error_count'):
                single += value
    return max(current, aggregate), single


def _rows(device):
    """The summary-table rows of one NPU: its dies (A3: two per NPU; 310P Duo: two chips per card), else its one row."""
    return [row for row in device.get('dies') or [device.get('info') or {}] if isinstance(row, dict)]


def _shared_bus_ids(npu):
    """How many table rows repeat the bus id of an earlier row (the second chip of an Atlas 300I Duo card)."""
    seen, repeats = set(), 0
    for entry in _devices(npu).values():
        for row in _rows(entry):
            bus = row.get('bus_id')
            if bus in seen:
                repeats += 1
            elif bus:
                seen.add(bus)
    return repeats


def _npu_buses(npu):
    """[(label, bus id)] of every summary-table row of the npu read: 'NPU 6', or 'NPU 0 chip 1' for an NPU of several."""
    found = []
    for dev, entry in sorted(_devices(npu).items()):
        rows = _rows(entry)
        buses = [str(row.get('bus_id') or '').lower() for row in rows]
        if len(set(buses)) == 1:
            # one NPU, or the chips of one card on one PCIe function (Atlas 300I Duo)
            found.append(('NPU %s' % dev, buses[0]))
            continue
        found.extend(('NPU %s chip %s' % (dev, row.get('chip')), bus) for row, bus in zip(rows, buses))
    return found


def _missing_on_pcie(host_info, limits):
    """': NPU 6 (bus 0000:41:00.0) is missing' - the NPUs npu-smi lists whose bus id lspci does not show, or the NPU
    ids npu-smi does not list either; '' when the npu read is not there to tell."""
    buses = limits.get('npu_buses')
    if buses is None:
        return ''
    on_pcie = set(str(address).lower() for address in host_info.get('devices') or {})
    missing, seen = [], set()
    for label, bus in buses:
        if bus and bus not in on_pcie and bus not in seen:
            seen.add(bus)
            missing.append('%s (bus %s)' % (label, bus))
    # NPU ids npu-smi does not list, where one row is one NPU numbered from 0 (an A2): those are gone from both
    listed = set(int(label.split()[1]) for label, _bus in buses)
    absent = []
    if listed and all(len(label.split()) == 2 for label, _bus in buses) and max(listed) < limits['npus_per_node']:
        absent = [str(dev) for dev in range(limits['npus_per_node']) if dev not in listed]
    parts = []
    if missing:
        parts.append('%s %s missing' % (', '.join(missing), 'is' if len(missing) == 1 else 'are'))
    if absent:
        parts.append('NPU %s %s missing from npu-smi info as well' % (', '.join(absent), 'is' if len(absent) == 1 else 'are'))
    return (': ' + '; '.join(parts)) if parts else ''


def _temperature(device):
    temps = []
    for info in _rows(device):
        if isinstance(info.get('temp_c'), (int, float)):
            temps.append(info['temp_c'])
    for chip in (device.get('temp') or {}).get('chips') or []:
        value = chip.get('npu_temperature_c')
        if isinstance(value, (int, float)):
            temps.append(value)
    return max(temps) if temps else None


def _npu_findings(host, npu, npu_again, limits):
    out = []
    devices = _devices(npu)
    # npus_per_node counts devices: an NPU of two dies (A3) or a card of two chips (310P Duo) is two
    count = sum(len(_rows(entry)) for entry in devices.values())
    if count != limits['npus_per_node']:
        listed = ('%d NPUs' % count if count == len(devices)
                  else '%d NPUs with %d devices (dies or chips)' % (len(devices), count))
        out.append(finding(host, None, 'npu_count', count, limits['npus_per_node'],
                           'npu-smi lists %s, expected %d' % (listed, limits['npus_per_node'])))
    product = ((npu or {}).get('summary') or {}).get('product') or {}
    declared = limits.get('product_family')
    if declared and product.get('known') and product.get('family') != str(declared):
        out.append(finding(host, None, 'product', product.get('family'), str(declared),
                           'npu-smi shows %s chips (family %s) but the PoD declares family %s (npuops_product_family): set '
                           'npuops_product_family: %s for this group, or move the node to the group of its product'
                           % ('/'.join(product.get('chip_names') or []), product.get('family'), declared, product.get('family'))))
    for error in (npu or {}).get('errors') or []:
        if isinstance(error, dict) and error.get('query') == 'info':
            out.append(finding(host, error.get('device'), 'npu_row', None, 'readable',
                               _own_words(host, error.get('device'), error.get('msg') or 'a row of npu-smi info could not be read')))
    again = _devices(npu_again)
    for dev, entry in sorted(devices.items()):
        words = [row.get('health') for row in _rows(entry)]
        health = next((word for word in words if word != 'OK'), 'OK') if words else None
        detail = entry.get('health') or {}
        if health != 'OK' or (detail.get('health') not in (None, 'OK')):
            word = detail.get('health') if detail.get('health') not in (None, 'OK') else health
            codes = ', '.join(detail.get('error_codes') or []) or 'none'
            out.append(finding(host, dev, 'health', word, 'OK', 'health is %s (error codes %s), expected OK' % (word, codes)))
        multi, single = _ecc_counts(entry.get('ecc'))
        if multi:
            out.append(finding(host, dev, 'ecc_multi_bit', multi, 0, '%d multi-bit ECC error(s), expected 0' % multi))
        if dev in again:
            multi2, single2 = _ecc_counts(again[dev].get('ecc'))
            if single2 > single:
                out.append(finding(host, dev, 'ecc_single_bit_growing', single2 - single, 0,
                                   'single-bit ECC errors grew from %d to %d between two reads' % (single, single2)))
        temp = _temperature(entry)
        if temp is not None and temp > limits['max_temp_c']:
            out.append(finding(host, dev, 'temperature', temp, limits['max_temp_c'],
                               'temperature %s C is above %s C' % (temp, limits['max_temp_c'])))
    return out


def _port_findings(host, ports, plan):
    out = []
    planned = dict((int(p['device']), p) for p in plan or [] if isinstance(p, dict) and 'device' in p)
    unanswered = dict(((e.get('device'), e.get('query')), e) for e in (ports or {}).get('errors') or [])

    def unread(dev, query):
        """The error text when ``query`` of ``dev`` could not be read: a value that was not read is not a value."""
        error = unanswered.get((dev, query))
        if error is None:
            return None
        return _own_words(host, dev, error.get('msg') or '%s could not be read' % query)

    for dev, entry in sorted(_devices(ports).items()):
        if entry.get('link') != 'UP':
            text = unread(dev, 'link')
            out.append(finding(host, dev, 'link', entry.get('link'), 'UP',
                               'the link could not be read: %s' % text if entry.get('link') is None and text
                               else 'link is %s, expected UP' % entry.get('link')))
        if 'address' in entry:
            if entry['address'] is None:
                text = unread(dev, 'ip')
                out.append(finding(host, dev, 'address', None, (planned.get(dev) or {}).get('address'),
                                   'the address could not be read: %s' % text if text else 'the port has no IP address'))
            elif dev in planned and (entry['address'], entry.get('netmask')) != (planned[dev].get('address'), planned[dev].get('netmask')):
                out.append(finding(host, dev, 'address', '%s/%s' % (entry['address'], entry.get('netmask')),
                                   '%s/%s' % (planned[dev].get('address'), planned[dev].get('netmask')),
                                   'address %s/%s differs from the inventory plan %s/%s'
                                   % (entry['address'], entry.get('netmask'), planned[dev].get('address'), planned[dev].get('netmask'))))
        if 'net_health' in entry and entry['net_health'] != 'Success':
            text = unread(dev, 'net_health')
            out.append(finding(host, dev, 'net_health', entry['net_health'], 'Success',
                               'net_health could not be read: %s' % text if entry['net_health'] is None and text
                               else 'net_health is %s, expected Success' % entry['net_health']))
        for (edev, query), error in unanswered.items():
            if edev == dev and query not in ('link', 'net_health') and not (query == 'ip' and entry.get('address') is None):
                out.append(finding(host, dev, query, None, None,
                                   _own_words(host, dev, error.get('msg') or '%s could not be read' % query), WARN))
    return out


def _host_findings(host, numa, host_info, limits):
    out = []
    for dev, entry in sorted(_devices(numa).items()):
        if entry.get('numa_node') is None:
            text = ('no NUMA node found for its CPU affinity (%s)' % entry.get('cpu_affinity') if entry.get('cpu_affinity')
                    else 'npu-smi info -t topo shows no CPU affinity for it (an A3 topology has no such column), so its NUMA node is not known')
            out.append(finding(host, dev, 'numa_node', None, 'a NUMA node', text, WARN))
    if host_info and _failed(host_info) is None:
        memory = host_info.get('memory') or {}
        pages = memory.get('hugepages_total')
        if pages is not None and pages < limits['min_hugepages']:
            out.append(finding(host, None, 'hugepages', pages, '>= %d' % limits['min_hugepages'],
                               '%s huge pages configured, expected at least %d (vm.nr_hugepages)' % (pages, limits['min_hugepages'])))
        swappiness = host_info.get('swappiness')
        if swappiness is not None and swappiness > limits['max_swappiness']:
            out.append(finding(host, None, 'swappiness', swappiness, '<= %d' % limits['max_swappiness'],
                               'vm.swappiness is %s, the method recommends at most %d' % (swappiness, limits['max_swappiness']), WARN))
        soft = (host_info.get('nofile') or {}).get('soft')
        if soft is not None and soft < limits['min_nofile']:
            out.append(finding(host, None, 'nofile', soft, '>= %d' % limits['min_nofile'],
                               'open-file limit is %s, the method recommends at least %d (ulimit -n)' % (soft, limits['min_nofile']), WARN))
        expected = limits['npus_per_node'] - limits.get('shared_bus_ids', 0)
        if host_info.get('count') != expected:
            out.append(finding(host, None, 'pcie', host_info.get('count'), expected,
                               '%s NPUs visible on PCIe (lspci), expected %d%s' % (
                                   host_info.get('count'), expected, _missing_on_pcie(host_info, limits))))
        for error in host_info.get('errors') or []:
            out.append(finding(host, None, error.get('what'), None, None, _own_words(host, None, error.get('msg')), WARN))
    return out


def health_findings(data, limits=None):
    """Findings of the health check of one node (see health_findings.yml)."""
    if not isinstance(data, dict):
        raise AnsibleFilterError('health_findings expects a dictionary of the registered results, got %s' % type(data).__name__)
    merged = dict(HEALTH_LIMITS)
    merged.update(limits or {})
    host = data.get('host') or 'this node'
    # a read that did not run (switched off: null; when: false: skipped) is left out, not checked as empty
    data = dict((key, None if isinstance(value, dict) and value.get('skipped') else value) for key, value in data.items())
    out = []
    for key, tool in (('npu', 'npu_info (npu-smi)'), ('ports', 'hccn_info (hccn_tool)'), ('numa', 'numa_info'), ('host_info', 'host_info')):
        problem = _failed(data.get(key))
        if problem is not None:
            out.append(finding(host, None, key, None, None, '%s could not read the node: %s' % (tool, _own_words(host, None, problem))))
    if data.get('npu') is not None and _failed(data.get('npu')) is None:
        out.extend(_npu_findings(host, data.get('npu'), data.get('npu_again'), merged))
    if _failed(data.get('ports')) is None:
        out.extend(_port_findings(host, data.get('ports'), data.get('plan')))
    if data.get('npu') is not None and _failed(data.get('npu')) is None:
        # two chips of one card (Atlas 300I Duo) share one PCIe function: lspci shows one device for both
        merged['shared_bus_ids'] = _shared_bus_ids(data.get('npu'))
        merged['npu_buses'] = _npu_buses(data.get('npu'))
    out.extend(_host_findings(host, data.get('numa') if _failed(data.get('numa')) is None else None,
                              data.get('host_info'), merged))
    return out


def pod_port_findings(ports_by_host, parameter_plane=None):
    """PoD-wide findings over the hccn_info results of every node (see pod_port_findings.yml)."""
    if not isinstance(ports_by_host, dict):
        raise AnsibleFilterError('pod_port_findings expects {host: hccn_info result}, got %s' % type(ports_by_host).__name__)
    plane = None
    if parameter_plane:
        try:
            plane = ipaddress.ip_network(str(parameter_plane), strict=False)
        except ValueError as exc:
            raise AnsibleFilterError('pod_port_findings: parameter_plane %r is not a network: %s' % (parameter_plane, exc)) from exc
    out = []
    owners, masks, tls = {}, {}, {}
    for host in sorted(ports_by_host):
        for dev, entry in sorted(_devices(ports_by_host[host]).items()):
            address = entry.get('address')
            if address:
                owners.setdefault(address, []).append((host, dev))
                masks.setdefault(entry.get('netmask'), []).append((host, dev))
                if plane is not None and ipaddress.ip_address(address) not in plane:
                    out.append(finding(host, dev, 'subnet', address, str(plane),
                                       'address %s is outside the parameter plane %s' % (address, plane)))
            if isinstance(entry.get('tls'), bool):
                tls.setdefault(entry['tls'], []).append((host, dev))
    for address, users in sorted(owners.items()):
        if len(users) > 1:
            names = ', '.join(_where(h, d) for h, d in users)
            for host, dev in users:
                out.append(finding(host, dev, 'ip_conflict', address, 'unique', 'address %s is used by %s' % (address, names)))
    if len(masks) > 1:
        common = max(masks, key=lambda mask: len(masks[mask]))
        for mask, users in sorted(masks.items(), key=lambda kv: str(kv[0])):
            if mask != common:
                for host, dev in users:
                    out.append(finding(host, dev, 'netmask', mask, common,
                                       'netmask %s differs from the %s of the other %d ports' % (mask, common, len(masks[common]))))
    if len(tls) > 1:
        common = max(tls, key=lambda value: len(tls[value]))
        for value, users in tls.items():
            if value != common:
                for host, dev in users:
                    out.append(finding(host, dev, 'tls', value, common,
                                       'TLS switch is %s while the other %d ports of the PoD have %s; HCCL needs one setting '
                                       'on every port' % ('on' if value else 'off', len(tls[common]), 'on' if common else 'off')))
    return out


def _span(devices):
    """'0-3, 5' for [0, 1, 2, 3, 5]."""
    runs = []
    for dev in sorted(set(devices)):
        if runs and dev == runs[-1][1] + 1:
            runs[-1][1] = dev
        else:
            runs.append([dev, dev])
    return ', '.join(str(a) if a == b else '%d-%d' % (a, b) for a, b in runs)


def findings_text(findings, joiner='; '):
    """The messages of findings, the same text on several NPUs and nodes said once:
    'node01, node02 NPU 0-7: MTU is 1500, expected 9000'. Order of first appearance."""
    order, groups = [], {}
    for item in findings or []:
        if not isinstance(item, dict):
            continue
        host, device, msg = item.get('host'), item.get('device'), str(item.get('msg') or '')
        prefix = _where(host, device) + ': '
        if not msg.startswith(prefix):
            key, where = (None, msg), None
        else:
            key, where = (device is None, msg[len(prefix):]), (host, device)
        if key not in groups:
            groups[key] = []
            order.append(key)
        if where is not None:
            groups[key].append(where)
    lines = []
    for key in order:
        node_level, text = key
        if node_level is None:
            lines.append(text)
            continue
        hosts = []
        for host, _dev in groups[key]:
            if host not in hosts:
                hosts.append(host)
        if node_level:
            lines.append('%s: %s' % (', '.join(str(h) for h in hosts), text))
            continue
        spans = [(host, _span([d for h, d in groups[key] if h == host and isinstance(d, int)])) for host in hosts]
        if len(set(span for _h, span in spans)) == 1:
            lines.append('%s NPU %s: %s' % (', '.join(str(h) for h, _s in spans), spans[0][1], text))
        else:
            lines.append('%s: %s' % (', '.join('%s NPU %s' % (h, span) for h, span in spans), text))
    return joiner.join(lines) if joiner is not None else lines


def gate_message(findings, stage, name):
    """The gate's fail_msg: the failing nodes, then each problem once with the nodes and NPUs that have it."""
    failures = [f for f in findings or [] if f.get('severity') == FAIL]
    if not failures:
        return 'stage %s (%s): gate passed' % (stage, name)
    hosts = sorted(set(f.get('host') for f in failures))
    return 'Stage %s (%s) gate failed on %d node(s) (%s): %s' % (
        stage, name, len(hosts), ', '.join(str(h) for h in hosts), findings_text(failures))


def lost_node_finding(host):
    """The finding for a node that dropped out of the play before the gate."""
    text = 'the node dropped out before the gate (unreachable, or a task failed on it); see the errors above'
    return finding(host, None, 'reachable', None, None, text)


def stage_summary(hosts, hostvars, run_id=None, check_mode=False):
    """``{run, check_mode, nodes: {host: {stageN: {stage, role, status, failures, warnings}}}}`` for the summary file."""
    nodes = {}
    for host in hosts or []:
        results = (hostvars.get(host) or {}).get('gate_results') if hasattr(hostvars, 'get') else None
        nodes[str(host)] = dict(results or {})
    return {'run': run_id, 'check_mode': bool(check_mode), 'nodes': nodes}


# ---- stage 2: versions -------------------------------------------------------------------------

def _numbers(version):
    """'7.1.0.11.220' -> (7, 1, 0, 11, 220); None when a part is not a number (rc releases)."""
    parts = str(version or '').strip().split('.')
    if not parts or not all(p.isdigit() for p in parts):
        return None
    return tuple(int(p) for p in parts)


def _in_range(version, low, high):
    """Whether ``version`` lies in [low, high], comparing as many parts as the bound has; None when unknown."""
    value, lower, upper = _numbers(version), _numbers(low), _numbers(high)
    if value is None or lower is None or upper is None:
        return None
    return value[:len(lower)] >= lower and value[:len(upper)] <= upper


def _base(version):
    """'2.5.1+cpu' -> '2.5.1' (a local build tag does not change the release)."""
    return str(version or '').split('+', maxsplit=1)[0].strip()


def version_findings(stack, boards, table, host=None, unknown_is_fatal=False):
    """Fingerprint and findings of one node's software stack (see version_findings.yml)."""
    if not isinstance(stack, dict) or not isinstance(table, dict):
        raise AnsibleFilterError('version_findings expects the version_info result and the compatibility table')
    host = host or 'this node'
    unknown = FAIL if unknown_is_fatal else WARN
    out = []
    driver, firmware, cann = stack.get('driver') or {}, stack.get('firmware') or {}, stack.get('cann') or {}
    packages = stack.get('packages') or {}
    fingerprint = dict(stack.get('fingerprint') or {})
    npu_drivers, npu_firmware = {}, {}
    for dev, entry in sorted(_devices(boards).items()):
        board = entry.get('board') or {}
        if board.get('software_version'):
            npu_drivers.setdefault(board['software_version'], []).append(dev)
        if board.get('firmware_version'):
            npu_firmware.setdefault(board['firmware_version'], []).append(dev)
    fingerprint['npu_driver'] = ','.join(sorted(npu_drivers)) or None
    fingerprint['npu_firmware'] = ','.join(sorted(npu_firmware)) or None

    if not driver.get('version'):
        text = 'no driver version.info was found; is the Ascend driver installed?'
        out.append(finding(host, None, 'driver', None, 'version.info', text))
    for version, devices in sorted(npu_drivers.items()):
        if driver.get('version') and version != driver['version']:
            for dev in devices:
                out.append(finding(host, dev, 'driver_loaded', version, driver['version'],
                                   'the NPU runs driver %s but version.info says %s: the installed driver is not the loaded '
                                   'one (reboot pending?)' % (version, driver['version'])))
    if len(npu_firmware) > 1:
        common = max(npu_firmware, key=lambda v: len(npu_firmware[v]))
        for version, devices in npu_firmware.items():
            if version != common:
                for dev in devices:
                    text = 'firmware %s differs from the %s of the other NPUs of the node' % (version, common)
                    out.append(finding(host, dev, 'firmware', version, common, text))
    ranges = driver.get('compatible_version_fw') or []
    for version in sorted(set(list(npu_firmware) + ([firmware['version']] if firmware.get('version') else []))):
        verdicts = [_in_range(version, group[0], group[-1]) for group in ranges if group]
        if ranges and verdicts and not any(verdicts) and None not in verdicts:
            out.append(finding(host, None, 'firmware_pairing', version, ranges,
                               'firmware %s is outside the range driver %s declares (compatible_version_fw %s): known bad'
                               % (version, driver.get('version'), ', '.join('[%s]' % ','.join(g) for g in ranges))))
    if cann.get('version') and driver.get('family'):
        families = cann.get('compatible_version') or []
        if families and driver['family'] not in families:
            out.append(finding(host, None, 'cann_pairing', driver['family'], families,
                               'CANN %s declares the driver families %s, the driver %s is %s: known bad'
                               % (cann['version'], ', '.join(families), driver.get('version'), driver['family'])))
        for row in table.get('cann_hdk') or []:
            if row.get('cann') == cann['version'] and driver.get('version'):
                version = str(driver['version']).lower()
                if not any(version == str(h).lower() or version.startswith(str(h).lower() + '.') for h in row.get('hdk') or []):
                    out.append(finding(host, None, 'cann_hdk', driver['version'], row.get('hdk'),
                                       'driver %s is not among the HDK releases CANN %s is paired with (%s; %s)'
                                       % (driver['version'], cann['version'], ', '.join(row.get('hdk') or []), row.get('source')),
                                       unknown))
    torch_npu, torch = packages.get('torch_npu'), packages.get('torch')
    if torch_npu:
        rows = [r for r in (table.get('torch_npu') or {}).get('rows') or [] if _base(r.get('torch_npu')) == _base(torch_npu)]
        source = (table.get('torch_npu') or {}).get('source')
        if not rows:
            out.append(finding(host, None, 'torch_npu', torch_npu, 'a release of the table',
                               'torch_npu %s is not in the compatibility table (%s): pairing unknown' % (torch_npu, source), unknown))
        else:
            row = rows[0]
            if torch and _base(torch) != row['torch']:
                out.append(finding(host, None, 'torch_pairing', torch, row['torch'],
                                   'torch %s with torch_npu %s, which is built for torch %s (%s): known bad'
                                   % (torch, torch_npu, row['torch'], source)))
            if cann.get('version') and cann['version'] != row['cann']:
                out.append(finding(host, None, 'torch_npu_cann', cann['version'], row['cann'],
                                   'torch_npu %s was tested with CANN %s, this node runs CANN %s (%s)'
                                   % (torch_npu, row['cann'], cann['version'], source), WARN))
    return {'fingerprint': fingerprint, 'findings': out}


def fingerprint_diff(fingerprints):
    """The fields whose value is not the same on every node: [{field, values: {host: value}}]."""
    if not isinstance(fingerprints, dict):
        raise AnsibleFilterError('fingerprint_diff expects {host: fingerprint}, got %s' % type(fingerprints).__name__)
    fields = sorted(set(key for fp in fingerprints.values() for key in (fp or {})))
    out = []
    for field in fields:
        values = dict((host, (fp or {}).get(field)) for host, fp in sorted(fingerprints.items()))
        if len(set(str(v) for v in values.values())) > 1:
            out.append({'field': field, 'values': values})
    return out


def fingerprint_findings(fingerprints):
    """A failure for each node whose value of a field differs from what most nodes have."""
    out = []
    for diff in fingerprint_diff(fingerprints):
        counts = {}
        for value in diff['values'].values():
            counts[str(value)] = counts.get(str(value), 0) + 1
        common = sorted(counts, key=lambda v: (-counts[v], v))[0]
        for host, value in diff['values'].items():
            if str(value) != common:
                out.append(finding(host, None, diff['field'], value, common, '%s is %s while %d other node(s) have %s' % (
                    diff['field'], value, counts[common], common)))
    return out


def fingerprint_drift(previous, current):
    """What changed on which node since the previous run: [{host, field, before, after, msg}]."""
    previous, current = previous or {}, current or {}
    out = []
    if not previous:
        return out
    for host in sorted(set(previous) | set(current)):
        if host not in previous:
            out.append({'host': host, 'field': None, 'before': None, 'after': None, 'msg': '%s: new node since the previous run' % host})
            continue
        if host not in current:
            out.append({'host': host, 'field': None, 'before': None, 'after': None, 'msg': '%s: not in this run' % host})
            continue
        before, after = previous[host] or {}, current[host] or {}
        for field in sorted(set(before) | set(after)):
            if str(before.get(field)) != str(after.get(field)):
                out.append({'host': host, 'field': field, 'before': before.get(field), 'after': after.get(field),
                            'msg': '%s: %s changed from %s to %s' % (host, field, before.get(field), after.get(field))})
    return out


# ---- stage 3: bandwidth --------------------------------------------------------------------------

def bench_findings(result, host=None):
    """Findings of an hccl_bench result registered with failed_when: false."""
    host = host or 'this node'
    if not isinstance(result, dict) or result.get('skipped'):
        return []
    if 'rows' not in result:
        return [finding(host, None, 'hccl_bench', None, None, 'the benchmark did not run: %s' % result.get('msg'))]
    if not result.get('below_band'):
        return []
    band = result.get('band') or {}
    out = [finding(host, None, 'busbw', result.get('peak_busbw_gb_s'), '>= %s GB/s' % band.get('low_gb_s'),
                   'AllReduce bus bandwidth %s GB/s is below %s GB/s (%s %% of %s GB/s)' % (
                       result.get('peak_busbw_gb_s'), band.get('low_gb_s'), (band.get('percent') or [None])[0],
                       band.get('theory_gb_s')))]
    for busy in result.get('busy') or []:
        out.append(finding(host, busy.get('device'), 'busy', busy.get('pid'), 'no process',
                           'pid %s (%s) holds the NPU during the benchmark' % (busy.get('pid'), busy.get('name'))))
    return out


def summary_lines(summary):
    """One line per node per stage: 'node01  stage0 health_check  passed'."""
    lines = []
    for host, stages in sorted(((summary or {}).get('nodes') or {}).items()):
        if not stages:
            lines.append('%-12s no stage ran' % host)
        for key in sorted(stages, key=lambda k: int(k[5:]) if k[5:].isdigit() else 99):
            item = stages[key]
            extra = ''
            if item.get('failures'):
                extra = ' (%d failure(s))' % len(item['failures'])
            elif item.get('warnings'):
                extra = ' (%d warning(s))' % len(item['warnings'])
            lines.append('%-12s stage%s %-14s %s%s' % (host, item.get('stage'), item.get('role'), item.get('status'), extra))
    return lines


class FilterModule:
    """npuops.ascend stage findings."""

    def filters(self):
        return {
            'health_findings': health_findings,
            'pod_port_findings': pod_port_findings,
            'gate_message': gate_message,
            'findings_text': findings_text,
            'lost_node_finding': lost_node_finding,
            'stage_summary': stage_summary,
            'version_findings': version_findings,
            'fingerprint_diff': fingerprint_diff,
            'fingerprint_findings': fingerprint_findings,
            'fingerprint_drift': fingerprint_drift,
            'bench_findings': bench_findings,
            'summary_lines': summary_lines,
        }
