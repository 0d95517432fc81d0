"""Agent memory, for its owner and members only; a command is ONE transaction."""

from __future__ import annotations

from dataclasses import asdict

from agent_memory.domain.access import Action, authorized
from agent_memory.domain.agent_memory import (
    AgentCommand,
    LogChange,
    check_agent_command,
    check_version,
    forgotten,
    promotable,
    promoted,
    promoted_name,
    remembered,
    text_parts,
)
from agent_memory.domain.agents import AGENTS_BELONG_TO_A_PERSON, Agent, new_agent
from agent_memory.domain.bounds import (
    DEFAULT_LOG_LIMIT,
    carried_size,
    check_remember,
    within_budget,
)
from agent_memory.domain.entries import Entry, EntryMeta, KeyedMemory
from agent_memory.domain.errors import NotFound, SessionConflict, VersionConflict, WriteConflict
from agent_memory.domain.identity import Principal, person_of
from agent_memory.domain.memory_text import MemoryText, first_page
from agent_memory.domain.runs import RunView
from agent_memory.domain.session_memory import Remember
from agent_memory.persistence.agent_memory import AgentMemory, AgentMemoryRepository
from agent_memory.persistence.agents import AgentRepository
from agent_memory.persistence.events import event_action
from agent_memory.persistence.sessions import SessionRepository
from agent_memory.ports import Action as WriteAction
from agent_memory.ports import Clock, Ids
from agent_memory.service.learning_pools import PoolRef, Workflow
from agent_memory.service.memory_texts import newest_text
from agent_memory.service.sessions import learning_runs


class AgentMemoryService:
    def __init__(
        self,
        repo: AgentMemoryRepository,
        agents: AgentRepository,
        sessions: SessionRepository,
        clock: Clock,
        ids: Ids,
        *,
        max_text_length: int,
        learning: Workflow | None = None,
    ) -> None:
        self._repo = repo
        self._agents = agents
        self._sessions = sessions
        self._clock = clock
        self._ids = ids
        self._max_text_length = max_text_length
        self.learning = learning

    def _memory(self, principal: Principal, agent_id: str, action: Action) -> AgentMemory:
        found = self._repo.read(agent_id)
        if found is None:
            raise NotFound("agent not found")
        authorized(principal, found.agent, action, what="agent")
        return found

    def read(self, principal: Principal, agent_id: str) -> KeyedMemory:
        found = self._memory(principal, agent_id, "read")
        agent = found.agent
        entries = [Entry(s.meta, self._repo.open(agent, s)) for s in found.entries]
        return KeyedMemory(entries, found.version)

    def command(
        self, principal: Principal, agent_id: str, expected: int, command: AgentCommand
    ) -> KeyedMemory:
        """409 VersionConflict on a stale version or a Forget of a key not held."""
        check_agent_command(command)
        found = self._memory(principal, agent_id, "change")
        agent = found.agent
        check_version(expected, found.version)
        version, now = found.version + 1, self._clock.now_ms()
        stored = {entry.meta.name: entry for entry in found.entries}
        contents = {key: self._repo.open(agent, entry) for key, entry in stored.items()}
        metas: dict[str, EntryMeta] = {key: entry.meta for key, entry in stored.items()}
        previous = metas.get(command.key)
        change: list[WriteAction]
        if isinstance(command, Remember):
            check_remember(metas.values(), previous, len(command.content))
            meta = remembered(command, now, version, previous)
            change = self._repo.entry_put(agent, meta, command.content, previous)
            contents[command.key] = command.content
        else:
            if previous is None:
                raise VersionConflict(f"the agent memory has no entry with key {command.key!r}")
            meta = forgotten(previous, now, version)
            change = self._repo.entry_retract(agent, previous, meta)
        metas[command.key] = meta
        log = LogChange(version, now, "person", (command.key,), principal.user_id, principal.key_id)
        try:
            self._repo.write(
                [
                    self._repo.head_change(agent, found.version, version, now),
                    *change,
                    self._repo.log_put(agent, log),
                    event_action(agent.org_id, "memory.changed", {"agentId": agent.id}, now),
                ]
            )
        except WriteConflict as error:
            raise VersionConflict("the agent memory changed; read it and retry") from error
        return KeyedMemory([Entry(m, contents[k]) for k, m in metas.items()], version)

    def log(
        self,
        principal: Principal,
        agent_id: str,
        *,
        limit: int = DEFAULT_LOG_LIMIT,
        before: int | None = None,
    ) -> list[LogChange]:
        """Newest first, as many as fit one answer; `before` the last version shown pages on."""
        agent = authorized(principal, self._agents.get(agent_id), "read", what="agent")
        changes = self._repo.log(agent.id, limit=limit, before=before)
        return within_budget(changes, lambda change: carried_size(asdict(change)))[0]

    def text(self, principal: Principal, agent_id: str) -> MemoryText:
        """Decrypts only the entries it shows."""
        limit = self._max_text_length
        found, newest = self._repo.newest(agent_id, first_page(limit))
        agent = authorized(principal, found, "read", what="agent")
        header, always = text_parts(shared=bool(agent.members))
        return newest_text(
            newest,
            lambda entry: self._repo.open(agent, entry),
            limit,
            header=header,
            always=always,
        )

    def executions(self, principal: Principal, agent_id: str) -> list[RunView]:
        agent = authorized(principal, self._agents.get(agent_id), "read", what="agent")
        return learning_runs(self.learning, PoolRef("agent", agent.org_id, agent.id))

    def promote(self, principal: Principal, session_id: str, name: str | None = None) -> Agent:
        """A new Agent whose memory is a subagent Session's lasting, active entries."""
        session, stored = self._sessions.memory(session_id) or (None, [])
        session = authorized(principal, session, "change", what="session")
        owner, _org = person_of(principal, AGENTS_BELONG_TO_A_PERSON)
        if session.kind != "subagent":
            raise SessionConflict("only a subagent session can be promoted")
        source = self._agents.get(session.agent_id) if name is None else None
        agent = new_agent(
            self._ids.new("ag_"),
            session.org_id,
            owner,
            promoted_name(name, source.name if source else None),
            (),
        )
        by_id = {s.meta.id: s for s in stored}
        chosen = promotable(s.meta for s in stored)
        entries = [
            (promoted(meta, session.id), self._sessions.open_entry(session, by_id[meta.id]))
            for meta in chosen
        ]
        now = self._clock.now_ms()
        change = LogChange(1, now, "promotion", tuple(meta.name for meta in chosen))
        self._repo.create_promoted(self._agents, agent, entries, change, now)
        return agent
