"""Deleting sessions, agents, threads and chats, and erasing one person, in batches.

Resumable: the head row is first marked `<kind>-deleting` (every read treats it as absent,
and the counter concurrent writes are conditioned on moves), then the rows go in
transactions of at most 100 deletes, the head row last with the index rows that find it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from agent_memory.domain.access import GrantedT, Grants
from agent_memory.domain.agents import Agent
from agent_memory.domain.bots import Chat
from agent_memory.domain.entries import keyed_id
from agent_memory.domain.erasure import Erased, about_person
from agent_memory.domain.events import thread_object
from agent_memory.domain.memory_objects import entity_of
from agent_memory.domain.sessions import Session
from agent_memory.domain.threads import Thread
from agent_memory.persistence import keys
from agent_memory.persistence.agents import agent_of, agent_pk, org_agents_pk
from agent_memory.persistence.bot_rows import (
    chat_of,
    chat_pk,
    org_bots_pk,
    owned_chat_key,
    raise_fence,
    spoken_chat_key,
    turn_sk,
)
from agent_memory.persistence.events import event_action
from agent_memory.persistence.memory_objects import (
    delete_memories,
    list_partition,
    namespace_partition,
)
from agent_memory.persistence.pools import PoolRepository
from agent_memory.persistence.recall_pending import pending_pk, tail_sk
from agent_memory.persistence.rows import StoreRows
from agent_memory.persistence.runs import source_of
from agent_memory.persistence.sessions import agent_sessions_pk, session_of, session_pk
from agent_memory.persistence.threads import agent_thread_sk, all_sk, index_sk
from agent_memory.persistence.working_memory import WORKING_MEMORY_KEY, working_memory_pool
from agent_memory.ports import Delete, Equals, KeyRange, Present, Record, Update
from agent_memory.ports.store import write_in_batches

SESSION_DELETING = "session-deleting"
AGENT_DELETING = "agent-deleting"
THREAD_DELETING = "thread-deleting"
CHAT_DELETING = "chat-deleting"

# Called before the rows go: (thread id, message count), or agent_memory ids.
ForgetThreadVectors = Callable[[str, int], None]
ForgetMemoryVectors = Callable[[Sequence[str]], None]

T = TypeVar("T")


@dataclass(frozen=True)
class Erasing(Generic[T]):
    """An object as its deletion reads it (also one whose deletion began), and whether
    that deletion began: its head row is marked, so it is not marked again."""

    it: T
    begun: bool

    def grants(self: Erasing[GrantedT]) -> Grants:
        """Who holds what on the object (`domain/access.authorized` judges its deletion)."""
        return self.it.grants()


class ErasureRepository(StoreRows):
    def session(self, session_id: str) -> Erasing[Session] | None:
        found = self._head(session_pk(session_id), "session", SESSION_DELETING)
        return Erasing(session_of(found.it), found.begun) if found is not None else None

    def agent(self, agent_id: str) -> Erasing[Agent] | None:
        found = self._head(agent_pk(agent_id), "agent", AGENT_DELETING)
        if found is None or (agent := agent_of(agent_id, found.it)) is None:
            return None
        return Erasing(agent, found.begun)

    def chat(self, chat_id: str) -> Erasing[Chat] | None:
        found = self._head(chat_pk(chat_id), "chat", CHAT_DELETING)
        return Erasing(chat_of(found.it), found.begun) if found is not None else None

    def thread(self, thread_id: str) -> Thread | None:
        """The thread (also one whose deletion began), its title and metadata sealed."""
        found = self._head(keys.thread_pk(thread_id), "thread", THREAD_DELETING)
        return _thread_of(thread_id, found.it) if found is not None else None

    def _head(self, pk: str, kind: str, marked: str) -> Erasing[Record] | None:
        row = self._store.get(pk, keys.HEAD)
        if row is None or row.get("type") not in (kind, marked):
            return None
        return Erasing(row | {"type": kind}, row["type"] == marked)

    def org_agents(self, org_id: str) -> list[tuple[str, str]]:
        """(id, owner) of every agent in the organization's list (deleted ones leave it)."""
        return [(str(r["sk"]), str(r.get("owner", ""))) for r in self._rows(org_agents_pk(org_id))]

    def session_ids(self, agent_id: str, owner: str | None) -> list[str]:
        return [
            str(r["sk"])
            for r in self._rows(agent_sessions_pk(agent_id))
            if owner is None or r.get("owner") == owner
        ]

    def agent_thread_ids(self, agent_id: str) -> list[str]:
        """Every thread of the agent, everyone's."""
        return self._ids(agent_pk(agent_id), agent_thread_sk(""))

    def user_thread_ids(self, org_id: str, user_id: str) -> list[str]:
        resource = keys.resource_pk(org_id, user_id)
        rows = self._rows(resource, KeyRange(prefix=keys.THREAD_LIST_PREFIX))
        return sorted({str(r["threadId"]) for r in rows if "threadId" in r})

    def owned_chat_ids(self, org_id: str, user_id: str) -> list[str]:
        return self._ids(*owned_chat_key(org_id, user_id, ""))

    def spoken_chat_ids(self, org_id: str, user_id: str) -> list[str]:
        """Every group chat of another owner where the person started a Turn."""
        return self._ids(*spoken_chat_key(org_id, user_id, ""))

    def org_bot_ids(self, org_id: str) -> list[str]:
        """Every bot the organization uses (its own, and those linked to it)."""
        return [str(r["sk"]) for r in self._rows(org_bots_pk(org_id))]

    def _ids(self, pk: str, prefix: str) -> list[str]:
        rows = self._rows(pk, KeyRange(prefix=prefix))
        return [str(r["sk"]).removeprefix(prefix) for r in rows]

    def mark_session(self, session_id: str) -> None:
        """Its revision moves, so a racing Turn or command fails its condition and re-reads."""
        self._mark(session_pk(session_id), SESSION_DELETING, add={"revision": 1})

    def mark_agent(self, agent_id: str) -> None:
        self._mark(agent_pk(agent_id), AGENT_DELETING)

    def mark_chat(self, chat_id: str) -> None:
        """Its item count (the fence item writers check) moves, so racing items re-read."""
        self._mark(chat_pk(chat_id), CHAT_DELETING, add={"itemCount": 1})

    def _mark(self, pk: str, marked: str, add: dict[str, int] | None = None) -> None:
        self._store.write(
            [Update(pk, keys.HEAD, set={"type": marked}, add=add or {}, condition=Present())]
        )

    def delete_session(self, session: Session) -> Erased:
        """A marked session's rows, executions and the agent runs that read it; agent
        memory learned from it stays."""
        pk = session_pk(session.id)
        items = _typed(self._delete_all(pk, but_head=True), "item")
        self._delete_all(keys.learn_pk("session", session.id))
        self._delete_runs(keys.learn_pk("agent", session.agent_id), ("session", session.id))
        self._delete_head(
            pk,
            SESSION_DELETING,
            Delete(agent_pk(session.agent_id), keys.position_sk(session.id)),
            Delete(agent_sessions_pk(session.agent_id), session.id),
        )
        return Erased(sessions=1, items=items)

    def delete_agent(self, agent: Agent) -> None:
        """The marked agent's own rows; its sessions and threads must be gone before."""
        self._delete_all(agent_pk(agent.id), but_head=True)
        self._delete_all(keys.learn_pk("agent", agent.id))
        self._delete_all(agent_sessions_pk(agent.id))
        self._delete_head(
            agent_pk(agent.id), AGENT_DELETING, Delete(org_agents_pk(agent.org_id), agent.id)
        )

    def delete_thread(
        self,
        thread_id: str,
        learning_kinds: Sequence[str],
        forget_vectors: ForgetThreadVectors,
        embedding_kinds: Sequence[str],
        now_ms: int,
        *,
        resource_notes: bool = True,
    ) -> Erased:
        """Every row of a thread; its vectors go first (a failure leaves all that finds
        them) when one of `embedding_kinds` ever ran on it. With `resource_notes`, also the
        working memory its person keeps with the agent across threads (they all go)."""
        head = self._marked_thread(thread_id)
        if head is None:
            return Erased()
        pk = keys.thread_pk(thread_id)
        rows = [r for r in self._rows(pk) if r["sk"] != keys.HEAD]
        if self._embedded(thread_id, rows, embedding_kinds):
            forget_vectors(thread_id, int(head.get("seq", 0)))
        self._delete_rows(pk, rows)
        for kind in learning_kinds:
            self._delete_all(keys.learn_pk(kind, thread_id))
        notes = self._delete_thread_head(_thread_of(thread_id, head), now_ms, resource_notes)
        return Erased(
            threads=1,
            messages=_under(rows, keys.MESSAGE_PREFIX),
            observations=_under(rows, keys.CHUNK_PREFIX),
            working_memory=_under(rows, keys.ENTRY_PREFIX) + notes,
        )

    def _marked_thread(self, thread_id: str) -> Record | None:
        found = self._head(keys.thread_pk(thread_id), "thread", THREAD_DELETING)
        if found is None:
            return None
        if found.begun:
            return found.it
        # `seq` moves: a save racing this one fails its condition and re-reads.
        self._mark(keys.thread_pk(thread_id), THREAD_DELETING, add={"seq": 1})
        return found.it | {"seq": int(found.it.get("seq", 0)) + 1}

    def _delete_thread_head(self, thread: Thread, now_ms: int, resource_notes: bool) -> int:
        """Returns how many of the person's resource working memory rows went."""
        resource = keys.resource_pk(thread.org_id, thread.resource_id)
        notes = working_memory_pool(thread, "resource")
        notes_sk = keys.entry_sk(keyed_id(notes.pool_id, WORKING_MEMORY_KEY))
        had_notes = resource_notes and self._store.get(notes.pk, notes_sk) is not None
        ids = thread_object(thread.id, thread.agent_id, thread.resource_id)
        self._store.write(
            [
                Delete(resource, index_sk(thread)),
                Delete(resource, all_sk(thread)),
                *([Delete(notes.pk, notes_sk)] if resource_notes else []),
                Delete(agent_pk(thread.agent_id), agent_thread_sk(thread.id)),
                Delete(keys.thread_pk(thread.id), keys.HEAD, Equals("type", THREAD_DELETING)),
                Delete(pending_pk(thread.id), thread.id),
                Delete(resource, tail_sk(thread.agent_id, thread.id)),
                event_action(thread.org_id, "thread.deleted", ids, now_ms),
            ]
        )
        return int(had_notes)

    def _embedded(self, thread_id: str, rows: Sequence[Record], kinds: Sequence[str]) -> bool:
        """Whether any of `kinds` ever ran on the thread (a read position or an execution)."""
        return any(r["sk"] == keys.position_sk(kind) for r in rows for kind in kinds) or any(
            self._store.query(keys.learn_pk(kind, thread_id), limit=1).records for kind in kinds
        )

    def delete_chat(self, chat: Chat, learning: tuple[str, str]) -> Erased:
        """Every row of a marked chat and the runs of its bot's `learning` (kind, pool id)
        that read it."""
        pk = chat_pk(chat.id)
        # Others' rows that list it among chats they spoke in go first, while its Turns
        # still name them (a call cut short finds them again).
        actors = {str(r.get("actor")) for r in self._rows(pk, KeyRange(prefix=turn_sk("")))}
        write_in_batches(
            self._store,
            [
                Delete(*spoken_chat_key(chat.org_id, actor, chat.id))
                for actor in sorted(actors - {chat.owner})
            ],
        )
        items = _typed(self._delete_all(pk, but_head=True), "chat-item")
        self._delete_runs(keys.learn_pk(*learning), ("chat", chat.id))
        self._delete_head(
            pk, CHAT_DELETING, Delete(*owned_chat_key(chat.org_id, chat.owner, chat.id))
        )
        return Erased(chats=1, chat_items=items)

    def delete_contributions(self, org_id: str, chat_id: str, user_id: str) -> Erased:
        """The person's items in another's group chat, with what their Turns left; the
        fence rises first so the ids of words that went are never given again."""
        pk = chat_pk(chat_id)
        rows = list(self._rows(pk))
        turns = {
            str(r["sk"]).removeprefix(turn_sk(""))
            for r in rows
            if r.get("type") == "turn" and r.get("actor") == user_id
        }

        def theirs(row: Record) -> bool:
            sk = str(row["sk"])
            if row.get("type") == "chat-item":
                return row.get("actor") == user_id
            if sk.startswith((keys.ENRICHMENT_PREFIX, keys.CONFESSION_PREFIX)):
                return sk.rsplit("#", 1)[-1] in turns
            # The memory Bot's call log holds their words.
            return row.get("type") == "memory-bot-call" and row.get("turnId") in turns

        chosen = [r for r in rows if theirs(r)]
        seqs = [int(r["seq"]) for r in chosen if r.get("type") == "chat-item"]
        if seqs:
            raise_fence(self._store, chat_id, max(seqs))
        self._delete_rows(pk, chosen)
        self._store.write([Delete(*spoken_chat_key(org_id, user_id, chat_id))])
        return Erased(chat_items=len(seqs))

    def forget_owned_chat(self, org_id: str, user_id: str, chat_id: str) -> None:
        self._store.write([Delete(*owned_chat_key(org_id, user_id, chat_id))])

    def delete_resource_rest(self, org_id: str, user_id: str) -> Erased:
        """What is left in the person's partition once their threads and chats went."""
        resource = keys.resource_pk(org_id, user_id)
        chats = (keys.CHAT_PREFIX, keys.SPOKEN_CHAT_PREFIX)
        rest = [r for r in self._rows(resource) if not str(r["sk"]).startswith(chats)]
        self._delete_rows(resource, rest)
        return Erased(working_memory=_under(rest, keys.ENTRY_PREFIX))

    def delete_memories_about(
        self,
        org_id: str,
        user_id: str,
        now_ms: int,
        forget_vectors: ForgetMemoryVectors,
    ) -> Erased:
        """The organization's agent_memories whose entity is the person (a plaintext tag),
        and the person's own namespaced ones (ADR 0082: their copy in the person's partition
        never expires), vectors first, each memory whole within one transaction."""
        found = [
            stored.meta
            for row in self._rows(list_partition(org_id, None, user_id))
            if (stored := PoolRepository.parse(row)) is not None
            and about_person(entity_of(stored.meta), user_id)
        ]
        about = {meta.id for meta in found}
        found += [
            stored.meta
            for row in self._rows(namespace_partition(org_id, user_id))
            if (stored := PoolRepository.parse(row)) is not None and stored.meta.id not in about
        ]
        delete_memories(self._store, org_id, found, forget_vectors, changed_at=now_ms)
        return Erased(agent_memories=len(found))

    def _delete_runs(self, pk: str, source: tuple[str, str]) -> None:
        """A pool's executions that read `source`, their evidence rows (also one left
        without its execution row) and their saved calls."""

        def names_it(row: Record) -> bool:
            return source_of(row) == source

        names = {
            str(r["name"]) for r in self._rows(pk, KeyRange(prefix=keys.EXEC_PREFIX)) if names_it(r)
        }
        if not names and not any(
            map(names_it, self._rows(pk, KeyRange(prefix=keys.EVIDENCE_PREFIX)))
        ):
            return

        def of_source(row: Record) -> bool:
            sk = str(row["sk"])
            if sk.startswith(keys.EXEC_PREFIX):
                return str(row.get("name")) in names
            if sk.startswith(keys.EVIDENCE_PREFIX):
                return str(row.get("name")) in names or names_it(row)
            if sk.startswith(keys.CALL_PREFIX):
                return sk[len(keys.CALL_PREFIX) :].split("#", 1)[0] in names
            return False

        self._delete_rows(pk, [r for r in self._rows(pk) if of_source(r)])

    def _delete_head(self, pk: str, marked: str, *found_by: Delete) -> None:
        """With the rows that find it: an object is listed until it is gone."""
        self._store.write([*found_by, Delete(pk, keys.HEAD, Equals("type", marked))])

    def _delete_rows(self, pk: str, rows: Sequence[Record]) -> None:
        write_in_batches(self._store, [Delete(pk, str(r["sk"])) for r in rows])


def _thread_of(thread_id: str, head: Record) -> Thread:
    """The thread a head row holds; its title and metadata stay sealed."""
    return Thread(
        thread_id,
        str(head["orgId"]),
        str(head["agentId"]),
        str(head["resourceId"]),
        None,
        int(head["createdAt"]),
    )


def _typed(rows: Iterable[Record], row_type: str) -> int:
    return sum(1 for r in rows if r.get("type") == row_type)


def _under(rows: Iterable[Record], prefix: str) -> int:
    return sum(1 for r in rows if str(r["sk"]).startswith(prefix))
