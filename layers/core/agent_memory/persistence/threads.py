"""Threads of seed 003 in the single table.

- `THREAD#<id>` / `META`: organization, agent, resource (user), sealed title and metadata,
  createdAt, `seq` (messages ever saved: the next message's number), message tokens.
- `THREAD#<id>` / `MSG#<seq:010d>`: one message (sealed content and item): the latest N are
  one Query newest first.
- `RESOURCE#<userId>` / `THREAD#<agentId>#<newest-first createdAt>#<threadId>` and
  `TLIST#<newest-first createdAt>#<threadId>`: the user's thread lists per agent and across
  agents, each a key-ordered page (with the sealed title and metadata, so a page is one read).
- `AGENT#<agentId>` / `THREAD#<threadId>`: the agent's threads, for its deletion.
- `THREAD#<id>` / `LEARNPOS#<kind>`: the read position of one kind of background work
  (persistence/positions.py).
- Working memory: persistence/working_memory.py.

Content is sealed with the scope {org, pool: thread id, field: item}, bound to the message
id (the title to "title", the metadata to "metadata").
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from agent_memory.domain.events import thread_object
from agent_memory.domain.memory_bot import ReadMark
from agent_memory.domain.observation import total_message_tokens
from agent_memory.domain.threads import Message, Thread
from agent_memory.persistence import keys
from agent_memory.persistence.agents import agent_pk
from agent_memory.persistence.events import event_action
from agent_memory.persistence.keys import (
    MESSAGE_PREFIX,
    THREAD_LIST_PREFIX,
    THREAD_PREFIX,
    resource_pk,
    thread_pk,
)
from agent_memory.persistence.positions import advanced, position_move, read_mark
from agent_memory.persistence.rows import SealedRows, head_row
from agent_memory.persistence.working_memory import WorkingMemories
from agent_memory.ports import (
    Absent,
    Action,
    Check,
    Cipher,
    Delete,
    Equals,
    KeyRange,
    Present,
    Put,
    Record,
    Store,
    Update,
)
from agent_memory.ports.store import count_is

# Condition name: another save numbered its messages first (retry with the new count).
THREAD_SEQ = "thread-seq"
# Condition name: the thread's delete began before its notes landed (no notes outlive it).
THREAD_ALIVE = "thread-alive"
TITLE_ROW = "title"
METADATA_ROW = "metadata"
_TIME_SPAN = 10**13


def message_sk(seq: int) -> str:
    return f"{MESSAGE_PREFIX}{seq:010d}"


def _newest_first(created_at: int) -> str:
    return f"{_TIME_SPAN - 1 - max(0, min(created_at, _TIME_SPAN - 1)):013d}"


def index_sk(thread: Thread) -> str:
    return f"{THREAD_PREFIX}{thread.agent_id}#{_newest_first(thread.created_at)}#{thread.id}"


def all_sk(thread: Thread) -> str:
    return f"{THREAD_LIST_PREFIX}{_newest_first(thread.created_at)}#{thread.id}"


def agent_thread_sk(thread_id: str) -> str:
    """The thread's row in its agent's partition (`AGENT#<agentId>`)."""
    return f"{THREAD_PREFIX}{thread_id}"


@dataclass(frozen=True)
class StoredThread:
    thread: Thread
    seq: int


@dataclass(frozen=True)
class ThreadPage:
    threads: list[Thread]
    has_more: bool


class ThreadRepository(SealedRows):
    def __init__(self, store: Store, cipher: Cipher) -> None:
        super().__init__(store, cipher)
        self.notes = WorkingMemories(store, cipher)

    @staticmethod
    def _scope(org_id: str, thread_id: str) -> dict[str, str]:
        return {"org": org_id, "pool": thread_id, "field": "item"}

    def _seal(self, org_id: str, thread_id: str, text: str, row: str) -> bytes:
        return self._cipher.seal(text, scope=self._scope(org_id, thread_id), row=row)

    def _open(self, org_id: str, thread_id: str, blob: Any, row: str) -> str:
        return self._cipher.open(bytes(blob), scope=self._scope(org_id, thread_id), row=row)

    def _opened(self, row: Record, org_id: str, thread_id: str, name: str) -> str | None:
        """The thread's sealed `title` or `metadata` (the attribute's name is its row)."""
        blob = row.get(name)
        return self._open(org_id, thread_id, blob, name) if blob is not None else None

    def _described(self, thread: Thread) -> Record:
        """The sealed title and metadata a thread's row and its list rows carry."""
        fields: Record = {}
        if thread.title is not None:
            fields[TITLE_ROW] = self._seal(thread.org_id, thread.id, thread.title, TITLE_ROW)
        if thread.metadata is not None:
            text = json.dumps(thread.metadata, ensure_ascii=False, separators=(",", ":"))
            fields[METADATA_ROW] = self._seal(thread.org_id, thread.id, text, METADATA_ROW)
        return fields

    def create(self, thread: Thread) -> None:
        row: Record = {
            "pk": thread_pk(thread.id),
            "sk": keys.HEAD,
            "type": "thread",
            "orgId": thread.org_id,
            "agentId": thread.agent_id,
            "resourceId": thread.resource_id,
            "createdAt": thread.created_at,
            "seq": 0,
            **self._described(thread),
        }
        index = self._index_row(thread, index_sk(thread)) | self._described(thread)
        listed = self._index_row(thread, all_sk(thread)) | self._described(thread)
        created = event_action(thread.org_id, "thread.created", _ids(thread), thread.created_at)
        of_agent: Record = {
            "pk": agent_pk(thread.agent_id),
            "sk": agent_thread_sk(thread.id),
            "type": "agent-thread",
            "resourceId": thread.resource_id,
            "createdAt": thread.created_at,
        }
        self._store.write(
            [
                Put(row, Absent()),
                Put(index, Absent()),
                Put(listed, Absent()),
                Put(of_agent, Absent()),
                created,
            ]
        )

    @staticmethod
    def _index_row(thread: Thread, sk: str) -> Record:
        return {
            "pk": resource_pk(thread.org_id, thread.resource_id),
            "sk": sk,
            "type": "thread-index",
            "threadId": thread.id,
            "orgId": thread.org_id,
            "agentId": thread.agent_id,
            "createdAt": thread.created_at,
        }

    def get(self, thread_id: str) -> StoredThread | None:
        row = head_row(self._store, thread_pk(thread_id), "thread")
        if row is None:
            return None
        thread = self._thread(row, thread_id, str(row["resourceId"]))
        return StoredThread(thread, int(row.get("seq", 0)))

    def _thread(self, row: Record, thread_id: str, resource_id: str) -> Thread:
        """The thread its row or a list row holds, title and metadata opened (a list row
        keeps no token counts)."""
        org_id = str(row["orgId"])
        metadata = self._opened(row, org_id, thread_id, METADATA_ROW)
        return Thread(
            id=thread_id,
            org_id=org_id,
            agent_id=str(row["agentId"]),
            resource_id=resource_id,
            title=self._opened(row, org_id, thread_id, TITLE_ROW),
            created_at=int(row["createdAt"]),
            tokens=int(row.get("tokens", 0)),
            observed_tokens=int(row.get("obsTokens", 0)),
            metadata=json.loads(metadata) if metadata is not None else None,
        )

    def of_user(
        self,
        org_id: str,
        user_id: str,
        agent_id: str | None,
        limit: int,
        after: Thread | None = None,
    ) -> ThreadPage:
        """The user's threads newest first (of one agent when `agent_id` is given), `limit`
        at most, after the thread `after` (a page's last): one Query either way."""
        if agent_id is not None:
            prefix = f"{THREAD_PREFIX}{agent_id}#"
            start = index_sk(after) if after is not None else None
        else:
            prefix = THREAD_LIST_PREFIX
            start = all_sk(after) if after is not None else None
        page = self._store.query(
            resource_pk(org_id, user_id), KeyRange(prefix=prefix), limit=limit, after=start
        )
        threads = [self._thread(row, str(row["threadId"]), user_id) for row in page.records]
        return ThreadPage(threads, has_more=page.next is not None)

    def set_title(self, thread: Thread, title: str, now_ms: int) -> None:
        self._store.write(self.title_actions(thread, title, now_ms))

    def describe(self, thread: Thread, now_ms: int) -> None:
        """`thread`'s title and metadata as given, on its row and both list copies; a thread
        deleted meanwhile is not brought back (ConditionFailed)."""
        self._store.write(self.describe_actions(thread, now_ms))

    def title_actions(self, thread: Thread, title: str, now_ms: int) -> list[Action]:
        """The thread's row and both list copies renamed (sealed), to commit with others."""
        return self.describe_actions(replace(thread, title=title, metadata=None), now_ms)

    def describe_actions(self, thread: Thread, now_ms: int) -> list[Action]:
        """The sealed title and metadata of `thread` set where it is kept (a None leaves
        that field as stored), to commit with others."""
        fields = self._described(thread)
        resource = resource_pk(thread.org_id, thread.resource_id)
        return [
            Update(
                thread_pk(thread.id),
                keys.HEAD,
                set=fields | {"updatedAt": now_ms},
                condition=Equals("type", "thread"),
            ),
            Update(resource, index_sk(thread), set=fields, condition=Present()),
            Update(resource, all_sk(thread), set=fields, condition=Present()),
            event_action(thread.org_id, "thread.updated", _ids(thread), now_ms),
        ]

    def mark(self, thread_id: str, kind: str) -> ReadMark:
        """How far background work `kind` has read the thread (persistence/positions.py)."""
        return read_mark(self._store, thread_pk(thread_id), kind)

    def position(self, thread_id: str, kind: str) -> int:
        """Messages numbered below this are done for background work `kind` (0: none)."""
        return self.mark(thread_id, kind).position

    def advance(
        self, thread_id: str, kind: str, before: ReadMark, upto: int, now_ms: int
    ) -> Update:
        """Move `kind`'s read position from `before` (as read) to `upto` (WriteConflict
        READ_POSITION when another run moved it first)."""
        return position_move(thread_pk(thread_id), kind, before, advanced(before, upto), now_ms)

    def append(self, thread: Thread, seq: int, messages: Sequence[Message], now_ms: int) -> None:
        """Messages numbered from `seq`, in one transaction with the thread's count;
        WriteConflict(THREAD_SEQ) when another save numbered first."""
        puts: list[Action] = [
            Put(row, Absent()) for row in self.message_rows(thread, seq, messages)
        ]
        condition = count_is("seq", seq, name=THREAD_SEQ)
        head = Update(
            thread_pk(thread.id),
            keys.HEAD,
            set={"seq": seq + len(messages), "updatedAt": now_ms},
            # The thread's message tokens, counted as the observer counts them.
            add={"tokens": total_message_tokens([m.content for m in messages])},
            condition=condition,
        )
        self._store.write([head, *puts])

    def put_notes(self, thread: Thread, scope: str, text: str, now_ms: int) -> None:
        """The notes replaced while the thread lives; WriteConflict(THREAD_ALIVE) once its
        delete has marked it, since that delete's sweep may already have passed."""
        alive = Equals("type", "thread", name=THREAD_ALIVE)
        head = Check(thread_pk(thread.id), keys.HEAD, alive)
        self._store.write([head, *self.notes.actions(thread, scope, text, now_ms)])

    def message_rows(self, thread: Thread, seq: int, messages: Sequence[Message]) -> list[Record]:
        """The sealed rows of messages numbered from `seq` (a benchmark seeds with them)."""
        rows: list[Record] = []
        for offset, message in enumerate(messages):
            row: Record = {
                "pk": thread_pk(thread.id),
                "sk": message_sk(seq + offset),
                "type": "thread-message",
                "id": message.id,
                "role": message.role,
                "createdAt": message.created_at,
                "content": self._seal(thread.org_id, thread.id, message.content, message.id),
            }
            if message.item is not None:
                text = json.dumps(message.item, ensure_ascii=False, separators=(",", ":"))
                row["item"] = self._seal(thread.org_id, thread.id, text, f"{message.id}#item")
            rows.append(row)
        return rows

    def _message(self, thread: Thread, row: Record) -> Message:
        message_id = str(row["id"])
        item = None
        if row.get("item") is not None:
            opened = self._open(thread.org_id, thread.id, row["item"], f"{message_id}#item")
            item = json.loads(opened)
        return Message(
            id=message_id,
            role=str(row["role"]),
            content=self._open(thread.org_id, thread.id, row["content"], message_id),
            created_at=int(row["createdAt"]),
            item=item,
        )

    def _queried(self, thread: Thread, limit: int, *, newest_first: bool = False) -> list[Record]:
        """The thread's first (or newest) `limit` message rows, in that order: one Query."""
        key = KeyRange(prefix=MESSAGE_PREFIX)
        page = self._store.query(thread_pk(thread.id), key, limit=limit, newest_first=newest_first)
        return page.records

    def latest(self, thread: Thread, limit: int) -> list[Message]:
        """The latest `limit` messages in chronological order."""
        if limit <= 0:
            return []
        rows = self._queried(thread, limit, newest_first=True)
        return [self._message(thread, row) for row in reversed(rows)]

    def numbered(
        self, thread: Thread, after: int, upto: int, limit: int
    ) -> list[tuple[int, Message]]:
        """Messages numbered `after <= seq < upto`, oldest first, `limit` at most (one Query;
        removed messages are simply absent)."""
        if upto <= after or limit <= 0:
            return []
        page = self._store.query(
            thread_pk(thread.id),
            KeyRange(low=message_sk(after), high=message_sk(upto - 1)),
            limit=limit,
        )
        return [(_seq(row), self._message(thread, row)) for row in page.records]

    def messages_at(self, wanted: Sequence[tuple[Thread, int]]) -> dict[tuple[str, int], Message]:
        """Messages by (thread, number): one BatchGetItem per 100; removed ones are absent."""
        threads = {thread.id: thread for thread, _ in wanted}
        rows = self._store.get_many([(thread_pk(t.id), message_sk(seq)) for t, seq in wanted])
        found: dict[tuple[str, int], Message] = {}
        for row in rows:
            thread_id = str(row["pk"])[len(thread_pk("")) :]
            if row.get("type") != "thread-message" or thread_id not in threads:
                continue
            found[(thread_id, _seq(row))] = self._message(threads[thread_id], row)
        return found

    def _newest(self, thread: Thread) -> Record | None:
        return next(iter(self._queried(thread, 1, newest_first=True)), None)

    def newest_position(self, thread: Thread) -> int | None:
        """The number of the thread's latest stored message (nothing opened); None when it
        has none."""
        row = self._newest(thread)
        return _seq(row) if row is not None else None

    def first(self, thread: Thread, limit: int) -> list[Message]:
        return [self._message(thread, row) for row in self._queried(thread, limit)]

    def remove_last(self, thread: Thread) -> Message | None:
        row = self._newest(thread)
        if row is None:
            return None
        self._store.write([Delete(thread_pk(thread.id), str(row["sk"]), Present())])
        return self._message(thread, row)

    def clear(self, thread: Thread) -> None:
        """Delete every message, a transaction of 100 at a time (working memory stays)."""
        self._delete_all(thread_pk(thread.id), KeyRange(prefix=MESSAGE_PREFIX))


def _seq(row: Record) -> int:
    """The number of the message a row holds."""
    return int(str(row["sk"]).removeprefix(MESSAGE_PREFIX))


def _ids(thread: Thread) -> dict[str, str]:
    return thread_object(thread.id, thread.agent_id, thread.resource_id)
