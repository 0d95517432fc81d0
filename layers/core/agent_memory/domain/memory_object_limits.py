"""Bounds the agent memory routes declare on their bodies and queries (ADR 0037: a memory is a
short note an agent reads). Here, not with the rules that
enforce them (domain/memory_objects.py), so a route's module reads them without loading
those rules and the entry model."""

from __future__ import annotations

MAX_CONTENT_CHARS = 4000
MAX_ENTITY_ID_CHARS = 255
MAX_ENTITY_TEXT_CHARS = 500
DEFAULT_IMPORTANCE = 0.5
MAX_PAGE = 100
DEFAULT_PAGE = 10
