"""Agent memories: the domain rules, and the service on the in-memory fakes."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pytest

from agent_memory.domain.errors import (
    Forbidden,
    IntegrityError,
    NotFound,
    ValidationFailed,
)
from agent_memory.domain.identity import SERVICE_ADMIN, Principal
from agent_memory.domain.memory_objects import (
    MAX_MEMORY_CONTENT_CHARS,
    MAX_METADATA_BYTES,
    Entity,
    MemoryObject,
    NewMemory,
    apply_patch,
    check_content,
    check_importance,
    check_metadata,
    create_memory,
    format_timestamp,
    memory_org,
    parse_patch,
    parse_timestamp,
)
from agent_memory.persistence.memory_objects import (
    MemoryObjectRepository,
    list_partition,
    recall_partition,
)
from agent_memory.ports import Action
from agent_memory.service.memory_objects import MemoryObjectService
from tests.support.in_memory import FakeCipher, FixedClock, InMemoryStore, SequentialIds

T0 = 1_792_486_800_000  # 2026-10-20T09:00:00Z
ANA = Principal(user_id="ana", org_id="acme", role="member")


# --- Time --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-10-20T09:00:00Z", T0),
        ("2026-10-20T09:00:00.5Z", T0 + 500),
        ("2026-10-20T09:00:00.123999z", T0 + 123),
        ("2026-10-20t11:00:00+02:00", T0),
        ("2026-10-20T03:30:00-05:30", T0),
        ("1969-12-31T23:59:59.999Z", -1),
    ],
)
def test_parse_timestamp_accepts_rfc3339_with_any_offset(text: str, expected: int) -> None:
    assert parse_timestamp(text, ["at"]) == expected


@pytest.mark.parametrize(
    "text",
    [
        "2026-10-19",
        "2026-10-19T09:00:00",
        "2026-10-19 09:00:00Z",
        "2026-13-01T00:00:00Z",
        "2026-02-29T00:00:00Z",
        "2026-10-19T24:00:00Z",
        "2026-10-19T09:00:60Z",
        "2026-10-19T09:00:00+2:00",
        "2026-10-19T09:00:00+24:00",
        "9999-12-31T23:59:59-01:00",
        "0001-01-01T00:00:00+01:00",
        " 2026-10-19T09:00:00Z",
    ],
)
def test_parse_timestamp_refuses_what_is_not_rfc3339(text: str) -> None:
    with pytest.raises(ValidationFailed) as caught:
        parse_timestamp(text, ["expires_at"])
    assert caught.value.path == ["expires_at"]


def test_format_timestamp_is_utc_with_milliseconds() -> None:
    assert format_timestamp(T0 + 7) == "2026-10-20T09:00:00.007Z"
    assert format_timestamp(-1) == "1969-12-31T23:59:59.999Z"
    first = parse_timestamp("0001-01-01T00:00:00Z", [])
    assert format_timestamp(first) == "0001-01-01T00:00:00.000Z"
    assert parse_timestamp(format_timestamp(T0 + 123), []) == T0 + 123


def test_a_memory_expires_at_its_instant() -> None:
    assert not replace(_memory(), expires_at_ms=None).is_expired(T0)
    assert not replace(_memory(), expires_at_ms=T0 + 1).is_expired(T0)
    assert replace(_memory(), expires_at_ms=T0).is_expired(T0)


# --- Field rules ---------------------------------------------------------------------------------


def test_importance_bounds_and_negative_zero() -> None:
    assert check_importance(0) == 0.0
    assert check_importance(1) == 1.0
    assert math.copysign(1, check_importance(-0.0)) == 1.0
    for bad in (-0.001, 1.000001, math.nan, math.inf, True, "0.5", None):
        with pytest.raises(ValidationFailed) as caught:
            check_importance(bad)
        assert caught.value.path == ["importance"]


def test_content_must_be_present_and_short_enough() -> None:
    assert check_content("x" * MAX_MEMORY_CONTENT_CHARS)
    for bad in ("", " \n\t", "x" * (MAX_MEMORY_CONTENT_CHARS + 1), None):
        with pytest.raises(ValidationFailed) as caught:
            check_content(bad)
        assert caught.value.path == ["content"]


def test_metadata_is_any_json_value_within_its_size() -> None:
    for value in ({"a": [1, None]}, [], "s", 1.5, False, None):
        assert check_metadata(value) == value
    assert check_metadata("x" * (MAX_METADATA_BYTES - 2))  # the quotes make it exact
    for bad in ("x" * (MAX_METADATA_BYTES - 1), {1, 2}, math.nan):
        with pytest.raises(ValidationFailed) as caught:
            check_metadata(bad)
        assert caught.value.path == ["metadata"]


def test_the_service_admin_has_no_organization_of_memories() -> None:
    assert memory_org(ANA) == "acme"
    with pytest.raises(Forbidden):
        memory_org(SERVICE_ADMIN)


# --- PATCH rules ---------------------------------------------------------------------------------


def _memory() -> MemoryObject:
    return create_memory("mem_1", "acme", NewMemory(category="fact", content="c"), T0)


def test_parse_patch_checks_only_the_given_fields() -> None:
    assert parse_patch({}) == {}
    assert parse_patch({"importance": 1}) == {"importance": 1.0}
    assert parse_patch({"metadata": None, "entity": None, "expires_at": None}) == {
        "metadata": None,
        "entity": None,
        "expires_at_ms": None,
    }
    assert parse_patch({"expires_at": "2026-10-20T09:00:00Z"}) == {"expires_at_ms": T0}


@pytest.mark.parametrize(
    ("patch", "path"),
    [
        ({"content": None}, ["content"]),
        ({"category": None}, ["category"]),
        ({"importance": None}, ["importance"]),
        ({"category": "opinion"}, ["category"]),
        ({"created_at": "x"}, ["created_at"]),
        ({"entity": Entity(id="", type="account")}, ["entity", "id"]),
    ],
)
def test_parse_patch_refuses(patch: dict[str, Any], path: list[Any]) -> None:
    with pytest.raises(ValidationFailed) as caught:
        parse_patch(patch)
    assert caught.value.path == path


def test_apply_patch_moves_updated_at_even_within_one_tick() -> None:
    memory = _memory()
    once = apply_patch(memory, {"content": "d"}, T0)
    twice = apply_patch(once, {"content": "e"}, T0)
    assert (once.updated_at_ms, twice.updated_at_ms) == (T0 + 1, T0 + 2)
    assert twice.created_at_ms == T0
    assert twice.rev == 2
    later = apply_patch(twice, {}, T0 + 50)
    assert later.updated_at_ms == T0 + 50
    assert later.content == "e"


# --- The service on the fakes -------------------------------------------------------------------


class Harness:
    def __init__(self, store: InMemoryStore | None = None) -> None:
        self.store = store or InMemoryStore()
        self.cipher = FakeCipher()
        self.clock = FixedClock(T0)
        self.service = MemoryObjectService(
            MemoryObjectRepository(self.store, self.cipher), self.clock, SequentialIds()
        )

    def add(self, **fields: Any) -> MemoryObject:
        new = NewMemory(**({"category": "fact", "content": "note"} | fields))
        return self.service.create(ANA, new)

    def row_keys(self, memory: MemoryObject) -> list[tuple[str, str]]:
        """(pk, sk) of every row of `memory`; the base row first."""
        return [(str(r["pk"]), str(r["sk"])) for r in self.service.repo.rows(memory)]

    def live_keys(self) -> set[tuple[str, str]]:
        # The events feed's rows (EVENTS#<org>) report changes; they are not the memory's.
        return {key for key in self.store.rows if not key[0].startswith("EVENTS#")}


@pytest.fixture
def h() -> Harness:
    return Harness()


def test_memories_expire_as_time_passes(h: Harness) -> None:
    soon = h.add(expires_at=format_timestamp(T0 + 1000), importance=0.9)
    always = h.add(importance=0.1)
    assert [m.id for m in h.service.recall(ANA, limit=5).memories] == [soon.id, always.id]
    h.clock.ms = T0 + 1000
    page = h.service.recall(ANA, limit=5)
    assert [m.id for m in page.memories] == [always.id]
    assert page.skipped_expired == 1
    listing = h.service.list_memories(ANA, limit=5)
    assert [m.id for m in listing.memories] == [always.id]
    assert h.service.get(ANA, soon.id).content == "note"


def test_index_rows_follow_every_change_and_leave_nothing_behind(h: Harness) -> None:
    memory = h.add(entity=Entity(id="e1", type="actor"), expires_at=format_timestamp(T0 + 10))
    assert h.live_keys() == set(h.row_keys(memory))
    changes: list[dict[str, Any]] = [
        {"importance": 0.75},
        {"category": "preference"},
        {"entity": Entity(id="e2", type="account", name="N")},
        {"entity": None},
        {"entity": Entity(id="e3", type="entity")},
        {"expires_at": None},
    ]
    for patch in changes:
        memory = h.service.update(ANA, memory.id, patch)
        assert h.live_keys() == set(h.row_keys(memory))
    assert all("ttl" not in h.store.rows[key] for key in h.live_keys())
    h.service.delete(ANA, memory.id)
    assert h.live_keys() == set()


def test_index_rows_of_an_expiring_memory_carry_a_ttl_the_base_row_does_not(h: Harness) -> None:
    memory = h.add(expires_at=format_timestamp(T0 + 5000))
    base = h.row_keys(memory)[0]
    for key in h.live_keys():
        assert ("ttl" in h.store.rows[key]) == (key != base)


def test_reads_decrypt_only_what_they_return(h: Harness) -> None:
    for n in range(30):
        h.add(importance=n / 100)
    h.cipher.opens = 0
    assert len(h.service.recall(ANA, limit=4).memories) == 4
    assert h.cipher.opens == 4
    h.cipher.opens = 0
    assert len(h.service.list_memories(ANA, limit=3).memories) == 3
    assert h.cipher.opens == 3


def test_recall_steps_over_expired_rows_in_few_requests(h: Harness) -> None:
    for _ in range(200):
        h.add(importance=1, expires_at=format_timestamp(T0 - 1))
    keep = [h.add(importance=0.5).id for _ in range(3)]
    h.store.requests = 0
    page = h.service.recall(ANA, limit=2)
    assert [m.id for m in page.memories] == keep[::-1][:2]
    assert page.has_more is True
    assert page.skipped_expired == 200
    # Each further request doubles while expired rows keep coming: log2, not 200/3.
    assert h.store.requests <= 10


def test_starting_after_is_a_position(h: Harness) -> None:
    made = [h.add().id for _ in range(5)]
    page = h.service.list_memories(ANA, limit=10, starting_after=made[3])
    assert [m.id for m in page.memories] == made[:3][::-1]
    h.service.delete(ANA, made[2])
    page = h.service.list_memories(ANA, limit=1, starting_after=made[2])
    assert ([m.id for m in page.memories], page.has_more) == ([made[1]], True)


def test_memories_of_other_organizations_are_unknown(h: Harness) -> None:
    memory = h.add()
    bob = Principal(user_id="bob", org_id="globex", role="admin")
    with pytest.raises(NotFound):
        h.service.get(bob, memory.id)
    with pytest.raises(NotFound):
        h.service.update(bob, memory.id, {"content": "x"})
    with pytest.raises(NotFound):
        h.service.delete(bob, memory.id)
    assert h.service.list_memories(bob, limit=10).memories == []


def test_key_parts_cannot_be_forged_with_separators() -> None:
    assert list_partition("a#E#b", None, None) != list_partition("a", None, "b")
    assert list_partition("a", None, "x#C#fact") != list_partition("a", "fact", "x")
    assert recall_partition("a", "b#R") != recall_partition("a#E#b", None)
    assert list_partition("a", None, "x%23") != list_partition("a", None, "x#")


def test_a_ciphertext_copied_to_another_memory_does_not_open(h: Harness) -> None:
    first, second = h.add(content="mine"), h.add(content="yours")
    h.store.rows[h.row_keys(second)[0]]["content"] = h.store.rows[h.row_keys(first)[0]]["content"]
    with pytest.raises(IntegrityError):
        h.service.get(ANA, second.id)


class RacingStore(InMemoryStore):
    """Runs `race` (another writer) just before the next `write` lands."""

    def __init__(self) -> None:
        super().__init__()
        self.races: list[Any] = []
        self._racing = False

    def write(self, actions: Sequence[Action]) -> None:
        if self.races and not self._racing:
            self._racing = True  # the other writer's own write does not race again
            try:
                self.races.pop(0)()
            finally:
                self._racing = False
        super().write(actions)


def test_a_patch_that_loses_a_race_retries_and_keeps_both_changes() -> None:
    store = RacingStore()
    h = Harness(store)
    memory = h.add(importance=0.2)
    store.races.append(lambda: h.service.update(ANA, memory.id, {"content": "theirs"}))
    mine = h.service.update(ANA, memory.id, {"importance": 0.9})
    assert (mine.content, mine.importance) == ("theirs", 0.9)
    assert h.live_keys() == set(h.row_keys(mine))


def test_a_delete_that_loses_a_race_deletes_the_new_rows() -> None:
    store = RacingStore()
    h = Harness(store)
    memory = h.add(importance=0.2)
    store.races.append(
        lambda: h.service.update(ANA, memory.id, {"entity": Entity(id="e", type="actor")})
    )
    h.service.delete(ANA, memory.id)
    assert h.live_keys() == set()


def test_a_patch_that_loses_races_reads_again_and_lands_keeping_the_winners_fields() -> None:
    # PATCH has no precondition: it never answers 409 for a race it lost.
    store = RacingStore()
    h = Harness(store)
    memory = h.add()
    for n in range(3):
        store.races.append(lambda n=n: h.service.update(ANA, memory.id, {"content": f"{n}"}))
    patched = h.service.update(ANA, memory.id, {"importance": 0.9})
    assert (patched.importance, patched.content) == (0.9, "2")
