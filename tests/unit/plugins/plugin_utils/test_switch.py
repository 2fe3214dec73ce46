"""The registry of switch families: every family name has one module that checks and renders it."""

from __future__ import annotations

from ansible_collections.npuops.ascend.plugins.plugin_utils import switch


def test_the_families_in_the_order_messages_list_them():
    assert switch.FAMILIES == ('huawei_ce_a', 'huawei_ce_b', 'sonic', 'cumulus')
    assert switch.RENDERERS['huawei_ce_a'] is switch.huawei_ce and switch.RENDERERS['huawei_ce_b'] is switch.huawei_ce
    assert switch.RENDERERS['sonic'] is switch.sonic and switch.RENDERERS['cumulus'] is switch.cumulus


def test_every_renderer_has_the_common_interface():
    for family, module in switch.RENDERERS.items():
        assert family in module.MODELS and module.MODELS[family]
        assert isinstance(module.EXTENSION, str) and module.EXTENSION
        assert callable(module.check) and callable(module.render)
    assert sorted(set(module.EXTENSION for module in switch.RENDERERS.values())) == ['cfg', 'json', 'nvue.sh']
