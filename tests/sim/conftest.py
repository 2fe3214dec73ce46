"""Fixtures for the simulator tests (the helpers live in simhelpers.py)."""

from simhelpers import _clean_env, nodes, sim  # noqa: F401  (pytest finds fixtures by name here)
