"""Agent memories: any user of an organization may use its memories; the admin token may not.
A namespaced memory (ADR 0082) is its maker's alone: everyone else gets 404 for it and never
lists or recalls it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from agent_memory.domain.bounds import MAX_ENTITY_ID_CHARS, memory_object_size, within_budget
from agent_memory.domain.entries import ID_PREFIX
from agent_memory.domain.errors import Conflict, NotFound, ValidationFailed, WriteConflict
from agent_memory.domain.identity import Principal
from agent_memory.domain.memory_namespaces import (
    check_namespace,
    check_namespace_key,
    in_namespace,
    namespace_key_position,
    namespace_owner,
    namespace_position,
    visible_to,
)
from agent_memory.domain.memory_objects import (
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
from agent_memory.persistence.memory_objects import KEY_TAKEN, MemoryObjectRepository
from agent_memory.persistence.retrying import until_it_lands
from agent_memory.ports import Clock, Ids
from agent_memory.service.recall import MemoryRecall


@dataclass(eq=False)
class MemoryObjectService:
    repo: MemoryObjectRepository
    clock: Clock
    ids: Ids
    semantic: MemoryRecall | None = None

    def create(self, principal: Principal, new: NewMemory) -> MemoryObject:
        # A namespaced memory is refused to a caller without a person at its field first.
        named = new.namespace is not None or new.key is not None
        owner = namespace_owner(principal) if named else None
        org_id = memory_org(principal)
        memory = create_memory(self.ids.new(ID_PREFIX), org_id, new, self.clock.now_ms(), owner)
        try:
            self.repo.create(memory)
        except WriteConflict as error:
            if error.condition != KEY_TAKEN:
                raise
            if not self._freed(memory):
                raise Conflict(
                    "an agent memory of this namespace already has this key: update it", ["key"]
                ) from error
            self.repo.create(memory)
        if self.semantic is not None:
            self.semantic.remember(org_id, memory.id, memory.content)
        return memory

    def _freed(self, memory: MemoryObject) -> bool:
        """Whether the key `memory` wants was held by an expired memory, now deleted: an
        item past its TTL is gone for the client, so its key is free again."""
        assert memory.namespace is not None
        assert memory.key is not None
        assert memory.owner is not None
        position = namespace_key_position(memory.namespace, memory.key)
        holder = self.repo.holding(memory.org_id, memory.owner, position)
        if holder is None or not holder.is_expired(self.clock.now_ms()):
            return False
        try:
            self.repo.delete(holder, self.clock.now_ms())
        except WriteConflict:
            return False
        if self.semantic is not None:
            self.semantic.forget(holder.id)
        return True

    def get(self, principal: Principal, memory_id: str) -> MemoryObject:
        """Expired or not."""
        return self._find(principal, memory_id)

    def update(
        self, principal: Principal, memory_id: str, patch: Mapping[str, Any]
    ) -> MemoryObject:
        """Change the given fields only; concurrent PATCHes all land, the last of a field wins."""
        org_id = memory_org(principal)
        changes = parse_patch(patch)

        def attempt() -> MemoryObject:
            current = self._find(principal, memory_id)
            if not changes:
                return current
            changed = apply_patch(current, changes, self.clock.now_ms())
            self.repo.replace(current, changed)
            return changed

        updated = until_it_lands(attempt, _kept_changing)
        if self.semantic is not None and "content" in changes:
            self.semantic.remember(org_id, updated.id, updated.content)
        return updated

    def delete(self, principal: Principal, memory_id: str) -> None:
        """An unknown or already deleted memory is 404; a PATCH that wins is deleted too."""
        memory_org(principal)

        def attempt() -> None:
            self.repo.delete(self._find(principal, memory_id), self.clock.now_ms())

        until_it_lands(attempt, _kept_changing)
        if self.semantic is not None:
            self.semantic.forget(memory_id)

    def list_memories(
        self,
        principal: Principal,
        *,
        limit: int,
        starting_after: str | None = None,
        category: str | None = None,
        entity_id: str | None = None,
        namespace: list[str] | None = None,
        key: str | None = None,
    ) -> MemoryPage:
        """Newest first; `starting_after` need not exist any more, so paging survives deletes.
        With `namespace` (a prefix of labels), namespaced memories in order of namespace and
        key; with `key` too, the one memory of exactly that namespace and key (the caller's
        own: namespaced memories are their maker's alone)."""
        org_id = memory_org(principal)
        check_limit(limit, ["limit"])
        if starting_after is not None and not is_memory_id(starting_after):
            raise ValidationFailed("starting_after must be an agent memory id", ["starting_after"])
        if category is not None:
            check_category(category)
        _check_entity_id(entity_id)
        if namespace is not None or key is not None:
            owner = namespace_owner(principal)
            wanted = _Wanted(namespace, key, category, entity_id)
            return self._in_namespace(org_id, owner, wanted, limit, starting_after)
        page = self.repo.newest(
            org_id,
            limit=limit,
            starting_after=starting_after,
            category=category,
            entity_id=entity_id,
            now_ms=self.clock.now_ms(),
            viewer=principal.user_id,
        )
        return _fitting(page)

    def _in_namespace(
        self, org_id: str, owner: str, wanted: _Wanted, limit: int, starting_after: str | None
    ) -> MemoryPage:
        after = None
        if starting_after is not None:
            last = self.repo.get(org_id, starting_after)
            if last is None or last.namespace is None or last.key is None or last.owner != owner:
                # A namespaced page goes on from its last memory's place: one of the caller's.
                raise NotFound(
                    "starting_after must be one of your namespaced agent memories that still "
                    "exists",
                    ["starting_after"],
                )
            after = namespace_key_position(last.namespace, last.key)
        return self._owned(org_id, owner, wanted, limit, after)

    def _owned(
        self, org_id: str, owner: str, wanted: _Wanted, limit: int, after: str | None
    ) -> MemoryPage:
        """Up to `limit` of `owner`'s memories that `wanted` keeps, in order of namespace and
        key after the sort key `after`: reads on past those it leaves, so a short page means
        no more (a `key` under its namespace is one exact place)."""
        position = wanted.position()
        found: list[MemoryObject] = []
        now = self.clock.now_ms()
        while True:
            page = self.repo.in_namespace(
                org_id, owner, position=position, limit=limit, after=after, now_ms=now
            )
            found += [m for m in page.memories if wanted.keeps(m)]
            if len(found) >= limit or not page.has_more or not page.memories:
                more = len(found) > limit or (page.has_more and bool(page.memories))
                if wanted.key is not None and wanted.namespace is not None:
                    more = False  # one exact place holds one memory
                return _fitting(replace(page, memories=found[:limit], has_more=more))
            last = page.memories[-1]
            assert last.namespace is not None  # read by namespace
            assert last.key is not None
            after = namespace_key_position(last.namespace, last.key)

    def recall(
        self,
        principal: Principal,
        *,
        limit: int,
        entity_id: str | None = None,
        query: str | None = None,
        namespace: list[str] | None = None,
    ) -> MemoryPage:
        """Highest importance first; with `query`, closest in meaning first, then by importance.
        With `namespace` (a prefix of labels), only the caller's memories under it: the closest
        in meaning first, then the rest in order of namespace and key."""
        org_id = memory_org(principal)
        check_limit(limit, ["limit"])
        _check_entity_id(entity_id)
        now = self.clock.now_ms()
        prefix: tuple[str, ...] | None = None
        if namespace is not None:
            prefix = check_namespace(namespace, ["namespace"])
            wanted = _Wanted(list(prefix), None, None, entity_id)
            page = self._owned(org_id, namespace_owner(principal), wanted, limit, None)
        else:
            page = self.repo.recall(
                org_id, limit=limit, entity_id=entity_id, now_ms=now, viewer=principal.user_id
            )
        if query is None or not query.strip() or self.semantic is None:
            return _fitting(page)
        ranked: list[tuple[float, float, MemoryObject]] = []
        # Under a namespace the closest of the organization are filtered: ask for more.
        asked = 3 * limit if prefix is None else _NAMESPACE_CANDIDATES
        for memory_id, score in self.semantic.closest(org_id, query, asked):
            if prefix is not None and len(ranked) >= limit and score < ranked[-1][0]:
                break  # best first: the rest are farther (each costs a read)
            memory = self.repo.get(org_id, memory_id) if is_memory_id(memory_id) else None
            if memory is None or memory.is_expired(now):
                continue
            if not visible_to(memory, principal.user_id):
                continue
            if entity_id is not None and (memory.entity is None or memory.entity.id != entity_id):
                continue
            if prefix is not None and not in_namespace(memory, prefix):
                continue
            ranked.append((score, memory.importance, memory))
        ranked.sort(key=lambda r: (-r[0], -r[1]))
        chosen = [m for _, _, m in ranked[:limit]]
        seen = {m.id for m in chosen}
        chosen += [m for m in page.memories if m.id not in seen][: limit - len(chosen)]
        return _fitting(replace(page, memories=chosen))

    def _find(self, principal: Principal, memory_id: str) -> MemoryObject:
        """The memory as the caller may see it: another person's namespaced one is unknown."""
        org_id = memory_org(principal)
        memory = self.repo.get(org_id, memory_id) if is_memory_id(memory_id) else None
        if memory is None or not visible_to(memory, principal.user_id):
            raise NotFound("agent memory not found")
        return memory


# Candidates by meaning read for a recall under a namespace (the index's most per query).
_NAMESPACE_CANDIDATES = 100


@dataclass(frozen=True)
class _Wanted:
    """A read of a person's namespaced memories: under `namespace` (a prefix of labels, or
    all of them), at `key` (exactly, under its namespace; anywhere without one), of a
    `category` and about an `entity_id` when given."""

    namespace: list[str] | None
    key: str | None
    category: str | None
    entity_id: str | None

    def position(self) -> str:
        if self.namespace is None:
            return ""
        if self.key is None:
            return namespace_position(check_namespace(self.namespace, ["namespace"]))
        place = check_namespace_key(self.namespace, self.key)
        assert place is not None  # a key with its namespace
        return namespace_key_position(*place)

    def keeps(self, memory: MemoryObject) -> bool:
        # A prefix of `<ns>#<key>` is also `<ns>#<key><more>`: a key is kept exactly.
        at_key = self.key is None or (
            memory.key == self.key
            and (self.namespace is None or list(memory.namespace or ()) == self.namespace)
        )
        entity = memory.entity
        return (
            at_key
            and (self.category is None or memory.category == self.category)
            and (self.entity_id is None or (entity is not None and entity.id == self.entity_id))
        )


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
