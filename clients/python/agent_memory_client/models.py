"""Typed bodies and answers of every route of the agent-memory HTTP API (API.md).

Written against infra/openapi.json; tests/clients/test_openapi_drift.py fails when a route, a
field or a required flag here differs from it. Answers keep fields the service adds later
(`extra="allow"`), so an older client goes on working against a newer service; bodies refuse
unknown fields as the service does. Python names are snake_case; the JSON names are aliases.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

# --------------------------------------------------------------------------- bases


class Answer(BaseModel):
    """What the service answers (camelCase JSON)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, alias_generator=to_camel)


class Body(BaseModel):
    """What the client sends (camelCase JSON)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, alias_generator=to_camel)

    def model_post_init(self, context: Any, /) -> None:
        # A command's `_tag` is always sent, though it has a default (bodies omit unset fields).
        if "tag" in type(self).model_fields:
            self.__pydantic_fields_set__.add("tag")


class SnakeAnswer(BaseModel):
    """Seed 004's objects and lists, whose JSON is snake_case."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)


class SnakeBody(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


Role = Literal["user", "assistant", "tool", "notice"]
MessageRole = Literal["user", "assistant", "tool", "system"]
Category = Literal["preference", "fact", "instruction"]
EntityType = Literal["account", "actor", "entity"]
Grant = Literal["read", "write"]

# --------------------------------------------------------------------------- health, admin


class Health(Answer):
    status: str


class CreateOrganization(Body):
    id: str | None = None
    name: str


class CreatedOrganization(Answer):
    id: str
    name: str


class CreateUser(Body):
    organization_id: str
    id: str | None = None
    name: str | None = None
    role: Literal["member", "admin"] = "member"


class CreatedUser(Answer):
    id: str
    organization_id: str
    role: str
    token: str
    token_prefix: str


class IssueToken(Body):
    # Only when the id exists in more than one organization.
    organization_id: str | None = None


class AddUser(Body):
    id: str | None = None
    name: str | None = None
    role: Literal["member", "admin"] = "member"


class OrgUser(Answer):
    id: str
    name: str | None
    role: str
    created_at: int


class AddedUser(Answer):
    user: OrgUser


class OrgUsers(Answer):
    users: list[OrgUser]
    next: str | None


class RenameUser(Body):
    name: str


class Organization(Answer):
    """An organization as the admin token lists it: no content."""

    id: str
    name: str
    created_at: int
    users: int
    deleting: bool


class Organizations(Answer):
    organizations: list[Organization]
    next: str | None


class DeletedOrganization(Answer):
    """What one deletion removed, by kind (camelCase, as the service names them)."""

    deleted: dict[str, int]


class CreateServiceKey(Body):
    name: str


class CreatedServiceKey(Answer):
    id: str
    name: str
    key: str
    created_at: int


class ServiceKey(Answer):
    id: str
    name: str
    prefix: str
    created_at: int
    last_used_at: int | None


class ServiceKeys(Answer):
    service_keys: list[ServiceKey]


class IssuedToken(Answer):
    token: str
    token_prefix: str


class MemorySwitches(Answer):
    use: bool
    generate: bool


class OrganizationSettings(Answer):
    memory: MemorySwitches
    agent_memory: bool
    helper_model: str | None
    bot_memory: bool
    bot_memory_model: str | None
    allowed_models: list[str] | None
    auto_provision_users: bool


class MemorySwitchesPatch(Body):
    use: bool | None = None
    generate: bool | None = None


class SettingsPatch(Body):
    """PATCH: a value sets, `None` resets to the default, a field left out keeps."""

    memory: MemorySwitchesPatch | None = None
    agent_memory: bool | None = None
    helper_model: str | None = None
    bot_memory: bool | None = None
    bot_memory_model: str | None = None
    allowed_models: list[str] | None = None
    auto_provision_users: bool | None = None


class Caller(Answer):
    id: str | None
    organization_id: str | None
    role: Literal["member", "admin", "service-admin", "service-key"]
    # The service key a request came through (with Act-As).
    service_key_id: str | None = None


class MeAnswer(Answer):
    user: Caller


class MyToken(Answer):
    """One token the caller holds: never the token or its hash."""

    prefix: str
    # A user id (the caller's own, or an admin's), or "admin token".
    issued_by: str
    created_at: int


class MyTokens(Answer):
    tokens: list[MyToken]


class Unconfigured(Answer):
    provider: str
    # The settings that would let the deployment run this provider's models (no values).
    needs: str


class ModelCapabilities(Answer):
    providers: list[str]
    # Names and `provider/*` patterns this caller may name where a model is asked for.
    allowed: list[str]
    default: str | None
    unconfigured: list[Unconfigured]


class Embedder(Answer):
    name: str
    # None until an embedding model of unknown size has answered once.
    dimensions: int | None


class Capabilities(Answer):
    """What the deployment can run: names and patterns, never keys."""

    models: ModelCapabilities
    embedders: list[Embedder]
    local: list[str]


# --------------------------------------------------------------------------- agents, sessions


class Agent(Answer):
    id: str
    name: str
    owner: str
    members: list[str]


class AgentAnswer(Answer):
    agent: Agent


class CreateAgent(Body):
    name: str
    members: list[str] = Field(default_factory=list)


class Session(Answer):
    id: str
    agent_id: str
    owner: str
    kind: str
    model: str | None
    head: str
    revision: int
    parent_id: str | None


class SessionAnswer(Answer):
    session: Session


class CreateSession(Body):
    agent_id: str
    model: str | None = None
    kind: Literal["chat", "review", "subagent"] = "chat"


class Item(Body):
    """One item of a session turn (the service assigns its id)."""

    role: Role
    content: str
    app: str | None = None


class PostTurn(Body):
    items: list[Item]
    model: str | None = None
    expected: str | None = None
    revision: int | None = None


class Turn(Answer):
    id: str
    item_ids: list[str]
    learning: Literal["started", "skipped"]
    # Why learning was skipped (e.g. "noModel", "generateOff"); None when it started.
    learning_reason: str | None = None
    agent_learning: Literal["started", "skipped"]


class TurnAnswer(Answer):
    session: Session
    turn: Turn


class ForkSession(Body):
    pass


class Promote(Body):
    name: str | None = None


class AgentList(SnakeAnswer):
    object: Literal["list"] = "list"
    data: list[Agent]
    has_more: bool


class SessionList(SnakeAnswer):
    object: Literal["list"] = "list"
    data: list[Session]
    has_more: bool


class SessionItem(Answer):
    id: str
    object: Literal["session_item"] = "session_item"
    role: Role
    content: str
    app: str | None
    model: str | None
    turn_id: str | None
    created_at: int


class SessionItemList(SnakeAnswer):
    object: Literal["list"] = "list"
    data: list[SessionItem]
    has_more: bool


class DeletedSession(Answer):
    id: str
    object: Literal["session"] = "session"
    deleted: Literal[True] = True
    items: int


class DeletedAgent(Answer):
    id: str
    object: Literal["agent"] = "agent"
    deleted: Literal[True] = True
    sessions: int
    threads: int


class ErasedUser(Answer):
    """What one erasure removed (a repeated erasure counts only what it removed itself)."""

    user_id: str
    organization_id: str
    sessions: int
    items: int
    threads: int
    messages: int
    working_memory: int
    bot_entries: int
    agents: int
    observations: int
    chats: int
    chat_items: int
    agent_memories: int


class Switches(Answer):
    use: bool
    generate: bool


class SessionEntry(Answer):
    key: str
    content: str
    kind: str
    sources: list[Any]
    updated_at: int
    status: Literal["active", "retracted"]


class SessionMemory(Answer):
    entries: dict[str, SessionEntry]
    overrides: dict[str, bool]
    processed: list[str]
    settings: Switches


class RememberCommand(Body):
    tag: Literal["Remember"] = Field(default="Remember", alias="_tag")
    key: str
    content: str
    kind: Literal["fact", "decision", "preference", "procedure", "hypothesis"]


class ForgetCommand(Body):
    tag: Literal["Forget"] = Field(default="Forget", alias="_tag")
    key: str


class ConfigureCommand(Body):
    tag: Literal["Configure"] = Field(default="Configure", alias="_tag")
    use: bool | None = None
    generate: bool | None = None


class RefreshCommand(Body):
    tag: Literal["Refresh"] = Field(default="Refresh", alias="_tag")


SessionCommand = RememberCommand | ForgetCommand | ConfigureCommand | RefreshCommand


class MemoryCommand(Body):
    expected: str
    revision: int
    command: SessionCommand


class MemoryText(Answer):
    text: str
    keys: list[str]
    length: int
    max_length: int


class Executions(Answer):
    """Learning executions, newest first (API.md "Execution"; kept as the service sends them)."""

    executions: list[dict[str, Any]]


class AgentEntrySource(Answer):
    session: str
    item: str


class AgentEntry(Answer):
    key: str
    content: str
    kind: str
    sources: list[AgentEntrySource]
    updated_at: int
    status: Literal["active", "retracted"]


class AgentMemory(Answer):
    entries: dict[str, AgentEntry]
    version: int


class AgentRemember(Body):
    tag: Literal["Remember"] = Field(default="Remember", alias="_tag")
    key: str
    content: str
    kind: Literal["procedure", "preference", "decision"]


class AgentForget(Body):
    tag: Literal["Forget"] = Field(default="Forget", alias="_tag")
    key: str


AgentCommand = AgentRemember | AgentForget


class AgentMemoryCommand(Body):
    expected: int
    command: AgentCommand


class MemoryChange(Answer):
    version: int
    at: int
    by: Literal["consolidation", "person", "promotion"]
    keys: list[str]
    # A person's change: who, and the service key it came through.
    person: str | None = None
    service_key_id: str | None = None


class MemoryLog(Answer):
    changes: list[MemoryChange]


# --------------------------------------------------------------------------- agent versions


class EffectiveMemory(Answer):
    memory: dict[str, Any]


class Draft(Answer):
    memory: dict[str, Any] | None
    effective: EffectiveMemory


class DraftAnswer(Answer):
    draft: Draft


class PatchDraft(Body):
    memory: dict[str, Any] | None = None


class EmptyBody(Body):
    pass


class Version(Answer):
    number: int
    memory: dict[str, Any] | None
    effective: EffectiveMemory
    published_at: int


class VersionAnswer(Answer):
    version: Version


class VersionsAnswer(Answer):
    versions: list[Version]
    active: int | None


class ActiveAnswer(Answer):
    active: int


# --------------------------------------------------------------------------- agent memories (004)


class EntityIn(SnakeBody):
    id: str
    type: EntityType
    object: Literal["entity"] = "entity"
    name: str | None = None
    handle: str | None = None


class Entity(SnakeAnswer):
    id: str
    object: Literal["entity"] = "entity"
    type: EntityType
    name: str | None
    handle: str | None


class AgentMemoryObject(SnakeAnswer):
    id: str
    object: Literal["agent_memory"] = "agent_memory"
    category: Category
    content: str
    metadata: Any
    entity: Entity | None
    importance: float
    expires_at: str | None
    created_at: str
    updated_at: str
    # Where a key-value client keeps it (a LangGraph store's item): labels and a key.
    namespace: list[str] | None = None
    key: str | None = None


class AgentMemoryList(SnakeAnswer):
    object: Literal["list"] = "list"
    data: list[AgentMemoryObject]
    has_more: bool


class CreateAgentMemory(SnakeBody):
    category: Category
    content: str
    metadata: Any = None
    entity: EntityIn | None = None
    importance: float = 0.5
    expires_at: str | None = None
    namespace: list[str] | None = None
    key: str | None = None


class UpdateAgentMemory(SnakeBody):
    """PATCH: only the fields set are sent; `None` clears metadata, entity and expires_at."""

    category: Category | None = None
    content: str | None = None
    metadata: Any = None
    entity: EntityIn | None = None
    importance: float | None = None
    expires_at: str | None = None


class RecallAgentMemories(SnakeBody):
    limit: int = 10
    entity: str | None = None
    query: str | None = None
    namespace: list[str] | None = None


class DeletedAgentMemory(SnakeAnswer):
    id: str
    object: Literal["agent_memory"] = "agent_memory"
    deleted: Literal[True] = True


# --------------------------------------------------------------------------- bots (seed 002)


class Bot(Answer):
    id: str
    name: str
    organization_id: str
    owner: str
    grants: dict[str, Grant]
    linked: bool


class BotAnswer(Answer):
    bot: Bot


class BotsAnswer(Answer):
    """A page of the bots the caller reaches, newest first."""

    bots: list[Bot]
    has_more: bool = Field(alias="has_more")


class CreateBot(Body):
    name: str
    grants: dict[str, str] | None = None


class Link(Answer):
    bot_id: str
    organization_id: str
    grants: dict[str, Grant]


class LinkAnswer(Answer):
    link: Link


class CreateLink(Body):
    organization_id: str
    # None removes that person's grant; people not named keep theirs.
    grants: dict[str, str | None]


class Channel(Answer):
    id: str
    name: str
    members: list[str]


class ChannelAnswer(Answer):
    channel: Channel


class ChannelsAnswer(Answer):
    """A page of the caller's channels, newest first."""

    channels: list[Channel]
    has_more: bool = Field(alias="has_more")


class CreateChannel(Body):
    name: str
    members: list[str] = Field(default_factory=list)


class ChangeMembers(Body):
    add: list[str] = Field(default_factory=list)
    remove: list[str] = Field(default_factory=list)


class Chat(Answer):
    id: str
    bot_id: str
    organization_id: str
    owner: str
    channel_id: str | None
    kind: Literal["chat", "review"]


class ChatAnswer(Answer):
    chat: Chat


class ChatsAnswer(Answer):
    """A page of the chats the caller owns or speaks in, newest first."""

    chats: list[Chat]
    has_more: bool = Field(alias="has_more")


class CreateChat(Body):
    bot_id: str
    channel_id: str | None = None
    kind: Literal["chat", "review"] = "chat"


class ChatItem(Answer):
    id: str
    turn_id: str
    role: Role
    actor: str | None
    content: str
    app: str | None = None


class ChatItems(Answer):
    items: list[ChatItem]


class StartTurn(Body):
    input: str
    notice: bool = False


class ChatTurn(Answer):
    id: str
    actor: str
    # abandoned: not completed within 24 hours of its last item (closed).
    status: Literal["open", "completed", "abandoned"]


class ChatTurnAnswer(Answer):
    turn: ChatTurn


class TurnStarted(Answer):
    turn: ChatTurn
    input: str
    enriched: bool


class AddItems(Body):
    items: list[Item]


class ItemIds(Answer):
    item_ids: list[str]


class CompleteTurn(Body):
    """`complete`'s body: the Bot's last items, saved with the Turn's end (one request)."""

    items: list[Item] | None = None


class Confide(Body):
    text: str


class ConfideAnswered(Answer):
    answer: str
    calm: bool


class CompletedTurn(Answer):
    id: str
    status: Literal["completed"]


class TurnCompleted(Answer):
    turn: CompletedTurn
    item_ids: list[str] | None = None


class ItemSource(Answer):
    chat: str
    item: str


class EntrySource(Answer):
    entry: str


class Entry(Answer):
    """A bot memory entry (seed 002)."""

    id: str
    layer: Literal["fact", "observation", "pinned"]
    content: str
    tags: list[str]
    sources: list[ItemSource | EntrySource]
    status: Literal["active", "retracted"]
    created_at: int
    updated_at: int
    confidence: float | None = None
    invalidated_at: int | None = None


class BotMemory(Answer):
    entries: list[Entry]
    version: int


class RememberEntry(Body):
    tag: Literal["Remember"] = Field(default="Remember", alias="_tag")
    content: str
    tags: list[str] = Field(default_factory=list)


class ForgetEntry(Body):
    tag: Literal["Forget"] = Field(default="Forget", alias="_tag")
    id: str


class BotMemoryCommand(Body):
    command: RememberEntry | ForgetEntry


class BotMemoryChange(Answer):
    entry: Entry | None = None
    version: int


class BotLogChange(Answer):
    version: int
    at: int
    by: Literal["memory_bot", "person", "promotion"]
    ids: list[str]


class BotMemoryLog(Answer):
    changes: list[BotLogChange]


class Purge(Body):
    tag: str


class Purged(Answer):
    removed: int


class Budget(Answer):
    period: Literal["day", "month"]
    limit_micros: int


class BudgetIn(Body):
    period: Literal["day", "month"]
    limit_micros: int


class BotSettings(Answer):
    version: int
    instructions: str | None
    concurrency: int | None
    budget: Budget | None
    spent_micros: int


class BotSettingsPatch(Body):
    expected: int
    instructions: str | None = None
    concurrency: int | None = None
    budget: BudgetIn | None = None


class ContextAsk(Body):
    chat_id: str
    max_length: int | None = None


class ContextText(Answer):
    text: str
    ids: list[str]
    has_entries: bool


class Share(Body):
    id: str
    audience: str


class SharedEntry(Answer):
    entry: Entry
    version: int


class BotExecution(Answer):
    id: str
    status: Literal["waiting", "running", "succeeded", "failed", "skipped"]
    chat_id: str | None
    turn_id: str | None
    started_at: int | None = None
    ended_at: int | None = None
    item_ids: list[str] = Field(default_factory=list)
    applied: list[dict[str, Any]] = Field(default_factory=list)
    rejected: list[dict[str, Any]] = Field(default_factory=list)
    error: dict[str, Any] | None = None
    model: str | None = None
    note: str | None = None
    reason: str | None = None


class BotExecutions(Answer):
    executions: list[BotExecution]


class Confession(Answer):
    turn_id: str
    text: str
    answer: str
    calm: bool
    at: int


class Confessions(Answer):
    confessions: list[Confession]


class Enrichment(Answer):
    turn_id: str
    input: str
    original: str
    entry_ids: list[str]
    at: int


class Enrichments(Answer):
    enrichments: list[Enrichment]


# --------------------------------------------------------------------------- threads (seed 003)


class Thread(Answer):
    id: str
    agent_id: str
    resource_id: str
    title: str | None
    metadata: dict[str, Any] | None
    created_at: int


class DeletedThread(Answer):
    id: str
    object: Literal["thread"] = "thread"
    deleted: Literal[True] = True
    messages: int


class ThreadAnswer(Answer):
    thread: Thread


class ThreadsAnswer(Answer):
    threads: list[Thread]
    has_more: bool = Field(alias="has_more")


class CreateThread(Body):
    agent_id: str
    resource_id: str | None = None
    title: str | None = None
    metadata: dict[str, Any] | None = None


class UpdateThread(Body):
    title: str | None = None
    metadata: dict[str, Any] | None = None


class MessageIn(Body):
    role: MessageRole
    content: str
    item: dict[str, Any] | None = None


class SaveMessages(Body):
    messages: list[MessageIn]


class MessageIds(Answer):
    message_ids: list[str]


class Message(Answer):
    id: str
    role: str
    content: str
    item: dict[str, Any] | None = None
    created_at: int


class MessagesAnswer(Answer):
    messages: list[Message]


class RemovedMessage(Answer):
    message: Message | None


class ContextMessage(Body):
    role: Literal["user"] = "user"
    content: str


class ContextRequest(Body):
    message: ContextMessage | None = None


class Recalled(Answer):
    thread_id: str
    messages: list[Message]
    score: float


class Tool(Answer):
    name: str
    description: str
    parameters: dict[str, Any]


class ContextAnswer(Answer):
    messages: list[Message]
    recalled: list[Recalled]
    working_memory: str | dict[str, Any] | None
    observations: str | None
    system: str
    tools: list[Tool]


class ObservationLog(Answer):
    log: str
    tokens: int
    reflections: int


class ThreadRecall(Body):
    query: str
    limit: int | None = None


class ThreadRecallAnswer(Answer):
    """Messages recalled by meaning (the `recall` tool of observationalMemory.retrieval)."""

    messages: list[dict[str, Any]]


class Event(Answer):
    id: str
    type: str
    at: int
    object: dict[str, str]
    # A change made through a service key: the key, and the person to that person alone.
    service_key_id: str | None = None
    person: str | None = None


class EventsAnswer(Answer):
    events: list[Event]
    next: str


class WorkingMemoryIn(Body):
    content: str | dict[str, Any]


class WorkingMemory(Answer):
    scope: Literal["resource", "thread"]
    format: Literal["markdown", "json"]
    content: str | dict[str, Any] | None
