"""Persistence: domain objects to and from rows of the single table (through ports.Store).

Row shapes live here and nowhere above: services get domain objects.
"""
