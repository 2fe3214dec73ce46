"""What the tests of the filter files check: a filter file publishes functions of plugins/plugin_utils under their filter
names, and each filter has its documentation (plugins/filter/<name>.yml)."""

from __future__ import annotations

import importlib
import os

import yaml

FILTERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', '..', 'plugins', 'filter')


def assert_documented(name):
    """The .yml of filter ``name`` names it, says since when it exists, and documents its input, an example and its value."""
    with open(os.path.join(FILTERS, name + '.yml'), encoding='utf-8') as handle:
        doc = yaml.safe_load(handle)
    assert doc['DOCUMENTATION']['name'] == name
    assert doc['DOCUMENTATION']['version_added'] == '0.1.0'
    assert '_input' in doc['DOCUMENTATION']['options']
    assert 'npuops.ascend.%s' % name in doc['EXAMPLES']
    assert '_value' in doc['RETURN']


def assert_published(filter_file, expected):
    """``filter_file``'s FilterModule maps exactly the names of ``expected`` to its functions, and each is documented."""
    assert filter_file.FilterModule().filters() == expected
    for name in expected:
        assert_documented(name)


def assert_not_published(names):
    """No filter file publishes any of ``names`` (functions of plugins/plugin_utils that only the collection's actions
    call), and none has a filter documentation file."""
    published = set()
    for entry in sorted(os.listdir(FILTERS)):
        if not entry.endswith('.py') or entry == '__init__.py':
            continue
        module = importlib.import_module('ansible_collections.npuops.ascend.plugins.filter.' + entry[:-3])
        published.update(module.FilterModule().filters())
    assert sorted(published & set(names)) == []
    assert [name for name in names if os.path.exists(os.path.join(FILTERS, name + '.yml'))] == []
