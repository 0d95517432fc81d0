"""Agent memories: any user of an organization may use its memories; the admin token may not."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from agent_memory.domain.bounds import memory_object_size, within_budget
from agent_memory.domain.errors import Conflict, NotFound, ValidationFailed
from agent_memory.domain.identity import Principal
from agent_memory.domain.memory_object_limits import MAX_ENTITY_ID_CHARS
from agent_memory.domain.memory_objects import (
    ID_PREFIX,
    MemoryObject,
    MemoryPage,
    NewMemory,
    apply_patch,
    check_category,
    check_limit,
    create_memory,
    is_memory_id,
    memory_org,
    parse_patch,
)
from agent_memory.persistence.memory_objects import MemoryObjectRepository
from agent_memory.ports import Cipher, Clock, Ids, Store
from agent_memory.service.recall import MemoryRecall
from agent_memory.service.retrying import until_it_lands


class MemoryObjectService:
    def __init__(
        self,
        repo: MemoryObjectRepository,
        clock: Clock,
        ids: Ids,
        semantic: MemoryRecall | None = None,
    ) -> None:
        self._repo = repo
        self._clock = clock
        self._ids = ids
        self._semantic = semantic

    @classmethod
    def build(
        cls,
        store: Store,
        cipher: Cipher,
        clock: Clock,
        ids: Ids,
        semantic: MemoryRecall | None = None,
    ) -> MemoryObjectService:
        return cls(MemoryObjectRepository(store, cipher), clock, ids, semantic)

    def create(self, principal: Principal, new: NewMemory) -> MemoryObject:
        org_id = memory_org(principal)
        memory = create_memory(self._ids.new(ID_PREFIX), org_id, new, self._clock.now_ms())
        self._repo.create(memory)
        if self._semantic is not None:
            self._semantic.remember(org_id, memory.id, memory.content)
        return memory

    def get(self, principal: Principal, memory_id: str) -> MemoryObject:
        """Expired or not."""
        return self._find(memory_org(principal), memory_id)

    def update(
        self, principal: Principal, memory_id: str, patch: Mapping[str, Any]
    ) -> MemoryObject:
        """Change the given fields only; concurrent PATCHes all land, the last of a field wins."""
        org_id = memory_org(principal)
        changes = parse_patch(patch)

        def attempt() -> MemoryObject:
            current = self._find(org_id, memory_id)
            if not changes:
                return current
            changed = apply_patch(current, changes, self._clock.now_ms())
            self._repo.replace(current, changed)
            return changed

        updated = until_it_lands(attempt, _kept_changing)
        if self._semantic is not None and "content" in changes:
            self._semantic.remember(org_id, updated.id, updated.content)
        return updated

    def delete(self, principal: Principal, memory_id: str) -> None:
        """An unknown or already deleted memory is 404; a PATCH that wins is deleted too."""
        org_id = memory_org(principal)

        def attempt() -> None:
            self._repo.delete(self._find(org_id, memory_id), self._clock.now_ms())

        until_it_lands(attempt, _kept_changing)
        if self._semantic is not None:
            self._semantic.forget(memory_id)

    def list_memories(
        self,
        principal: Principal,
        *,
        limit: int,
        starting_after: str | None = None,
        category: str | None = None,
        entity_id: str | None = None,
    ) -> MemoryPage:
        """Newest first; `starting_after` need not exist any more, so paging survives deletes."""
        org_id = memory_org(principal)
        check_limit(limit, ["limit"])
        if starting_after is not None and not is_memory_id(starting_after):
            raise ValidationFailed("starting_after must be an agent memory id", ["starting_after"])
        if category is not None:
            check_category(category)
        _check_entity_id(entity_id)
        page = self._repo.newest(
            org_id,
            limit=limit,
            starting_after=starting_after,
            category=category,
            entity_id=entity_id,
            now_ms=self._clock.now_ms(),
        )
        return _fitting(page)

    def recall(
        self,
        principal: Principal,
        *,
        limit: int,
        entity_id: str | None = None,
        query: str | None = None,
    ) -> MemoryPage:
        """Highest importance first; with `query`, closest in meaning first, then by importance."""
        org_id = memory_org(principal)
        check_limit(limit, ["limit"])
        _check_entity_id(entity_id)
        now = self._clock.now_ms()
        page = self._repo.recall(org_id, limit=limit, entity_id=entity_id, now_ms=now)
        if query is None or not query.strip() or self._semantic is None:
            return _fitting(page)
        ranked: list[tuple[float, float, MemoryObject]] = []
        for memory_id, score in self._semantic.closest(org_id, query, 3 * limit):
            memory = self._repo.get(org_id, memory_id) if is_memory_id(memory_id) else None
            if memory is None or memory.is_expired(now):
                continue
            if entity_id is not None and (memory.entity is None or memory.entity.id != entity_id):
                continue
            ranked.append((score, memory.importance, memory))
        ranked.sort(key=lambda r: (-r[0], -r[1]))
        chosen = [m for _, _, m in ranked[:limit]]
        seen = {m.id for m in chosen}
        chosen += [m for m in page.memories if m.id not in seen][: limit - len(chosen)]
        return _fitting(replace(page, memories=chosen))

    def _find(self, org_id: str, memory_id: str) -> MemoryObject:
        memory = self._repo.get(org_id, memory_id) if is_memory_id(memory_id) else None
        if memory is None:
            raise NotFound("agent memory not found")
        return memory


def _fitting(page: MemoryPage) -> MemoryPage:
    """The page as far as one answer holds it; what is left out is `has_more`."""
    kept, cut = within_budget(page.memories, memory_object_size)
    return replace(page, memories=kept, has_more=True) if cut else page


def _check_entity_id(entity_id: str | None) -> None:
    if entity_id is not None and not 1 <= len(entity_id) <= MAX_ENTITY_ID_CHARS:
        raise ValidationFailed(
            f"entity must be an entity id of 1 to {MAX_ENTITY_ID_CHARS} characters", ["entity"]
        )


def _kept_changing() -> Conflict:
    return Conflict("the agent memory kept changing while it was written; retry")
