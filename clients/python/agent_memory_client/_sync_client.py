"""Client: every route of the agent-memory API, typed (API.md).

GENERATED from `_async_client.py` by `python clients/python/unasync.py`: do not edit.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from json import loads
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel

from agent_memory_client import models as m
from agent_memory_client import routes as r
from agent_memory_client._base import (
    RETRY_STATUSES,
    UNSET,
    USER_AGENT,
    encode,
    fill_path,
    given,
    query,
    raise_for_answer,
    retry_delay,
)
from agent_memory_client.errors import SessionConflict, VersionConflict

A = TypeVar("A", bound=BaseModel)
T = TypeVar("T")


class Client:
    """The agent-memory API over HTTP, with one bearer token.

    Answers 429 and 503 are retried up to `max_retries` times, waiting what `Retry-After`
    says (at most `max_wait` seconds) or an exponential backoff from `backoff` seconds.
    Error answers raise `agent_memory_client.errors.AgentMemoryError` subclasses carrying
    the API's `code` (`_tag`), `message` and `path`. `transport` is an httpx transport (for
    example `httpx.ASGITransport(app)` to call an app in process).

    A platform's backend passes its organization's service key as `token` and names the
    person each call is for: `act_as="ana"` here, or `client.acting_for("ana")`, a client
    that shares this one's connections and sends `Act-As: ana`.
    """

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: float = 30.0,
        max_retries: int = 3,
        backoff: float = 0.5,
        max_wait: float = 30.0,
        transport: httpx.BaseTransport | None = None,
        act_as: str | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.act_as = act_as
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_wait = max_wait
        self._http = httpx.Client(
            base_url=self.base_url,
            headers={"Authorization": f"Bearer {token}", "User-Agent": USER_AGENT},
            timeout=timeout,
            transport=transport,
        )

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def acting_for(self, user_id: str) -> Client:
        """This client for one person of the service key's organization (`Act-As`); closing
        either closes both."""
        person = object.__new__(type(self))
        person.__dict__.update(self.__dict__, act_as=user_id)
        return person

    # ------------------------------------------------------------------ plumbing

    def _sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: dict[str, Any] | None = None,
    ) -> httpx.Response:
        """One call with the retry rule; raises the typed error of an error answer."""
        attempt = 0
        while True:
            headers = {"Act-As": self.act_as} if self.act_as is not None else None
            response = self._http.request(method, path, json=json, params=params, headers=headers)
            if response.status_code not in RETRY_STATUSES or attempt >= self.max_retries:
                break
            self._sleep(retry_delay(response, attempt, self.backoff, self.max_wait))
            attempt += 1
        raise_for_answer(response)
        return response

    def _call(
        self,
        route: r.Route[A],
        body: BaseModel | None = None,
        params: dict[str, Any] | None = None,
        **path: str | int,
    ) -> A:
        json = encode(body)
        response = self.request(route.method, fill_path(route.path, path), json=json, params=params)
        return route.answer.model_validate(response.json())

    def _call_empty(self, route: r.EmptyRoute, **path: str | int) -> None:
        self.request(route.method, fill_path(route.path, path))

    def _pages(
        self, list_page: Callable[[str | None], Any], cursor: Callable[[T], str]
    ) -> Iterator[T]:
        """Every object of a cursor-paged list (`starting_after`, `has_more`)."""
        after: str | None = None
        while True:
            page = list_page(after)
            yield from page.data
            if not page.has_more or not page.data:
                return
            after = cursor(page.data[-1])

    # ------------------------------------------------------------------ health, identity

    def health(self) -> m.Health:
        return self._call(r.HEALTH)

    def me(self) -> m.Caller:
        """Who this client's token is (user, organization, role)."""
        return (self._call(r.ME)).user

    def my_tokens(self) -> list[m.MyToken]:
        """The tokens this client's person holds, oldest first: who issued each and when."""
        return (self._call(r.MY_TOKENS)).tokens

    def add_my_token(self) -> m.IssuedToken:
        """One more token for this client's person, beside the others (shown once)."""
        return self._call(r.ADD_MY_TOKEN, m.IssueToken())

    def revoke_my_token(self, token_prefix: str) -> None:
        """Revoke one of this client's person's own tokens."""
        self._call_empty(r.REVOKE_MY_TOKEN, tokenPrefix=token_prefix)

    def export(self) -> Iterator[dict[str, Any]]:
        """This client's person's export, a line at a time as the service streams it: first
        `{"format": "agent-memory-export", "version", "userId", "organizationId",
        "exportedAt"}`, then each object as its read route answers it with its `type`, last
        `{"type": "end", "lines": n}` (an export cut short has none)."""
        attempt = 0
        while True:
            headers = {"Act-As": self.act_as} if self.act_as is not None else None
            with self._http.stream("GET", r.EXPORT.path, headers=headers) as response:
                retry = response.status_code in RETRY_STATUSES and attempt < self.max_retries
                if not retry:
                    if response.status_code >= 400:
                        response.read()
                        raise_for_answer(response)
                    for line in response.iter_lines():
                        if line:
                            yield loads(line)
                    return
            self._sleep(retry_delay(response, attempt, self.backoff, self.max_wait))
            attempt += 1

    def capabilities(self) -> m.Capabilities:
        """What the deployment can run: model providers, the models this caller may name,
        its embedding and local models (ask before naming a model)."""
        return self._call(r.CAPABILITIES)

    # ------------------------------------------------------------------ administration

    def create_organization(self, name: str, id: str | None = None) -> m.CreatedOrganization:
        body = m.CreateOrganization(name=name, **given(id=id if id else UNSET))
        return self._call(r.CREATE_ORGANIZATION, body)

    def list_organizations(self, *, limit: int = 100, after: str | None = None) -> m.Organizations:
        """A page of every organization in id order: ids, names, creation, people (admin
        token; no content)."""
        return self._call(r.LIST_ORGANIZATIONS, params=query(limit=limit, after=after))

    def delete_organization(self, org_id: str) -> dict[str, int]:
        """The organization and everything in it (admin token): what this call removed, by
        kind. A call cut short is finished by the next; once it is gone, NotFound."""
        return (self._call(r.DELETE_ORGANIZATION, orgId=org_id)).deleted

    def create_user(
        self,
        organization_id: str,
        *,
        id: str | None = None,
        name: str | None = None,
        role: str = "member",
    ) -> m.CreatedUser:
        """A user and their first token (shown once). Admin token."""
        fields = given(id=id if id else UNSET, name=name if name else UNSET)
        body = m.CreateUser.model_validate(
            {"organizationId": organization_id, "role": role, **fields}
        )
        return self._call(r.CREATE_USER, body)

    def issue_token(self, user_id: str, organization_id: str | None = None) -> m.IssuedToken:
        """A new token for `user_id`: a rotation (every token they held stops working). The
        admin token names the organization when the id exists in more than one."""
        body = m.IssueToken.model_validate(given(organization_id=organization_id or UNSET))
        return self._call(r.ISSUE_TOKEN, body, userId=user_id)

    def revoke_token(self, token_prefix: str) -> None:
        self._call_empty(r.REVOKE_TOKEN, tokenPrefix=token_prefix)

    def get_settings(self, org_id: str) -> m.OrganizationSettings:
        return self._call(r.GET_SETTINGS, orgId=org_id)

    def patch_settings(
        self,
        org_id: str,
        *,
        memory: dict[str, bool | None] | None = UNSET,
        agent_memory: bool | None = UNSET,
        helper_model: str | None = UNSET,
        bot_memory: bool | None = UNSET,
        bot_memory_model: str | None = UNSET,
        allowed_models: list[str] | None = UNSET,
        auto_provision_users: bool | None = UNSET,
    ) -> m.OrganizationSettings:
        """A value sets, `None` resets to the default, an argument left out keeps."""
        fields = given(
            memory=memory,
            agent_memory=agent_memory,
            helper_model=helper_model,
            bot_memory=bot_memory,
            bot_memory_model=bot_memory_model,
            allowed_models=allowed_models,
            auto_provision_users=auto_provision_users,
        )
        body = m.SettingsPatch.model_validate(fields)
        return self._call(r.PATCH_SETTINGS, body, orgId=org_id)

    def erase_user(self, org_id: str, user_id: str) -> m.ErasedUser:
        """Erase one person across the organization (an organization admin); a repeated
        call finishes an erasure cut short and counts what it removed itself."""
        return self._call(r.ERASE_USER, orgId=org_id, userId=user_id)

    def list_users(self, org_id: str, *, limit: int = 100, after: str | None = None) -> m.OrgUsers:
        """A page of the organization's people in id order (an org admin or its service key)."""
        params = query(limit=limit, after=after)
        return self._call(r.LIST_USERS, params=params, orgId=org_id)

    def add_user(
        self, org_id: str, id: str | None = None, name: str | None = None, role: str = "member"
    ) -> m.OrgUser:
        """A person without a token, for the organization's service key to act for."""
        fields = given(id=id or UNSET, name=name or UNSET)
        body = m.AddUser.model_validate({"role": role, **fields})
        return (self._call(r.ADD_USER, body, orgId=org_id)).user

    def rename_user(self, org_id: str, user_id: str, name: str) -> m.OrgUser:
        """The person's name (an org admin, the admin token or the organization's key)."""
        body = m.RenameUser(name=name)
        return (self._call(r.RENAME_USER, body, orgId=org_id, userId=user_id)).user

    def delete_user(self, org_id: str, user_id: str) -> m.ErasedUser:
        """The person's erasure, then their record and every token."""
        return self._call(r.DELETE_USER, orgId=org_id, userId=user_id)

    def create_service_key(self, org_id: str, name: str) -> m.CreatedServiceKey:
        """A key for the organization's backend; `key` is shown this once."""
        body = m.CreateServiceKey(name=name)
        return self._call(r.CREATE_SERVICE_KEY, body, orgId=org_id)

    def list_service_keys(self, org_id: str) -> list[m.ServiceKey]:
        return (self._call(r.LIST_SERVICE_KEYS, orgId=org_id)).service_keys

    def revoke_service_key(self, org_id: str, key_id: str) -> None:
        self._call_empty(r.REVOKE_SERVICE_KEY, orgId=org_id, keyId=key_id)

    # ------------------------------------------------------------------ agents, sessions

    def create_agent(self, name: str, members: list[str] | None = None) -> m.Agent:
        body = m.CreateAgent(name=name, members=members or [])
        return (self._call(r.CREATE_AGENT, body)).agent

    def get_agent(self, agent_id: str) -> m.Agent:
        return (self._call(r.GET_AGENT, agentId=agent_id)).agent

    def list_agents(
        self, *, limit: int | None = None, starting_after: str | None = None
    ) -> m.AgentList:
        params = query(limit=limit, starting_after=starting_after)
        return self._call(r.LIST_AGENTS, params=params)

    def iter_agents(self, *, page_size: int = 100) -> Iterator[m.Agent]:
        """Every agent the caller may see, newest first, across pages."""

        def page(after: str | None) -> m.AgentList:
            return self.list_agents(limit=page_size, starting_after=after)

        return self._pages(page, lambda agent: agent.id)

    def delete_agent(self, agent_id: str) -> m.DeletedAgent:
        return self._call(r.DELETE_AGENT, agentId=agent_id)

    def create_session(
        self, agent_id: str, *, model: str | None = UNSET, kind: str = "chat"
    ) -> m.Session:
        """`model` left out: the deployment's default model; `None`: no model."""
        body = m.CreateSession.model_validate(
            {"agentId": agent_id, "kind": kind, **given(model=model)}
        )
        return (self._call(r.CREATE_SESSION, body)).session

    def get_session(self, session_id: str) -> m.Session:
        return (self._call(r.GET_SESSION, sessionId=session_id)).session

    def list_sessions(
        self, agent_id: str, *, limit: int | None = None, starting_after: str | None = None
    ) -> m.SessionList:
        params = query(agentId=agent_id, limit=limit, starting_after=starting_after)
        return self._call(r.LIST_SESSIONS, params=params)

    def iter_sessions(self, agent_id: str, *, page_size: int = 100) -> Iterator[m.Session]:
        def page(after: str | None) -> m.SessionList:
            return self.list_sessions(agent_id, limit=page_size, starting_after=after)

        return self._pages(page, lambda session: session.id)

    def delete_session(self, session_id: str) -> m.DeletedSession:
        return self._call(r.DELETE_SESSION, sessionId=session_id)

    def list_session_items(
        self, session_id: str, *, limit: int | None = None, starting_after: str | None = None
    ) -> m.SessionItemList:
        params = query(limit=limit, starting_after=starting_after)
        return self._call(r.SESSION_ITEMS, params=params, sessionId=session_id)

    def iter_session_items(
        self, session_id: str, *, page_size: int = 100
    ) -> Iterator[m.SessionItem]:
        """The session's history, oldest first, across pages."""

        def page(after: str | None) -> m.SessionItemList:
            return self.list_session_items(session_id, limit=page_size, starting_after=after)

        return self._pages(page, lambda item: item.id)

    def post_turn(
        self,
        session_id: str,
        items: list[m.Item | dict[str, Any]],
        *,
        model: str | None = None,
        expected: str | None = None,
        revision: int | None = None,
    ) -> m.TurnAnswer:
        fields = given(
            model=model or UNSET,
            expected=expected or UNSET,
            revision=UNSET if revision is None else revision,
        )
        body = m.PostTurn.model_validate({"items": items, **fields})
        return self._call(r.POST_TURN, body, sessionId=session_id)

    def fork_session(self, session_id: str) -> m.Session:
        return (self._call(r.FORK_SESSION, m.ForkSession(), sessionId=session_id)).session

    def promote_session(self, session_id: str, name: str | None = None) -> m.Agent:
        body = m.Promote(**given(name=name or UNSET))
        return (self._call(r.PROMOTE_SESSION, body, sessionId=session_id)).agent

    def get_session_memory(self, session_id: str) -> m.SessionMemory:
        return self._call(r.GET_SESSION_MEMORY, sessionId=session_id)

    def session_memory_command(
        self, session_id: str, command: m.SessionCommand, *, expected: str, revision: int
    ) -> m.Session:
        """Apply one command at `expected` head and `revision`; stale: SessionConflict."""
        body = m.MemoryCommand(expected=expected, revision=revision, command=command)
        return (self._call(r.SESSION_MEMORY_COMMAND, body, sessionId=session_id)).session

    def update_session_memory(
        self,
        session_id: str,
        build: Callable[[m.Session, m.SessionMemory], m.SessionCommand | None],
        *,
        attempts: int = 5,
    ) -> m.Session:
        """Read the session and its memory, `build` the command from them, apply it; on
        `SessionConflict` (someone changed the session meanwhile) read and build again, up
        to `attempts` times. `build` returning None applies nothing."""
        for attempt in range(attempts):
            session = self.get_session(session_id)
            command = build(session, self.get_session_memory(session_id))
            if command is None:
                return session
            try:
                return self.session_memory_command(
                    session_id, command, expected=session.head, revision=session.revision
                )
            except SessionConflict:
                if attempt == attempts - 1:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def session_memory_text(self, session_id: str) -> m.MemoryText:
        return self._call(r.SESSION_MEMORY_TEXT, sessionId=session_id)

    def session_learning(self, session_id: str) -> list[dict[str, Any]]:
        return (self._call(r.SESSION_LEARNING, sessionId=session_id)).executions

    def get_agent_memory(self, agent_id: str) -> m.AgentMemory:
        return self._call(r.GET_AGENT_MEMORY, agentId=agent_id)

    def agent_memory_command(
        self, agent_id: str, command: m.AgentCommand, *, expected: int
    ) -> m.AgentMemory:
        """Apply one command at version `expected`; stale: VersionConflict."""
        body = m.AgentMemoryCommand(expected=expected, command=command)
        return self._call(r.AGENT_MEMORY_COMMAND, body, agentId=agent_id)

    def update_agent_memory(
        self,
        agent_id: str,
        build: Callable[[m.AgentMemory], m.AgentCommand | None],
        *,
        attempts: int = 5,
    ) -> m.AgentMemory:
        """Read the agent's memory, `build` the command from it, apply it at that version;
        on `VersionConflict` read and build again, up to `attempts` times."""
        for attempt in range(attempts):
            memory = self.get_agent_memory(agent_id)
            command = build(memory)
            if command is None:
                return memory
            try:
                return self.agent_memory_command(agent_id, command, expected=memory.version)
            except VersionConflict:
                if attempt == attempts - 1:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def agent_memory_log(
        self, agent_id: str, *, limit: int | None = None, before: int | None = None
    ) -> list[m.MemoryChange]:
        """Changes newest first; `before` (a version) pages back."""
        params = query(limit=limit, before=before)
        return (self._call(r.AGENT_MEMORY_LOG, params=params, agentId=agent_id)).changes

    def iter_agent_memory_log(
        self, agent_id: str, *, page_size: int = 100
    ) -> Iterator[m.MemoryChange]:
        """Every change of the agent's memory, newest first, across pages (`before`)."""
        before: int | None = None
        while True:
            page = self.agent_memory_log(agent_id, limit=page_size, before=before)
            yield from page
            if len(page) < page_size or page[-1].version <= 1:
                return
            before = page[-1].version

    def agent_memory_text(self, agent_id: str) -> m.MemoryText:
        return self._call(r.AGENT_MEMORY_TEXT, agentId=agent_id)

    def agent_learning(self, agent_id: str) -> list[dict[str, Any]]:
        return (self._call(r.AGENT_LEARNING, agentId=agent_id)).executions

    # ------------------------------------------------------------------ agent versions

    def get_draft(self, agent_id: str) -> m.Draft:
        return (self._call(r.GET_DRAFT, agentId=agent_id)).draft

    def patch_draft(self, agent_id: str, memory: dict[str, Any] | None) -> m.Draft:
        """Replace the draft's `memory` block (`None` restores the platform defaults)."""
        body = m.PatchDraft(memory=memory)
        return (self._call(r.PATCH_DRAFT, body, agentId=agent_id)).draft

    def publish(self, agent_id: str) -> m.Version:
        return (self._call(r.PUBLISH, m.EmptyBody(), agentId=agent_id)).version

    def versions(self, agent_id: str, *, before: int | None = None) -> m.VersionsAnswer:
        return self._call(r.VERSIONS, params=query(before=before), agentId=agent_id)

    def activate(self, agent_id: str, number: int) -> int:
        return (self._call(r.ACTIVATE, m.EmptyBody(), agentId=agent_id, n=number)).active

    # ------------------------------------------------------------------ agent memories (004)

    def create_agent_memory(
        self,
        content: str,
        category: str = "fact",
        *,
        importance: float | None = None,
        entity: m.EntityIn | dict[str, Any] | None = None,
        metadata: Any = UNSET,
        expires_at: str | None = None,
        namespace: Sequence[str] | None = None,
        key: str | None = None,
    ) -> m.AgentMemoryObject:
        """With `namespace` and `key`: the one memory of that key in that namespace (a
        second one is `Conflict` at `["key"]`)."""
        fields = given(
            importance=UNSET if importance is None else importance,
            entity=entity if entity is not None else UNSET,
            metadata=metadata,
            expires_at=expires_at or UNSET,
            namespace=list(namespace) if namespace is not None else UNSET,
            key=key if key is not None else UNSET,
        )
        body = m.CreateAgentMemory.model_validate(
            {"content": content, "category": category, **fields}
        )
        return self._call(r.CREATE_AGENT_MEMORY, body)

    def get_agent_memory_object(self, memory_id: str) -> m.AgentMemoryObject:
        return self._call(r.GET_AGENT_MEMORY_OBJECT, memoryId=memory_id)

    def update_agent_memory_object(
        self,
        memory_id: str,
        *,
        category: str = UNSET,
        content: str = UNSET,
        importance: float = UNSET,
        entity: m.EntityIn | dict[str, Any] | None = UNSET,
        metadata: Any = UNSET,
        expires_at: str | None = UNSET,
    ) -> m.AgentMemoryObject:
        """Only the arguments given change; `None` clears entity, metadata and expires_at."""
        fields = given(
            category=category,
            content=content,
            importance=importance,
            entity=entity,
            metadata=metadata,
            expires_at=expires_at,
        )
        body = m.UpdateAgentMemory.model_validate(fields)
        return self._call(r.UPDATE_AGENT_MEMORY, body, memoryId=memory_id)

    def delete_agent_memory(self, memory_id: str) -> m.DeletedAgentMemory:
        return self._call(r.DELETE_AGENT_MEMORY, memoryId=memory_id)

    def list_agent_memories(
        self,
        *,
        limit: int | None = None,
        starting_after: str | None = None,
        category: str | None = None,
        entity: str | None = None,
        namespace: Sequence[str] | None = None,
        key: str | None = None,
    ) -> m.AgentMemoryList:
        """Newest first; with `namespace` (a prefix of labels), the namespaced memories under
        it in order of namespace and key; with `key` too, the one of exactly that place."""
        params = query(
            limit=limit,
            starting_after=starting_after,
            category=category,
            entity=entity,
            namespace=list(namespace) if namespace is not None else None,
            key=key,
        )
        return self._call(r.LIST_AGENT_MEMORIES, params=params)

    def iter_agent_memories(
        self, *, category: str | None = None, entity: str | None = None, page_size: int = 100
    ) -> Iterator[m.AgentMemoryObject]:
        """Every unexpired agent memory of the caller, newest first, across pages."""

        def page(after: str | None) -> m.AgentMemoryList:
            return self.list_agent_memories(
                limit=page_size, starting_after=after, category=category, entity=entity
            )

        return self._pages(page, lambda memory: memory.id)

    def recall_agent_memories(
        self,
        *,
        limit: int = 10,
        entity: str | None = None,
        query: str | None = None,
        namespace: Sequence[str] | None = None,
    ) -> m.AgentMemoryList:
        """Unexpired memories, highest importance first (with `query`, closest in meaning
        first, where the deployment has semantic recall); with `namespace`, only those under
        that prefix of labels."""
        labels = list(namespace) if namespace is not None else UNSET
        body = m.RecallAgentMemories.model_validate(
            {
                "limit": limit,
                **given(entity=entity or UNSET, query=query or UNSET, namespace=labels),
            }
        )
        return self._call(r.RECALL_AGENT_MEMORIES, body)

    # ------------------------------------------------------------------ bots (seed 002)

    def create_bot(self, name: str, grants: dict[str, str] | None = None) -> m.Bot:
        body = m.CreateBot(name=name, **given(grants=grants if grants is not None else UNSET))
        return (self._call(r.CREATE_BOT, body)).bot

    def get_bot(self, bot_id: str) -> m.Bot:
        return (self._call(r.GET_BOT, botId=bot_id)).bot

    def list_bots(
        self, *, limit: int | None = None, starting_after: str | None = None
    ) -> m.BotsAnswer:
        """The bots the caller reaches (a grant, a link), newest first (`has_more`: pass the
        last id as `starting_after`)."""
        params = query(limit=limit, starting_after=starting_after)
        return self._call(r.LIST_BOTS, params=params)

    def iter_bots(self, *, page_size: int = 100) -> Iterator[m.Bot]:
        """Every bot the caller reaches, newest first, across pages."""
        after: str | None = None
        while True:
            page = self.list_bots(limit=page_size, starting_after=after)
            yield from page.bots
            if not page.has_more or not page.bots:
                return
            after = page.bots[-1].id

    def list_channels(
        self, *, limit: int | None = None, starting_after: str | None = None
    ) -> m.ChannelsAnswer:
        """The caller's channels (an organization admin: all), newest first."""
        params = query(limit=limit, starting_after=starting_after)
        return self._call(r.LIST_CHANNELS, params=params)

    def iter_channels(self, *, page_size: int = 100) -> Iterator[m.Channel]:
        """Every channel of the caller, newest first, across pages."""
        after: str | None = None
        while True:
            page = self.list_channels(limit=page_size, starting_after=after)
            yield from page.channels
            if not page.has_more or not page.channels:
                return
            after = page.channels[-1].id

    def list_chats(
        self,
        *,
        bot_id: str | None = None,
        limit: int | None = None,
        starting_after: str | None = None,
    ) -> m.ChatsAnswer:
        """The chats the caller owns or started a turn in and still reads (of one bot, when
        given), newest first."""
        params = query(botId=bot_id, limit=limit, starting_after=starting_after)
        return self._call(r.LIST_CHATS, params=params)

    def iter_chats(self, *, bot_id: str | None = None, page_size: int = 100) -> Iterator[m.Chat]:
        """Every chat of the caller (of one bot, when given), newest first, across pages."""
        after: str | None = None
        while True:
            page = self.list_chats(bot_id=bot_id, limit=page_size, starting_after=after)
            yield from page.chats
            if not page.has_more or not page.chats:
                return
            after = page.chats[-1].id

    def link_bot(self, bot_id: str, organization_id: str, grants: dict[str, str | None]) -> m.Link:
        """Link another organization, or change its people's grants: a level sets one, None
        removes it, people not named keep theirs."""
        body = m.CreateLink(organization_id=organization_id, grants=grants)
        return (self._call(r.CREATE_LINK, body, botId=bot_id)).link

    def create_channel(self, name: str, members: list[str] | None = None) -> m.Channel:
        body = m.CreateChannel(name=name, members=members or [])
        return (self._call(r.CREATE_CHANNEL, body)).channel

    def change_channel_members(
        self, channel_id: str, *, add: list[str] | None = None, remove: list[str] | None = None
    ) -> m.Channel:
        body = m.ChangeMembers(add=add or [], remove=remove or [])
        return (self._call(r.CHANGE_MEMBERS, body, channelId=channel_id)).channel

    def create_chat(
        self, bot_id: str, *, channel_id: str | None = None, kind: str = "chat"
    ) -> m.Chat:
        body = m.CreateChat.model_validate(
            {"botId": bot_id, "kind": kind, **given(channelId=channel_id or UNSET)}
        )
        return (self._call(r.CREATE_CHAT, body)).chat

    def chat_items(self, chat_id: str) -> list[m.ChatItem]:
        return (self._call(r.CHAT_ITEMS, chatId=chat_id)).items

    def delete_chat_items(self, chat_id: str) -> None:
        self._call_empty(r.DELETE_CHAT_ITEMS, chatId=chat_id)

    def start_chat_turn(self, chat_id: str, input: str, *, notice: bool = False) -> m.TurnStarted:
        body = m.StartTurn(input=input, notice=notice)
        return self._call(r.START_TURN, body, chatId=chat_id)

    def chat_turn(self, chat_id: str, turn_id: str) -> m.ChatTurn:
        """The Turn and its status now (`abandoned`: not completed within 24 hours)."""
        return (self._call(r.GET_TURN, chatId=chat_id, turnId=turn_id)).turn

    def add_chat_turn_items(
        self, chat_id: str, turn_id: str, items: list[m.Item | dict[str, Any]]
    ) -> list[str]:
        body = m.AddItems.model_validate({"items": items})
        answer = self._call(r.ADD_TURN_ITEMS, body, chatId=chat_id, turnId=turn_id)
        return answer.item_ids

    def confide(self, chat_id: str, turn_id: str, text: str) -> m.ConfideAnswered:
        body = m.Confide(text=text)
        return self._call(r.CONFIDE, body, chatId=chat_id, turnId=turn_id)

    def complete_chat_turn(
        self, chat_id: str, turn_id: str, *, items: list[m.Item | dict[str, Any]] | None = None
    ) -> m.CompletedTurn:
        """Complete the Turn; with `items`, the Bot's last words are saved with its end in
        one request (what `add_chat_turn_items` then `complete_chat_turn` do)."""
        body = (
            m.CompleteTurn() if items is None else m.CompleteTurn.model_validate({"items": items})
        )
        answer = self._call(r.COMPLETE_TURN, body, chatId=chat_id, turnId=turn_id)
        return answer.turn

    def confessions(self, chat_id: str) -> list[m.Confession]:
        return (self._call(r.CONFESSIONS, chatId=chat_id)).confessions

    def enrichments(self, chat_id: str) -> list[m.Enrichment]:
        return (self._call(r.ENRICHMENTS, chatId=chat_id)).enrichments

    def get_bot_memory(self, bot_id: str, *, tags: list[str] | None = None) -> m.BotMemory:
        params = query(tags=",".join(tags) if tags else None)
        return self._call(r.GET_BOT_MEMORY, params=params, botId=bot_id)

    def remember_entry(
        self, bot_id: str, content: str, tags: list[str] | None = None
    ) -> m.BotMemoryChange:
        body = m.BotMemoryCommand(command=m.RememberEntry(content=content, tags=tags or []))
        return self._call(r.BOT_MEMORY_COMMAND, body, botId=bot_id)

    def forget_entry(self, bot_id: str, entry_id: str) -> m.BotMemoryChange:
        body = m.BotMemoryCommand(command=m.ForgetEntry(id=entry_id))
        return self._call(r.BOT_MEMORY_COMMAND, body, botId=bot_id)

    def bot_memory_log(self, bot_id: str, *, limit: int | None = None) -> list[m.BotLogChange]:
        return (self._call(r.BOT_MEMORY_LOG, params=query(limit=limit), botId=bot_id)).changes

    def purge_bot_memory(self, bot_id: str, tag: str) -> int:
        """Remove every entry carrying `tag` (resumable: repeat until it is done)."""
        return (self._call(r.PURGE_BOT_MEMORY, m.Purge(tag=tag), botId=bot_id)).removed

    def get_bot_settings(self, bot_id: str) -> m.BotSettings:
        return self._call(r.GET_BOT_SETTINGS, botId=bot_id)

    def patch_bot_settings(
        self,
        bot_id: str,
        *,
        expected: int,
        instructions: str | None = UNSET,
        concurrency: int | None = UNSET,
        budget: m.BudgetIn | dict[str, Any] | None = UNSET,
    ) -> m.BotSettings:
        fields = given(instructions=instructions, concurrency=concurrency, budget=budget)
        body = m.BotSettingsPatch.model_validate({"expected": expected, **fields})
        return self._call(r.PATCH_BOT_SETTINGS, body, botId=bot_id)

    def update_bot_settings(
        self,
        bot_id: str,
        build: Callable[[m.BotSettings], dict[str, Any] | None],
        *,
        attempts: int = 5,
    ) -> m.BotSettings:
        """Read the memory bot's settings, `build` the fields to change (`instructions`,
        `concurrency`, `budget`), apply them at that version; on `VersionConflict` read and
        build again, up to `attempts` times."""
        for attempt in range(attempts):
            settings = self.get_bot_settings(bot_id)
            change = build(settings)
            if change is None:
                return settings
            try:
                return self.patch_bot_settings(bot_id, expected=settings.version, **change)
            except VersionConflict:
                if attempt == attempts - 1:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def bot_context(
        self, bot_id: str, chat_id: str, *, max_length: int | None = None
    ) -> m.ContextText:
        body = m.ContextAsk(
            chat_id=chat_id, **given(max_length=UNSET if max_length is None else max_length)
        )
        return self._call(r.BOT_CONTEXT, body, botId=bot_id)

    def share_entry(self, bot_id: str, entry_id: str, audience: str) -> m.SharedEntry:
        body = m.Share(id=entry_id, audience=audience)
        return self._call(r.SHARE_ENTRY, body, botId=bot_id)

    def bot_learning(self, bot_id: str) -> list[m.BotExecution]:
        return (self._call(r.BOT_LEARNING, botId=bot_id)).executions

    # ------------------------------------------------------------------ threads (seed 003)

    def create_thread(
        self,
        agent_id: str,
        resource_id: str | None = None,
        *,
        title: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> m.Thread:
        """A thread of the caller; a `title` given here is kept (no title step runs), and
        `metadata` is the client's own JSON object about it, returned as sent."""
        body = m.CreateThread.model_validate(
            {
                "agentId": agent_id,
                **given(
                    resourceId=resource_id or UNSET,
                    title=UNSET if title is None else title,
                    metadata=UNSET if metadata is None else metadata,
                ),
            }
        )
        return (self._call(r.CREATE_THREAD, body)).thread

    def update_thread(
        self,
        thread_id: str,
        *,
        title: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> m.Thread:
        """Sets the title and/or replaces the metadata (`{}` clears it)."""
        body = m.UpdateThread.model_validate(
            given(
                title=UNSET if title is None else title,
                metadata=UNSET if metadata is None else metadata,
            )
        )
        return (self._call(r.UPDATE_THREAD, body, threadId=thread_id)).thread

    def delete_thread(self, thread_id: str) -> m.DeletedThread:
        """The thread with its messages, working memory, observations and recall vectors
        (the person's working memory with the agent, kept across threads, stays)."""
        return self._call(r.DELETE_THREAD, threadId=thread_id)

    def list_threads(
        self,
        *,
        agent_id: str | None = None,
        resource_id: str | None = None,
        limit: int | None = None,
        starting_after: str | None = None,
    ) -> m.ThreadsAnswer:
        """The caller's threads, newest first, with titles (`has_more`: pass the last id as
        `starting_after`)."""
        params = query(
            agentId=agent_id, resourceId=resource_id, limit=limit, starting_after=starting_after
        )
        return self._call(r.LIST_THREADS, params=params)

    def iter_threads(
        self, *, agent_id: str | None = None, page_size: int = 100
    ) -> Iterator[m.Thread]:
        """Every thread of the caller (of one agent, when given), newest first."""
        after: str | None = None
        while True:
            page = self.list_threads(agent_id=agent_id, limit=page_size, starting_after=after)
            yield from page.threads
            if not page.has_more or not page.threads:
                return
            after = page.threads[-1].id

    def thread_learning(self, thread_id: str) -> list[dict[str, Any]]:
        """The thread's background runs (titles, observations), newest first."""
        return (self._call(r.THREAD_LEARNING, threadId=thread_id)).executions

    def get_thread(self, thread_id: str) -> m.Thread:
        return (self._call(r.GET_THREAD, threadId=thread_id)).thread

    def save_messages(
        self, thread_id: str, messages: list[m.MessageIn | dict[str, Any]]
    ) -> list[str]:
        """Save messages (each `role`, `content`, and an optional opaque `item` returned as
        sent); an agent version with readOnly saves nothing (`[]`)."""
        body = m.SaveMessages.model_validate({"messages": messages})
        return (self._call(r.SAVE_MESSAGES, body, threadId=thread_id)).message_ids

    def list_messages(self, thread_id: str, *, limit: int | None = None) -> list[m.Message]:
        """Chronological; with `limit`, the latest `limit` in chronological order."""
        params = query(limit=limit)
        return (self._call(r.LIST_MESSAGES, params=params, threadId=thread_id)).messages

    def pop_message(self, thread_id: str) -> m.Message | None:
        """Remove and return the latest message (None: the thread has none)."""
        return (self._call(r.POP_MESSAGE, threadId=thread_id)).message

    def clear_messages(self, thread_id: str) -> None:
        self._call_empty(r.CLEAR_MESSAGES, threadId=thread_id)

    def thread_context(self, thread_id: str, message: str | None = None) -> m.ContextAnswer:
        """What the agent's model gets for this turn (history, recall, working memory)."""
        body = m.ContextRequest(
            # The role is sent, not left to the default (bodies leave out unset fields).
            **given(
                message=m.ContextMessage(role="user", content=message)
                if message is not None
                else UNSET
            )
        )
        return self._call(r.THREAD_CONTEXT, body, threadId=thread_id)

    def get_working_memory(self, thread_id: str) -> m.WorkingMemory:
        return self._call(r.GET_WORKING_MEMORY, threadId=thread_id)

    def put_working_memory(self, thread_id: str, content: str | dict[str, Any]) -> m.WorkingMemory:
        body = m.WorkingMemoryIn(content=content)
        return self._call(r.PUT_WORKING_MEMORY, body, threadId=thread_id)

    def thread_observations(self, thread_id: str) -> m.ObservationLog:
        """The observation log (every observation made, buffered or active)."""
        return self._call(r.THREAD_OBSERVATIONS, threadId=thread_id)

    def recall_thread(
        self, thread_id: str, query: str, *, limit: int | None = None
    ) -> list[dict[str, Any]]:
        """Messages closest in meaning to `query` (observationalMemory.retrieval's tool)."""
        body = m.ThreadRecall(query=query, **given(limit=UNSET if limit is None else limit))
        return (self._call(r.THREAD_RECALL, body, threadId=thread_id)).messages

    # ------------------------------------------------------------------ events

    def events(self, *, after: str | None = None, limit: int | None = None) -> m.EventsAnswer:
        """What changed after the cursor `after` that the caller may see; pass the answer's
        `next` as the following `after` (an empty page still moves `next` on)."""
        return self._call(r.EVENTS, params=query(after=after, limit=limit))
