"""The controller-side tests feed the domain functions with module results made by the module tests' fixture on real samples."""

from __future__ import annotations

from ansible_collections.npuops.ascend.tests.unit.plugins.modules import conftest as _modules

# pytest finds fixtures by name in this module's namespace
run_module = _modules.run_module
