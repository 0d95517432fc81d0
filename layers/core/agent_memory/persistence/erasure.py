"""Deleting sessions and agents, and erasing one person: which rows go, in batches.

Every deletion here spans more rows than one transaction, so it is resumable: the object's
head row is first marked (`type` becomes `session-deleting` / `agent-deleting`, which every
read treats as absent, and the session's `revision` moves so a concurrent write loses its
condition), then its rows go in transactions of at most 100 deletes, the head row LAST. A
deletion cut short leaves the marked head row, and the next call finishes the work; a
deletion that already finished finds nothing.

Rows of a session: its partition (`SESSION#<id>`: items, entries, head), its learning
executions and saved calls (`LEARN#session#<id>`), the agent learning runs that read it
(`LEARN#agent#<agentId>` rows with its `sessionId`, and their saved calls), agent learning's
read position in it (`AGENT#<agentId>/AGENTPOS#<id>`) and its row in the agent's list.
Agent memory learned from it stays (`AGENT#<agentId>/MEM#...`), until forgotten.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from agent_memory.domain.agents import Agent
from agent_memory.domain.erasure import Erased
from agent_memory.domain.sessions import Session
from agent_memory.persistence import keys
from agent_memory.persistence.agents import agent_pk, org_agents_pk
from agent_memory.persistence.bots import org_bots_pk
from agent_memory.persistence.executions import CALL_PREFIX, EXEC_PREFIX, partition
from agent_memory.persistence.sessions import (
    agent_sessions_pk,
    session_of,
    session_pk,
)
from agent_memory.persistence.threads import MESSAGE_PREFIX, resource_pk, thread_pk
from agent_memory.ports import Action, Delete, Equals, KeyRange, Present, Record, Store, Update

SESSION_DELETING = "session-deleting"
AGENT_DELETING = "agent-deleting"
AGENT_POSITION = "AGENTPOS#"
BATCH = keys.MAX_ACTIONS


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
        agent = Agent(
            id=agent_id,
            org_id=str(row["orgId"]),
            name=str(row["name"]),
            owner=str(row["owner"]),
            members=tuple(row.get("members") or ()),
        )
        return agent, row["type"] == AGENT_DELETING

    def org_agent_ids(self, org_id: str) -> Iterator[str]:
        """Every agent id in the organization's list (deleted ones leave it)."""
        yield from (str(r["sk"]) for r in self._rows(org_agents_pk(org_id)))

    def session_ids(self, agent_id: str, owner: str | None = None) -> list[str]:
        """The agent's sessions (of `owner` only, when given), from the agent's list."""
        return [
            str(r["sk"])
            for r in self._rows(agent_sessions_pk(agent_id))
            if owner is None or r.get("owner") == owner
        ]

    # -- marking ---------------------------------------------------------------------------

    def mark_session(self, session_id: str) -> None:
        """Every read now treats the session as absent; its revision moves, so a Turn or
        command racing this one fails its condition and re-reads (and finds nothing)."""
        self._store.write(
            [
                Update(
                    session_pk(session_id),
                    keys.HEAD,
                    set={"type": SESSION_DELETING},
                    add={"revision": 1},
                    condition=Present(),
                )
            ]
        )

    def mark_agent(self, agent_id: str) -> None:
        self._store.write(
            [
                Update(
                    agent_pk(agent_id),
                    keys.HEAD,
                    set={"type": AGENT_DELETING},
                    condition=Present(),
                )
            ]
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
        self._delete_agent_runs(session)
        # The list row goes with the head row: a session is listed until it is gone.
        self._delete(
            [
                Delete(agent_pk(session.agent_id), f"{AGENT_POSITION}{session.id}"),
                Delete(agent_sessions_pk(session.agent_id), session.id),
                Delete(pk, keys.HEAD, Equals("type", SESSION_DELETING)),
            ]
        )
        removed.sessions = 1
        return removed

    def delete_agent(self, agent: Agent) -> None:
        """The marked agent's own rows (memory, log, versions, executions, its list row),
        its head row last. Its sessions are deleted before, one by one."""
        self._delete_where(agent_pk(agent.id), lambda r: r["sk"] != keys.HEAD)
        self._delete_where(partition("agent", agent.id))
        self._delete_where(agent_sessions_pk(agent.id))
        self._delete(
            [
                Delete(org_agents_pk(agent.org_id), agent.id),
                Delete(agent_pk(agent.id), keys.HEAD, Equals("type", AGENT_DELETING)),
            ]
        )

    def org_bot_ids(self, org_id: str) -> Iterator[str]:
        """Every bot the organization uses (its own, and those linked to it)."""
        yield from (str(r["sk"]) for r in self._rows(org_bots_pk(org_id)))

    def delete_threads(
        self, user_id: str, forget_vectors: Callable[[str, int], None] | None = None
    ) -> Erased:
        """The person's threads (messages, positions, thread-scope working memory), their
        list rows and their resource-scope working memory. A person belongs to one
        organization, so everything under their resource is of that organization."""
        removed = Erased()
        resource = resource_pk(user_id)
        thread_ids = sorted({str(r["threadId"]) for r in self._rows(resource) if "threadId" in r})
        for thread_id in thread_ids:
            pk = thread_pk(thread_id)
            head = self._store.get(pk, keys.HEAD)
            rows = [r for r in self._rows(pk) if r["sk"] != keys.HEAD]
            removed.messages += sum(1 for r in rows if str(r["sk"]).startswith(MESSAGE_PREFIX))
            removed.working_memory += sum(1 for r in rows if _is_entry(r))
            self._delete_rows(pk, rows)
            if forget_vectors is not None and head is not None:
                # Before the head row goes: a failure here leaves the thread to erase again.
                forget_vectors(thread_id, int(head.get("seq", 0)))
            self._delete([Delete(pk, keys.HEAD)])
            removed.threads += 1 if head is not None else 0
        rest = list(self._rows(resource))
        removed.working_memory += sum(1 for r in rest if _is_entry(r))
        self._delete_rows(resource, rest)
        return removed

    def _delete_agent_runs(self, session: Session) -> None:
        """Agent learning's executions that read this session, and their saved calls."""
        pk = partition("agent", session.agent_id)
        names = {
            str(r["name"])
            for r in self._rows(pk, KeyRange(prefix=EXEC_PREFIX))
            if r.get("sessionId") == session.id
        }
        if not names:
            return

        def of_session(row: Record) -> bool:
            sk = str(row["sk"])
            if sk.startswith(EXEC_PREFIX):
                return str(row.get("name")) in names
            if sk.startswith(CALL_PREFIX):
                return sk[len(CALL_PREFIX) :].split("#", 1)[0] in names
            return False

        self._delete_where(pk, of_session)

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
