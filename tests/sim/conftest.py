"""Fixtures for the simulator tests (the helpers live in simhelpers.py)."""

import simhelpers

# pytest finds fixtures by name in this module's namespace.
sim = simhelpers.sim
nodes = simhelpers.nodes
_clean_env = simhelpers._clean_env  # pylint: disable=protected-access
