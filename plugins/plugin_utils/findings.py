# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The finding: the one shape every stage reports a problem in, and its text.

A finding is ``{host, device, check, value, expected, severity, msg}``: ``device`` is the NPU
id (None for the node itself), ``severity`` is ``fail`` (the stage's gate stops the run) or
``warn`` (reported), ``msg`` a sentence naming the node, the device and the value against
what was expected.
"""

from __future__ import annotations

FAIL = 'fail'
WARN = 'warn'


def where(host, device):
    return '%s NPU %s' % (host, device) if device is not None else str(host)


def own_words(host, device, text):
    """A module's message without its subject when that names the same node (and NPU): the finding names it first."""
    text = str(text)
    for subject in (['NPU %s on %s' % (device, host)] if device is not None else []) + [str(host)]:
        if text.startswith(subject + ': '):
            return text[len(subject) + 2:]
    return text


def finding(host, device, check, value, expected, text, severity=FAIL):
    """One finding; ``text`` says what is wrong after the subject."""
    return {'host': host, 'device': device, 'check': check, 'value': value, 'expected': expected, 'severity': severity,
            'msg': '%s: %s' % (where(host, device), text)}


def span(devices):
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
        prefix = where(host, device) + ': '
        if not msg.startswith(prefix):
            key, place = (None, msg), None
        else:
            key, place = (device is None, msg[len(prefix):]), (host, device)
        if key not in groups:
            groups[key] = []
            order.append(key)
        if place is not None:
            groups[key].append(place)
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
        spans = [(host, span([d for h, d in groups[key] if h == host and isinstance(d, int)])) for host in hosts]
        if len(set(span for _h, span in spans)) == 1:
            lines.append('%s NPU %s: %s' % (', '.join(str(h) for h, _s in spans), spans[0][1], text))
        else:
            lines.append('%s: %s' % (', '.join('%s NPU %s' % (h, span) for h, span in spans), text))
    return joiner.join(lines) if joiner is not None else lines
