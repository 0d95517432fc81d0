"""Deleting sessions, agents, threads and chats, and erasing one person: which rows go, in
batches.

Every deletion here spans more rows than one transaction, so it is resumable: the object's
head row is first marked (`type` becomes `session-deleting` / `agent-deleting` /
`thread-deleting` / `chat-deleting`, which every read treats as absent, and the counter a
concurrent write is conditioned on moves, so that write fails, re-reads and finds nothing),
then its rows go in transactions of at most 100 deletes, the head row LAST with the index
rows that find it. A deletion cut short leaves the marked head row where it is listed, and
the next call finishes the work; a deletion that already finished finds nothing.

- A session: its partition (`SESSION#<id>`: items, entries, head), its learning executions
  and saved calls (`LEARN#session#<id>`), the agent learning runs that read it
  (`LEARN#agent#<agentId>` rows naming it (`sessionId`), and their saved calls), agent
  learning's read position in it (`AGENT#<agentId>/LEARNPOS#<id>`) and its row in the
  agent's list. Agent memory learned from it stays (`AGENT#<agentId>/MEM#...`).
- A thread: its partition (`THREAD#<id>`: messages, observations, positions, thread-scope
  working memory), its background executions (`LEARN#<kind>#<id>` of each thread kind),
  its rows in the person's lists and the agent's (`AGENT#<agentId>/THREAD#<id>`), the
  person's resource-scope working memory of its agent, and (through the caller) its
  vectors.
- The person's part of another's group chat: their items, and the enrichments,
  confessions and memory Bot calls of their Turns (`CHAT#<id>`), then the row that found it
  (`RESOURCE#<userId>/SPOKE#<id>`).
- A chat: its partition (`CHAT#<id>`: items, turns, confessions, enrichments), its bot
  learning runs (`LEARN#bot#<pool>` rows naming it (`chatId`), and their saved calls), its
  row in the owner's partition (`RESOURCE#<owner>/CHAT#<id>`).
- An agent_memory about a person: its base row and copies with its event, whole within
  one transaction (several memories to a transaction), its vector first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence

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
)
from agent_memory.persistence.events import event_action
from agent_memory.persistence.executions import (
    CALL_PREFIX,
    EVIDENCE_PREFIX,
    EXEC_PREFIX,
    partition,
)
from agent_memory.persistence.keys import (
    CHUNK_PREFIX,
    MESSAGE_PREFIX,
    OWNED_CHAT_PREFIX,
    SPOKEN_CHAT_PREFIX,
    THREAD_INDEX_PREFIX,
    THREAD_LIST_PREFIX,
    TURN_PREFIX,
    resource_pk,
    thread_pk,
)
from agent_memory.persistence.memory_bot import CONFESSION_PREFIX, ENRICHMENT_PREFIX
from agent_memory.persistence.memory_objects import LAYOUT, list_partition, pool_of
from agent_memory.persistence.pools import PoolRepository
from agent_memory.persistence.positions import position_sk
from agent_memory.persistence.recall_pending import pending_pk
from agent_memory.persistence.sessions import (
    agent_sessions_pk,
    session_of,
    session_pk,
)
from agent_memory.persistence.threads import (
    agent_thread_sk,
    all_sk,
    index_sk,
)
from agent_memory.persistence.working_memory import WORKING_MEMORY_KEY
from agent_memory.ports import Action, Delete, Equals, KeyRange, Present, Record, Store, Update

SESSION_DELETING = "session-deleting"
AGENT_DELETING = "agent-deleting"
THREAD_DELETING = "thread-deleting"
CHAT_DELETING = "chat-deleting"
BATCH = keys.MAX_ACTIONS

# Called with a thread id and its message count before the thread's head row goes.
ForgetThreadVectors = Callable[[str, int], None]
# Called with agent_memory ids before their rows go.
ForgetMemoryVectors = Callable[[Sequence[str]], None]


class ErasureRepository:
    def __init__(self, store: Store) -> None:
        self._store = store

    # -- finding ---------------------------------------------------------------------------

    def session(self, session_id: str) -> tuple[Session, bool] | None:
        """The session (also one whose deletion began) and whether its deletion began."""
        row = self._store.get(session_pk(session_id), keys.HEAD)
        if row is None or row.get("type") not in ("session", SESSION_DELETING):
            return None
        return session_of(row | {"type": "session"}), row["type"] == SESSION_DELETING

    def agent(self, agent_id: str) -> tuple[Agent, bool] | None:
        """The agent (also one whose deletion began) and whether its deletion began."""
        row = self._store.get(agent_pk(agent_id), keys.HEAD)
        if row is None or row.get("type") not in ("agent", AGENT_DELETING):
            return None
        agent = agent_of(agent_id, row | {"type": "agent"})
        return (agent, row["type"] == AGENT_DELETING) if agent is not None else None

    def chat(self, chat_id: str) -> tuple[Chat, bool] | None:
        """The chat (also one whose deletion began) and whether its deletion began."""
        row = self._store.get(chat_pk(chat_id), keys.HEAD)
        if row is None or row.get("type") not in ("chat", CHAT_DELETING):
            return None
        return chat_of(row | {"type": "chat"}), row["type"] == CHAT_DELETING

    def org_agents(self, org_id: str) -> list[tuple[str, str]]:
        """(id, owner) of every agent in the organization's list (deleted ones leave it)."""
        return [(str(r["sk"]), str(r.get("owner", ""))) for r in self._rows(org_agents_pk(org_id))]

    def session_ids(self, agent_id: str, owner: str | None = None) -> list[str]:
        """The agent's sessions (of `owner` only, when given), from the agent's list."""
        return [
            str(r["sk"])
            for r in self._rows(agent_sessions_pk(agent_id))
            if owner is None or r.get("owner") == owner
        ]

    def agent_thread_ids(self, agent_id: str) -> list[str]:
        """Every thread of the agent (everyone's), from the agent's partition."""
        rows = self._rows(agent_pk(agent_id), KeyRange(prefix=THREAD_INDEX_PREFIX))
        return [str(r["sk"]).removeprefix(THREAD_INDEX_PREFIX) for r in rows]

    def user_thread_ids(self, user_id: str) -> list[str]:
        """Every thread of the person, from their list across agents."""
        rows = self._rows(resource_pk(user_id), KeyRange(prefix=THREAD_LIST_PREFIX))
        return sorted({str(r["threadId"]) for r in rows if "threadId" in r})

    def owned_chat_ids(self, user_id: str) -> list[str]:
        """Every chat the person owns, from their partition."""
        rows = self._rows(resource_pk(user_id), KeyRange(prefix=OWNED_CHAT_PREFIX))
        return [str(r["sk"]).removeprefix(OWNED_CHAT_PREFIX) for r in rows]

    def spoken_chat_ids(self, user_id: str) -> list[str]:
        """Every group chat of another owner where the person started a Turn."""
        rows = self._rows(resource_pk(user_id), KeyRange(prefix=SPOKEN_CHAT_PREFIX))
        return [str(r["sk"]).removeprefix(SPOKEN_CHAT_PREFIX) for r in rows]

    def org_bot_ids(self, org_id: str) -> Iterator[str]:
        """Every bot the organization uses (its own, and those linked to it)."""
        yield from (str(r["sk"]) for r in self._rows(org_bots_pk(org_id)))

    # -- marking ---------------------------------------------------------------------------

    def mark_session(self, session_id: str) -> None:
        """Every read now treats the session as absent; its revision moves, so a Turn or
        command racing this one fails its condition and re-reads (and finds nothing)."""
        self._mark(session_pk(session_id), SESSION_DELETING, add={"revision": 1})

    def mark_agent(self, agent_id: str) -> None:
        self._mark(agent_pk(agent_id), AGENT_DELETING)

    def mark_chat(self, chat_id: str) -> None:
        """Reads treat the chat as absent; its item count moves (one id is never given),
        so items racing this one fail their check of it and re-read (persistence/bots.py:
        the count is the fence item writers check, though they never write it)."""
        self._mark(chat_pk(chat_id), CHAT_DELETING, add={"itemCount": 1})

    def _mark(self, pk: str, marked: str, add: dict[str, int] | None = None) -> None:
        self._store.write(
            [Update(pk, keys.HEAD, set={"type": marked}, add=add or {}, condition=Present())]
        )

    # -- deleting --------------------------------------------------------------------------

    def delete_session(self, session: Session) -> Erased:
        """Every row of a marked session, its head row last; what was removed."""
        removed = Erased()
        pk = session_pk(session.id)
        removed.items = self._delete_where(
            pk, lambda r: r["sk"] != keys.HEAD, count=lambda r: r.get("type") == "item"
        )
        self._delete_where(partition("session", session.id))
        self._delete_runs(partition("agent", session.agent_id), {"sessionId": session.id})
        # The list row goes with the head row: a session is listed until it is gone.
        self._delete(
            [
                Delete(agent_pk(session.agent_id), position_sk(session.id)),
                Delete(agent_sessions_pk(session.agent_id), session.id),
                Delete(pk, keys.HEAD, Equals("type", SESSION_DELETING)),
            ]
        )
        removed.sessions = 1
        return removed

    def delete_agent(self, agent: Agent) -> None:
        """The marked agent's own rows (memory, log, versions, executions, its lists), its
        head row last. Its sessions and threads are deleted before, one by one."""
        self._delete_where(agent_pk(agent.id), lambda r: r["sk"] != keys.HEAD)
        self._delete_where(partition("agent", agent.id))
        self._delete_where(agent_sessions_pk(agent.id))
        self._delete(
            [
                Delete(org_agents_pk(agent.org_id), agent.id),
                Delete(agent_pk(agent.id), keys.HEAD, Equals("type", AGENT_DELETING)),
            ]
        )

    def delete_thread(
        self,
        thread_id: str,
        learning_kinds: Sequence[str],
        forget_vectors: ForgetThreadVectors | None = None,
        embedding_kinds: Sequence[str] | None = None,
        now_ms: int = 0,
    ) -> Erased:
        """Every row of a thread (marked first), its background executions, its list rows
        and its person's resource-scope working memory of its agent; the head row last.
        Its vectors are forgotten before any row goes (so a failure there leaves all that
        finds them); with `embedding_kinds` (the background kinds whose runs may put
        message vectors), only when one of them ever ran on the thread (its read position
        or an execution of it). The `thread.deleted` event at `now_ms` commits with the
        head row's delete."""
        removed = Erased()
        pk = thread_pk(thread_id)
        head = self._store.get(pk, keys.HEAD)
        if head is None or head.get("type") not in ("thread", THREAD_DELETING):
            return removed
        if head["type"] == "thread":
            # `seq` moves: a save racing this one fails its condition and re-reads.
            self._mark(pk, THREAD_DELETING, add={"seq": 1})
            head = head | {"seq": int(head.get("seq", 0)) + 1}
        rows = [r for r in self._rows(pk) if r["sk"] != keys.HEAD]
        if forget_vectors is not None and self._embedded(thread_id, rows, embedding_kinds):
            forget_vectors(thread_id, int(head.get("seq", 0)))
        removed.messages = sum(1 for r in rows if str(r["sk"]).startswith(MESSAGE_PREFIX))
        removed.observations = sum(1 for r in rows if str(r["sk"]).startswith(CHUNK_PREFIX))
        removed.working_memory = sum(1 for r in rows if _is_entry(r))
        self._delete_rows(pk, rows)
        for kind in learning_kinds:
            self._delete_where(partition(kind, thread_id))
        removed.working_memory += self._delete_thread_head(thread_id, head, now_ms)
        removed.threads = 1
        return removed

    def _delete_thread_head(self, thread_id: str, head: Record, now_ms: int) -> int:
        """The thread's list rows, its person's working memory of its agent (how many went)
        and its head row, with its `thread.deleted` event."""
        thread = Thread(
            thread_id,
            str(head["orgId"]),
            str(head["agentId"]),
            str(head["resourceId"]),
            None,
            int(head["createdAt"]),
        )
        resource = resource_pk(thread.resource_id)
        notes = keys.entry_sk(
            keyed_id(f"wm:{thread.agent_id}:{thread.resource_id}", WORKING_MEMORY_KEY)
        )
        had_notes = self._store.get(resource, notes) is not None
        self._delete(
            [
                Delete(resource, index_sk(thread)),
                Delete(resource, all_sk(thread)),
                Delete(resource, notes),
                Delete(agent_pk(thread.agent_id), agent_thread_sk(thread_id)),
                Delete(thread_pk(thread_id), keys.HEAD, Equals("type", THREAD_DELETING)),
                # Semantic recall's pending row (its idle flush has nothing left to find).
                Delete(pending_pk(thread_id), thread_id),
                # A client following the feed drops the thread from its list.
                event_action(thread.org_id, "thread.deleted", _thread_ids(thread), now_ms),
            ]
        )
        return int(had_notes)

    def _embedded(
        self, thread_id: str, rows: Sequence[Record], kinds: Sequence[str] | None
    ) -> bool:
        """Whether any of `kinds` ever ran on the thread (all may have, when None)."""
        if kinds is None:
            return True
        return any(r["sk"] == position_sk(kind) for r in rows for kind in kinds) or any(
            self._store.query(partition(kind, thread_id), limit=1).records for kind in kinds
        )

    def delete_chat(self, chat: Chat, learning: tuple[str, str]) -> Erased:
        """Every row of a marked chat (items, turns, confessions, enrichments), the runs of
        its bot's `learning` pool (kind, pool id) that read it, its owner's row; the head
        row last."""
        removed = Erased()
        pk = chat_pk(chat.id)
        removed.chat_items = self._delete_where(
            pk, lambda r: r["sk"] != keys.HEAD, count=lambda r: r.get("type") == "chat-item"
        )
        self._delete_runs(partition(*learning), {"chatId": chat.id})
        owner_pk, owner_sk = owned_chat_key(chat.owner, chat.id)
        self._delete(
            [Delete(owner_pk, owner_sk), Delete(pk, keys.HEAD, Equals("type", CHAT_DELETING))]
        )
        removed.chats = 1
        return removed

    def delete_contributions(self, chat_id: str, user_id: str) -> Erased:
        """The person's items in another's group chat, with the enrichments (their words
        as they wrote them), confessions and memory Bot call log of their Turns; the chat
        and everyone else's words stay. The row that found the chat goes last. The chat
        row's count is first raised to their highest item (persistence/bots.py): the chat
        lives on, and the ids of words that went are never given again."""
        pk = chat_pk(chat_id)
        rows = list(self._rows(pk))
        turns = {
            str(r["sk"]).removeprefix(TURN_PREFIX)
            for r in rows
            if r.get("type") == "turn" and r.get("actor") == user_id
        }

        def theirs(row: Record) -> bool:
            sk = str(row["sk"])
            if row.get("type") == "chat-item":
                return row.get("actor") == user_id
            if sk.startswith((ENRICHMENT_PREFIX, CONFESSION_PREFIX)):
                return sk.rsplit("#", 1)[-1] in turns
            # The memory Bot's call log of their Turns (its requests hold their words).
            return row.get("type") == "memory-bot-call" and row.get("turnId") in turns

        chosen = [r for r in rows if theirs(r)]
        seqs = [int(r["seq"]) for r in chosen if r.get("type") == "chat-item"]
        if seqs:
            raise_fence(self._store, chat_id, max(seqs))
        self._delete_rows(pk, chosen)
        self._delete([Delete(*spoken_chat_key(user_id, chat_id))])
        return Erased(chat_items=sum(1 for r in chosen if r.get("type") == "chat-item"))

    def forget_owned_chat(self, user_id: str, chat_id: str) -> None:
        """The owner's row of a chat that is gone."""
        self._delete([Delete(*owned_chat_key(user_id, chat_id))])

    def delete_resource_rest(self, user_id: str) -> Erased:
        """What is left in the person's partition once their threads and chats went: list
        rows of threads already gone, and working memory of agents whose threads are gone
        (a person belongs to one organization, so all of it is of that organization)."""
        resource = resource_pk(user_id)
        chats = (OWNED_CHAT_PREFIX, SPOKEN_CHAT_PREFIX)
        rest = [r for r in self._rows(resource) if not str(r["sk"]).startswith(chats)]
        self._delete_rows(resource, rest)
        return Erased(working_memory=sum(1 for r in rest if _is_entry(r)))

    def delete_memories_about(
        self,
        org_id: str,
        user_id: str,
        now_ms: int,
        forget_vectors: ForgetMemoryVectors | None = None,
    ) -> Erased:
        """The organization's agent_memories whose entity is the person, page by page:
        their vectors, then their rows and events, each memory whole within one
        transaction (nothing is opened: the entity's type and id are plaintext tags)."""
        pool = pool_of(org_id)
        found = [
            stored.meta
            for row in self._rows(list_partition(org_id, None, user_id))
            if (stored := PoolRepository.parse(row)) is not None
            and about_person(entity_of(stored.meta), user_id)
        ]
        for start in range(0, len(found), BATCH):
            page = found[start : start + BATCH]
            if forget_vectors is not None:
                forget_vectors([meta.id for meta in page])
            # Whole memories per transaction (at most 7 items each), up to 100 items.
            batch: list[Action] = []
            for meta in page:
                changed = event_action(org_id, "memory.changed", {"memoryId": meta.id}, now_ms)
                actions: list[Action] = [*(Delete(p, s) for p, s in LAYOUT.rows(pool, meta))]
                actions.append(changed)
                if len(batch) + len(actions) > BATCH:
                    self._delete(batch)
                    batch = []
                batch += actions
            self._delete(batch)
        return Erased(agent_memories=len(found))

    # -- rows ------------------------------------------------------------------------------

    def _delete_runs(self, pk: str, source: Mapping[str, str]) -> None:
        """A pool's executions that read the conversation `source` names (`{"sessionId":
        id}`, `{"chatId": id}`: their rows' field), their evidence rows (one may be left by a
        LoadEvidence that never wrote its execution row: it names the source too) and their
        saved calls."""
        [(field, source_id)] = source.items()

        def names_it(row: Record) -> bool:
            return row.get(field) == source_id

        names = {
            str(r["name"]) for r in self._rows(pk, KeyRange(prefix=EXEC_PREFIX)) if names_it(r)
        }
        if not names and not any(map(names_it, self._rows(pk, KeyRange(prefix=EVIDENCE_PREFIX)))):
            return

        def of_source(row: Record) -> bool:
            sk = str(row["sk"])
            if sk.startswith(EXEC_PREFIX):
                return str(row.get("name")) in names
            if sk.startswith(EVIDENCE_PREFIX):
                return str(row.get("name")) in names or names_it(row)
            if sk.startswith(CALL_PREFIX):
                return sk[len(CALL_PREFIX) :].split("#", 1)[0] in names
            return False

        self._delete_where(pk, of_source)

    def _rows(self, pk: str, key_range: KeyRange | None = None) -> Iterator[Record]:
        after: str | None = None
        while True:
            page = self._store.query(pk, key_range, limit=BATCH, after=after)
            yield from page.records
            if page.next is None:
                return
            after = page.next

    def _delete_where(
        self,
        pk: str,
        keep: Callable[[Record], bool] = lambda _row: True,
        *,
        count: Callable[[Record], bool] = lambda _row: True,
    ) -> int:
        """Delete the partition's rows that `keep` selects; how many `count` counts."""
        chosen = [r for r in self._rows(pk) if keep(r)]
        self._delete_rows(pk, chosen)
        return sum(1 for r in chosen if count(r))

    def _delete_rows(self, pk: str, rows: list[Record]) -> None:
        """100 deletes per transaction: each one that lands stays done, so a call cut
        short resumes with what is left."""
        for start in range(0, len(rows), BATCH):
            self._delete([Delete(pk, str(r["sk"])) for r in rows[start : start + BATCH]])

    def _delete(self, actions: list[Action]) -> None:
        if actions:
            self._store.write(actions)


def _is_entry(row: Record) -> bool:
    """An entry's base row (working memory is one entry, without copies)."""
    return str(row["sk"]).startswith(keys.ENTRY_PREFIX)


def _thread_ids(thread: Thread) -> dict[str, str]:
    return thread_object(thread.id, thread.agent_id, thread.resource_id)
