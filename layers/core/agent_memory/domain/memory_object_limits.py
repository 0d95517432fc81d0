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
# A namespace (ADR 0082) is a path of labels; with its key it is one sort key of the table,
# which DynamoDB bounds at 1,024 bytes, so the encoded pair is held under that.
MAX_NAMESPACE_DEPTH = 10
MAX_NAMESPACE_LABEL_CHARS = 128
MAX_KEY_CHARS = 255
MAX_NAMESPACE_KEY_BYTES = 1000
