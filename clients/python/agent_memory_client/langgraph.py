"""LangGraph's `BaseStore` on the agent-memory service (ADR 0082).

    from langgraph.graph import StateGraph
    store = AgentMemoryStore(Client(base_url=..., token=...), index={"fields": ["text"]})
    graph = builder.compile(store=store)

Each item is one agent memory of the caller (the person, who alone sees it), placed by its
`namespace` and `key` (unique within it, enforced by the service); the value round-trips
as JSON in the memory's sealed `metadata`, and the memory's `content` is the text the
service embeds for `search(query=...)`: the value's `IndexConfig` `fields` (the whole value
as JSON without them), at most 4,000 characters. A TTL (`TTLConfig`, or
`put(ttl=minutes)`) is the memory's `expires_at`; past it the item is gone from reads.
`abatch` runs `batch` in a worker thread.

Needs the `langgraph` extra (`pip install './clients/python[langgraph]'`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)
from langgraph.store.base.embed import get_text_at_path, tokenize_path

# The in-memory store's own matching rules: filters and namespace conditions behave alike.
from langgraph.store.memory import _compare_values, _does_match

from agent_memory_client._sync_client import Client
from agent_memory_client.errors import Conflict, NotFound
from agent_memory_client.models import AgentMemoryObject

# The service's bounds (API.md "Agent memories"): content characters, a page, a recall.
MAX_CONTENT = 4000
PAGE = 100
CATEGORY = "fact"


class AgentMemoryStore(BaseStore):
    """A LangGraph store whose items are agent memories of the client's person.

    `client` is a `Client` (a user's token, or a service key acting for a person). `index`
    takes `fields` (JSON paths of the value to embed; default the whole value); the
    embedding model is the service's, so `embed` and `dims` are not used. `ttl` takes
    `default_ttl` (minutes) and `refresh_on_read`.
    """

    supports_ttl = True

    def __init__(
        self,
        client: Client,
        *,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
    ) -> None:
        self.client = client
        self.index_config = index
        self.ttl_config = ttl
        fields = (index or {}).get("fields") or ["$"]
        self._fields = [(f, tokenize_path(f) if f != "$" else f) for f in fields]

    # ------------------------------------------------------------------ the interface

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append(self._get(op))
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            elif isinstance(op, PutOp):
                self._put(op)
                results.append(None)
            else:
                raise ValueError(f"Unknown operation type: {type(op)}")
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        listed = list(ops)
        return await asyncio.to_thread(self.batch, listed)

    # ------------------------------------------------------------------ operations

    def _find(self, namespace: tuple[str, ...], key: str) -> AgentMemoryObject | None:
        page = self.client.list_agent_memories(namespace=namespace, key=key, limit=1)
        return page.data[0] if page.data else None

    def _get(self, op: GetOp) -> Item | None:
        memory = self._find(op.namespace, op.key)
        if memory is None:
            return None
        if op.refresh_ttl:
            memory = self._refreshed(memory)
        return _item(memory)

    def _put(self, op: PutOp) -> None:
        if op.value is None:
            memory = self._find(op.namespace, op.key)
            if memory is not None:
                # Deleted meanwhile: the item is gone either way.
                with contextlib.suppress(NotFound):
                    self.client.delete_agent_memory(memory.id)
            return
        content = self._content(op)
        metadata = {"value": dict(op.value), "ttl": op.ttl}
        expires_at = _expiry(op.ttl)
        # Create; when the key is taken, update that memory (found again if it moved on).
        for _attempt in range(3):
            try:
                self.client.create_agent_memory(
                    content,
                    CATEGORY,
                    metadata=metadata,
                    expires_at=expires_at,
                    namespace=op.namespace,
                    key=op.key,
                )
                return
            except Conflict as error:
                if error.path != ["key"]:
                    raise
            memory = self._find(op.namespace, op.key)
            if memory is None:
                continue  # deleted meanwhile: create it again
            try:
                self.client.update_agent_memory_object(
                    memory.id, content=content, metadata=metadata, expires_at=expires_at
                )
                return
            except NotFound:
                continue  # deleted between the two calls: create it again
        raise Conflict(409, f"the item {op.key!r} kept changing while it was written")

    def _search(self, op: SearchOp) -> list[SearchItem]:
        wanted = op.offset + op.limit
        found: list[AgentMemoryObject] = []
        if op.query:
            limit = PAGE if op.filter else min(PAGE, max(1, wanted))
            answer = self.client.recall_agent_memories(
                query=op.query, limit=limit, namespace=op.namespace_prefix or None
            )
            found = [m for m in answer.data if self._matches(m, op)]
        else:
            for memory in self._under(op.namespace_prefix):
                if self._matches(memory, op):
                    found.append(memory)
                    if len(found) >= wanted:
                        break
        chosen = found[op.offset : wanted]
        if op.refresh_ttl:
            chosen = [self._refreshed(m) for m in chosen]
        return [_search_item(m) for m in chosen]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        conditions = op.match_conditions or ()
        # The literal labels a prefix condition starts with narrow what is read.
        start: tuple[str, ...] = ()
        for condition in conditions:
            if condition.match_type == "prefix":
                literal = []
                for label in condition.path:
                    if label == "*":
                        break
                    literal.append(label)
                start = tuple(literal)
        namespaces: set[tuple[str, ...]] = set()
        for memory in self._under(start):
            namespace = tuple(memory.namespace or ())
            if all(_does_match(c, namespace) for c in conditions):
                namespaces.add(namespace[: op.max_depth] if op.max_depth else namespace)
        return sorted(namespaces)[op.offset : op.offset + op.limit]

    # ------------------------------------------------------------------ helpers

    def _under(self, prefix: tuple[str, ...]) -> Iterator[AgentMemoryObject]:
        """The person's unexpired namespaced memories under `prefix`, in order of
        namespace and key (every memory, newest first, for the empty prefix)."""
        after: str | None = None
        while True:
            page = self.client.list_agent_memories(
                namespace=prefix or None, limit=PAGE, starting_after=after
            )
            for memory in page.data:
                if memory.namespace is not None:
                    yield memory
            if not page.has_more or not page.data:
                return
            after = page.data[-1].id

    def _matches(self, memory: AgentMemoryObject, op: SearchOp) -> bool:
        namespace = tuple(memory.namespace or ())
        if memory.namespace is None or namespace[: len(op.namespace_prefix)] != tuple(
            op.namespace_prefix
        ):
            return False
        value = _value(memory)
        return all(_compare_values(value.get(k), v) for k, v in (op.filter or {}).items())

    def _content(self, op: PutOp) -> str:
        """What the service embeds for the item: the chosen fields' texts."""
        assert op.value is not None
        value = dict(op.value)
        if op.index is False:
            return op.key
        fields = self._fields if op.index is None else [(f, tokenize_path(f)) for f in op.index]
        texts: list[str] = []
        for _field, path in fields:
            if path == "$":
                texts.append(json.dumps(value, ensure_ascii=False, default=str))
            else:
                texts.extend(get_text_at_path(value, path))
        text = "\n".join(t for t in texts if t and t.strip()) or op.key
        return text[:MAX_CONTENT]

    def _refreshed(self, memory: AgentMemoryObject) -> AgentMemoryObject:
        """With a TTL, reading moves the expiry on (`refresh_on_read`)."""
        minutes = (memory.metadata or {}).get("ttl") if isinstance(memory.metadata, dict) else None
        if not minutes or (self.ttl_config or {}).get("refresh_on_read") is False:
            return memory
        try:
            return self.client.update_agent_memory_object(memory.id, expires_at=_expiry(minutes))
        except NotFound:
            return memory


def _expiry(minutes: float | None) -> str | None:
    if minutes is None:
        return None
    return (datetime.now(UTC) + timedelta(minutes=minutes)).isoformat()


def _value(memory: AgentMemoryObject) -> dict[str, Any]:
    metadata = memory.metadata if isinstance(memory.metadata, dict) else {}
    value = metadata.get("value")
    return value if isinstance(value, dict) else {}


def _item(memory: AgentMemoryObject) -> Item:
    return Item(
        value=_value(memory),
        key=memory.key or "",
        namespace=tuple(memory.namespace or ()),
        created_at=datetime.fromisoformat(memory.created_at),
        updated_at=datetime.fromisoformat(memory.updated_at),
    )


def _search_item(memory: AgentMemoryObject) -> SearchItem:
    return SearchItem(
        namespace=tuple(memory.namespace or ()),
        key=memory.key or "",
        value=_value(memory),
        created_at=datetime.fromisoformat(memory.created_at),
        updated_at=datetime.fromisoformat(memory.updated_at),
    )


__all__ = ["AgentMemoryStore"]
