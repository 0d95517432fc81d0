"""Sessions: a conversation with an Agent, its Timeline (`head`), `revision` and history.

- `head` names the history: it changes exactly when items are added (a Turn, a Remember or
  Forget edit), and a Fork starts at its source's head.
- `revision` counts every change of the Session: history, memory, switches, consolidation.
- Items are numbered per Session from 1; clients see them as `i-01`, `i-02`, ... so the
  read position (`processed`) is one number and the processed ids follow from it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal, get_args

from agent_memory.domain.access import Grants
from agent_memory.domain.bounds import MAX_APP_LENGTH, MAX_ITEM_BYTES, MAX_TURN_ITEMS
from agent_memory.domain.errors import TooLarge, ValidationFailed

SessionKind = Literal["chat", "review", "subagent"]
SESSION_KINDS: tuple[str, ...] = get_args(SessionKind)
ItemRole = Literal["user", "assistant", "tool", "notice"]
ITEM_ROLES: tuple[str, ...] = get_args(ItemRole)
ITEM_TOO_LARGE = f"an item's content is at most {MAX_ITEM_BYTES} bytes (UTF-8)"
APP_ONLY_FOR_TOOLS = "only a tool result comes from an App"


@dataclass(frozen=True)
class Session:
    """A Session's head row: who owns it, where its history stands, what it overrides."""

    id: str
    org_id: str
    agent_id: str
    owner: str
    kind: SessionKind
    model: str | None
    head: str
    revision: int
    # How many items the history holds (the last item is `item_id(item_count)`).
    item_count: int
    # The read position: items 1..processed were read for memory.
    processed: int
    # The switches this Session sets itself (`use`, `generate`); missing ones follow the org.
    overrides: Mapping[str, bool] = field(default_factory=dict)
    parent_id: str | None = None

    def grants(self) -> Grants:
        """A Session is private to its owner (and the organization's admins)."""
        return Grants(self.org_id, self.owner, frozenset())

    def processed_ids(self) -> list[str]:
        return [item_id(seq) for seq in range(1, self.processed + 1)]

    def with_items(self, count: int, *, mark_processed: bool = False) -> Session:
        """The Session after `count` items were appended: a new head and revision."""
        total = self.item_count + count
        return replace(
            self,
            item_count=total,
            head=head_for(self.id, total),
            revision=self.revision + 1,
            processed=total if mark_processed else self.processed,
        )

    def configured(self, overrides: Mapping[str, bool]) -> Session:
        """The Session after Configure: same history and head, next revision."""
        return replace(self, overrides=dict(overrides), revision=self.revision + 1)

    def consolidated(self, upto: int) -> Session:
        """The Session after a consolidation read up to item `upto`: same head."""
        return replace(self, processed=upto, revision=self.revision + 1)


def new_session(
    session_id: str,
    org_id: str,
    agent_id: str,
    owner: str,
    kind: str,
    model: str | None,
) -> Session:
    """A Session with an empty history at revision 0."""
    if kind not in SESSION_KINDS:
        raise ValidationFailed(f"kind must be one of {', '.join(SESSION_KINDS)}", ["kind"])
    return Session(
        id=session_id,
        org_id=org_id,
        agent_id=agent_id,
        owner=owner,
        kind=kind,  # type: ignore[arg-type]
        model=model,
        head=head_for(session_id, 0),
        revision=0,
        item_count=0,
        processed=0,
    )


def forked(source: Session, fork_id: str, owner: str) -> Session:
    """The head row of a Fork: the source's head, revision, read position and overrides."""
    return replace(source, id=fork_id, owner=owner, parent_id=source.id)


def head_for(session_id: str, item_count: int) -> str:
    """An opaque Timeline head that changes with the history's length.

    Derived, not random, so the same history gives the same head; a Fork copies its
    source's head and moves to its own on its first new item.
    """
    digest = hashlib.sha256(f"{session_id}\x00{item_count}".encode()).hexdigest()
    return f"v-{digest[:8]}"


def item_id(seq: int) -> str:
    """The client-facing id of the `seq`-th item (`i-01`, ..., `i-99`, `i-100`)."""
    return f"i-{seq:02d}"


def item_seq(value: str) -> int | None:
    """The sequence number behind an item id, or None when it is not one."""
    prefix, _, number = value.partition("-")
    if prefix != "i" or not number.isdigit() or len(number) < 2:
        return None
    seq = int(number)
    return seq if seq >= 1 and item_id(seq) == value else None


@dataclass(frozen=True)
class SessionItem:
    """One item of a session's history, as stored (edit notices included)."""

    id: str
    role: str
    content: str
    app: str | None
    model: str | None
    turn_id: str | None
    created_at: int


@dataclass(frozen=True)
class NewItem:
    """One item of a conversation as the client sent it (a Turn's, a chat's)."""

    role: ItemRole
    content: str
    app: str | None = None


def check_content(text: str, path: list[str | int]) -> None:
    """An item's content is at most MAX_ITEM_BYTES in UTF-8."""
    if len(text.encode()) > MAX_ITEM_BYTES:
        raise TooLarge(ITEM_TOO_LARGE, path)


def check_items(
    items: Sequence[NewItem], roles: tuple[str, ...], none: str, too_many: str, bad_role: str
) -> None:
    """1..MAX_TURN_ITEMS items of `roles`, each within its size limit, an App's only on a
    tool result; `none`, `too_many` and `bad_role` say what the write refuses."""
    if not items:
        raise ValidationFailed(none, ["items"])
    if len(items) > MAX_TURN_ITEMS:
        raise TooLarge(too_many, ["items"])
    for index, item in enumerate(items):
        if item.role not in roles:
            raise ValidationFailed(bad_role, ["items", index, "role"])
        check_content(item.content, ["items", index, "content"])
        if item.app is not None and item.role != "tool":
            raise ValidationFailed(APP_ONLY_FOR_TOOLS, ["items", index, "app"])
        if item.app is not None and not 1 <= len(item.app) <= MAX_APP_LENGTH:
            raise ValidationFailed(
                f"app is 1..{MAX_APP_LENGTH} characters", ["items", index, "app"]
            )


def check_turn(items: Sequence[NewItem]) -> None:
    """A Turn holds 1..MAX_TURN_ITEMS items of any role."""
    check_items(
        items,
        ITEM_ROLES,
        "a turn has at least one item",
        f"a turn has at most {MAX_TURN_ITEMS} items",
        f"role must be one of {', '.join(ITEM_ROLES)}",
    )


def only_runs_an_app_action(items: Sequence[NewItem]) -> bool:
    """A Turn whose items are all App tool results: no model ran, so memory stays as it is."""
    return bool(items) and all(item.role == "tool" and item.app for item in items)
