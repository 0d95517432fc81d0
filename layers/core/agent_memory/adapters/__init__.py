"""Adapters: the ports implemented over AWS (and in memory, for unit tests)."""
