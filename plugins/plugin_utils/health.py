# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Stage 0, the health check: the findings of one node's reads, and the PoD-wide findings over the ports of every node.

The limits (``HEALTH_LIMITS``) are the method's thresholds; the role passes its own values for them.
"""

from __future__ import annotations

import ipaddress

from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.plugin_utils.findings import FAIL, WARN, finding, own_words, where

HEALTH_LIMITS = {
    'npus_per_node': 8,
    'max_temp_c': 80,
    'min_hugepages': 1,
    'max_swappiness': 10,
    'min_nofile': 65535,
    'product_family': None,
    # power: an absolute limit per NPU (None: not checked; no public rated figure of the 910B module was found), and
    # how far above the median of the other NPUs (of the node; of the PoD in pod_power_findings) one may draw
    'max_power_w': None,
    'max_power_over_median_pct': 30,
    # PCIe error counters (-t pcie-err): the most any error counter may show
    'max_pcie_errors': 0,
    # throttling (-t common): the AI Core frequency may be this share of its rated one before it counts as reduced,
    # and a reduced frequency at or above this temperature (or while the AI Cores are busy) is a finding
    'min_aicore_freq_pct': 95,
    'throttle_temp_c': 70,
}

# the PCIe error counters of `npu-smi info -t pcie-err` as the parser keys them, and the label npu-smi prints
PCIE_LABELS = {
    'tx_error_count': 'TX Error Count', 'rx_error_count': 'RX Error Count', 'lcrc_error_count': 'Lcrc Error Count',
    'ecrc_error_count': 'Ecrc Error Count', 'retry_count': 'Retry Count', 'pcs_rx_error_count': 'Pcs Rx Error Count',
    'phy_lane_error_count': 'Phy Lane Error Count', 'dl_lcrc_error_count': 'Dl Lcrc Error Count',
    'dl_dcrc_error_count': 'Dl Dcrc Error Count',
}


def _failed(result):
    """The message of a module result that failed (registered with failed_when: false), else None."""
    if not isinstance(result, dict) or result.get('skipped'):
        return None
    if 'devices' not in result and 'pairs' not in result:
        return result.get('msg') or 'the task did not return its data'
    return None


def by_device(result):
    """{NPU id: entry} of a module result that lists its NPUs under ``devices``."""
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


ecc_counts = _ecc_counts  # the same counts for the comparison between runs (plugins/plugin_utils/links.py)


def _rows(device):
    """The summary-table rows of one NPU: its dies (A3: two per NPU; 310P Duo: two chips per card), else its one row."""
    return [row for row in device.get('dies') or [device.get('info') or {}] if isinstance(row, dict)]


def _shared_bus_ids(npu):
    """How many table rows repeat the bus id of an earlier row (the second chip of an Atlas 300I Duo card)."""
    seen, repeats = set(), 0
    for entry in by_device(npu).values():
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
    for dev, entry in sorted(by_device(npu).items()):
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


def _number(value):
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def npu_power(device):
    """The highest power (W) one NPU shows: its table rows (Power(W)), its ``power`` and ``common`` views; None when
    none shows a number (an A3 die 1 or a 310P chip prints ``-`` or ``NA``)."""
    found = [_number(row.get('power_w')) for row in _rows(device)]
    for view in ('power', 'common'):
        found += [_number(chip.get('npu_real_time_power_w')) for chip in (device.get(view) or {}).get('chips') or []]
    found = [value for value in found if value is not None]
    return max(found) if found else None


def _median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2.0


def _pcie_counters(entry):
    """{counter: value} of one NPU's ``pcie_err`` view, summed over its chips; {} when it was not read."""
    out = {}
    for chip in (entry or {}).get('chips') or []:
        for key, value in chip.items():
            if key in PCIE_LABELS or key.endswith('error_count'):
                if _number(value) is not None:
                    out[key] = out.get(key, 0) + value
    return out


def _label(key):
    return PCIE_LABELS.get(key) or key.replace('_', ' ')


def _in_print_order(keys):
    """The counters in the order npu-smi prints them (unknown ones last, by name)."""
    order = list(PCIE_LABELS)
    return sorted(keys, key=lambda key: (order.index(key) if key in order else len(order), key))


def _pcie_findings(host, dev, entry, again, limits):
    out = []
    first = _pcie_counters(entry.get('pcie_err'))
    errors = dict((key, value) for key, value in first.items() if key != 'retry_count' and value > limits['max_pcie_errors'])
    if errors:
        text = ', '.join('%s %s' % (_label(key), errors[key]) for key in _in_print_order(errors))
        out.append(finding(host, dev, 'pcie_errors', sum(errors.values()), limits['max_pcie_errors'],
                           'PCIe error counters above %s (npu-smi info -t pcie-err): %s; counted since the last reset, so '
                           'watch whether they grow (a second read in this run does for NPUs with errors); if they do, '
                           'check the seating and the riser of the NPU' % (limits['max_pcie_errors'], text), WARN))
    second = _pcie_counters((again or {}).get('pcie_err'))
    grown = [(key, first[key], second[key]) for key in _in_print_order(second) if key in first and second[key] > first[key]]
    if grown:
        text = ', '.join('%s %s -> %s' % (_label(key), was, now) for key, was, now in grown)
        out.append(finding(host, dev, 'pcie_errors_growing', sum(now - was for _key, was, now in grown), 0,
                           'PCIe counters grew between two reads: %s' % text))
    return out


def _frequency(entry):
    """(rated MHz, current MHz, AI Core usage %, temperature C) of one NPU's ``common`` view (its hottest chip whose
    frequency is reduced most); None when the view was not read or shows no frequency."""
    best = None
    for chip in (entry.get('common') or {}).get('chips') or []:
        rated, current = _number(chip.get('aicore_freq_mhz')), _number(chip.get('aicore_cur_freq_mhz'))
        if not rated or current is None:
            continue
        item = (rated, current, _number(chip.get('aicore_usage_pct')), _number(chip.get('temperature_c')))
        if best is None or current / float(rated) < best[1] / float(best[0]):
            best = item
    return best


def _over_temperature(detail):
    """The health view's error texts that name a temperature sensor or overheating ('sensor type=Temperature', ...)."""
    return [text for text in detail.get('error_information') or []
            if isinstance(text, str) and ('temperature' in text.lower() or 'overheat' in text.lower() or 'over temp' in text.lower())]


def _throttle_findings(host, dev, entry, temp, limits):
    out = []
    freq = _frequency(entry)
    if freq is not None:
        rated, current, usage, chip_temp = freq
        temps = [value for value in (temp, chip_temp) if value is not None]
        hot = max(temps) if temps else None
        pct = 100.0 * current / rated
        if pct < limits['min_aicore_freq_pct']:
            why = []
            if hot is not None and hot >= limits['throttle_temp_c']:
                why.append('at %s C (throttle_temp_c %s C)' % (hot, limits['throttle_temp_c']))
            if usage:
                why.append('with the AI Cores %s %% busy' % usage)
            if why:
                out.append(finding(host, dev, 'aicore_throttled', current, '>= %d%% of %s MHz' % (limits['min_aicore_freq_pct'], rated),
                                   'AI Core runs at %s MHz of its rated %s MHz (%.0f %%, below %s %%) %s: the NPU reduces its '
                                   'frequency (too hot or at its power limit); check the cooling, the fans and the inlet '
                                   'temperature (npu-smi info -t common)' % (
                                       current, rated, pct, limits['min_aicore_freq_pct'], ' and '.join(why))))
    texts = _over_temperature(entry.get('health') or {})
    if texts:
        codes = ', '.join((entry.get('health') or {}).get('error_codes') or []) or 'none'
        out.append(finding(host, dev, 'over_temperature', texts[0], 'no temperature alarm',
                           'the health view reports a temperature alarm (error codes %s): %s' % (codes, '; '.join(texts))))
    return out


def _power_findings(host, devices, limits):
    out = []
    powers = dict((dev, npu_power(entry)) for dev, entry in devices.items())
    powers = dict((dev, watts) for dev, watts in powers.items() if watts is not None)
    ceiling = limits.get('max_power_w')
    for dev, watts in sorted(powers.items()):
        if ceiling is not None and watts > ceiling:
            out.append(finding(host, dev, 'power', watts, ceiling, 'power %s W is above %s W (max_power_w)' % (watts, ceiling)))
    out.extend(median_power_findings(dict(((host, dev), watts) for dev, watts in powers.items()),
                                     limits.get('max_power_over_median_pct'), 'of the node'))
    return out


def median_power_findings(powers, over_pct, scope):
    """Findings of the NPUs ({(host, dev): W}) that draw more than ``over_pct`` % above the median of the others
    (at least 3 NPUs; None switches it off)."""
    out = []
    if over_pct is None or len(powers) < 3:
        return out
    for (host, dev), watts in sorted(powers.items()):
        others = [value for key, value in powers.items() if key != (host, dev)]
        median = _median(others)
        if median > 0 and watts > median * (1 + over_pct / 100.0):
            out.append(finding(host, dev, 'power_vs_median', watts, '<= %.1f' % (median * (1 + over_pct / 100.0)),
                               'power %s W is %.0f %% above the median %.1f W of the other %d NPUs %s (max_power_over_median_pct '
                               '%s): a load the others do not have, or a fault; check its processes and its cooling'
                               % (watts, 100.0 * (watts - median) / median, median, len(others), scope, over_pct), WARN))
    return out


def _npu_findings(host, npu, npu_again, limits):
    out = []
    devices = by_device(npu)
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
                               own_words(host, error.get('device'), error.get('msg') or 'a row of npu-smi info could not be read')))
        elif isinstance(error, dict) and error.get('query'):
            # a view this driver or product may not offer (-t common, -t pcie-err): its checks are left out
            out.append(finding(host, error.get('device'), 'npu_%s' % error['query'], None, 'readable',
                               '%s; the checks that need it are left out for this NPU'
                               % own_words(host, error.get('device'), error.get('msg') or '%s could not be read' % error['query']),
                               WARN))
    again = by_device(npu_again)
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
        out.extend(_throttle_findings(host, dev, entry, temp, limits))
        out.extend(_pcie_findings(host, dev, entry, again.get(dev), limits))
    out.extend(_power_findings(host, devices, limits))
    return out


def _container_findings(host, part, npus_unusable):
    """Findings of the container part of health_info: what a container misses, and how to mount it.

    Failures when the NPUs are not usable (the npu read failed or listed fewer NPUs than expected: the missing mounts
    are the likely cause); warnings while npu-smi still sees every NPU."""
    out = []
    if not isinstance(part, dict) or not part.get('checked'):
        return out
    severity = FAIL if npus_unusable else WARN
    where_from = 'in a container (%s)' % part['evidence'] if part.get('evidence') else 'in this node'
    missing = part.get('missing_devices') or []
    if missing:
        kinds = part.get('devices') or {}
        text = ', '.join(path if kinds.get(path) is None else '%s (a %s, not a character device)' % (path, kinds[path])
                         for path in missing)
        out.append(finding(host, None, 'container_device', missing, 'character devices',
                           '%s %s missing %s: start the container with %s (an NPU cannot be used without them)'
                           % (text, 'is' if len(missing) == 1 else 'are', where_from,
                              ' '.join('--device=%s' % path for path in missing)), severity))
    paths = part.get('missing_driver_paths') or []
    if paths:
        out.append(finding(host, None, 'container_mount', [item.get('path') for item in paths], 'mounted',
                           '%s %s missing %s: start the container with %s'
                           % (', '.join(item.get('path') for item in paths), 'is' if len(paths) == 1 else 'are', where_from,
                              ' '.join(item.get('mount') for item in paths)), severity))
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
        return own_words(host, dev, error.get('msg') or '%s could not be read' % query)

    for dev, entry in sorted(by_device(ports).items()):
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
                                   own_words(host, dev, error.get('msg') or '%s could not be read' % query), WARN))
    return out


def _host_findings(host, numa, host_info, limits):
    out = []
    for dev, entry in sorted(by_device(numa).items()):
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
            out.append(finding(host, None, error.get('what'), None, None, own_words(host, None, error.get('msg')), WARN))
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
            out.append(finding(host, None, key, None, None, '%s could not read the node: %s' % (tool, own_words(host, None, problem))))
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
    unusable = any(item['check'] in ('npu', 'npu_count') and item['severity'] == FAIL for item in out)
    return _container_findings(host, data.get('container'), unusable) + out


def node_powers(npu):
    """{NPU id (str): W} of an npu_info result, for the node's record (the PoD step compares them across the PoD)."""
    out = {}
    for dev, entry in sorted(by_device(npu).items()):
        watts = npu_power(entry)
        if watts is not None:
            out[str(dev)] = watts
    return out


def pod_power_findings(power_by_host, over_pct=HEALTH_LIMITS['max_power_over_median_pct']):
    """PoD-wide: the NPUs that draw more than ``over_pct`` % above the median of every other NPU of the PoD
    (``power_by_host``: {host: {NPU id: W}} from the records; a node without the figures is left out)."""
    if not isinstance(power_by_host, dict):
        raise AnsibleFilterError('pod_power_findings expects {host: {NPU id: W}}, got %s' % type(power_by_host).__name__)
    powers = {}
    for host, devices in power_by_host.items():
        for dev, watts in (devices or {}).items():
            if str(dev).isdigit() and _number(watts) is not None:
                powers[(host, int(dev))] = watts
    if len(set(host for host, _dev in powers)) < 2:
        return []  # one node: the node's own check already compared its NPUs
    return median_power_findings(powers, over_pct, 'of the PoD')


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
        for dev, entry in sorted(by_device(ports_by_host[host]).items()):
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
            names = ', '.join(where(h, d) for h, d in users)
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
