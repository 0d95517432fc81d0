"""Every route the client calls: method, path, body and answer models (API.md).

tests/clients/test_openapi_drift.py checks this table against infra/openapi.json both ways:
each route here exists there with the same fields, and each operation there is here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

from pydantic import BaseModel

from agent_memory_client import models as m

A = TypeVar("A", bound=BaseModel)


@dataclass(frozen=True)
class Route(Generic[A]):
    method: str
    path: str
    body: type[BaseModel] | None
    answer: type[A]
    status: int = 200


@dataclass(frozen=True)
class EmptyRoute:
    """A route that answers 204 with no body."""

    method: str
    path: str
    body: type[BaseModel] | None = None
    status: int = 204


@dataclass(frozen=True)
class LinesRoute(EmptyRoute):
    """A route that answers 200 with one JSON object a line (`application/x-ndjson`),
    streamed: read line by line, never held whole."""

    status: int = 200


R = Route
HEALTH = R("GET", "/healthz", None, m.Health)
# administration
CREATE_ORGANIZATION = R(
    "POST", "/v1/admin/organizations", m.CreateOrganization, m.CreatedOrganization, 201
)
CREATE_USER = R("POST", "/v1/admin/users", m.CreateUser, m.CreatedUser, 201)
ISSUE_TOKEN = R("POST", "/v1/admin/users/{userId}/tokens", m.IssueToken, m.IssuedToken, 201)
REVOKE_TOKEN = EmptyRoute("DELETE", "/v1/admin/tokens/{tokenPrefix}")
GET_SETTINGS = R("GET", "/v1/organizations/{orgId}/settings", None, m.OrganizationSettings)
PATCH_SETTINGS = R(
    "PATCH", "/v1/organizations/{orgId}/settings", m.SettingsPatch, m.OrganizationSettings
)
ME = R("GET", "/v1/me", None, m.MeAnswer)
MY_TOKENS = R("GET", "/v1/me/tokens", None, m.MyTokens)
ADD_MY_TOKEN = R("POST", "/v1/me/tokens", m.IssueToken, m.IssuedToken, 201)
REVOKE_MY_TOKEN = EmptyRoute("DELETE", "/v1/me/tokens/{tokenPrefix}")
EXPORT = LinesRoute("GET", "/v1/me/export")
CAPABILITIES = R("GET", "/v1/capabilities", None, m.Capabilities)
ERASE_USER = R("POST", "/v1/organizations/{orgId}/users/{userId}/erase", None, m.ErasedUser)
# an organization's people and service keys
LIST_USERS = R("GET", "/v1/organizations/{orgId}/users", None, m.OrgUsers)
ADD_USER = R("POST", "/v1/organizations/{orgId}/users", m.AddUser, m.AddedUser, 201)
DELETE_USER = R("DELETE", "/v1/organizations/{orgId}/users/{userId}", None, m.ErasedUser)
RENAME_USER = R("PATCH", "/v1/organizations/{orgId}/users/{userId}", m.RenameUser, m.AddedUser)
LIST_ORGANIZATIONS = R("GET", "/v1/admin/organizations", None, m.Organizations)
DELETE_ORGANIZATION = R("DELETE", "/v1/admin/organizations/{orgId}", None, m.DeletedOrganization)
CREATE_SERVICE_KEY = R(
    "POST", "/v1/organizations/{orgId}/service-keys", m.CreateServiceKey, m.CreatedServiceKey, 201
)
LIST_SERVICE_KEYS = R("GET", "/v1/organizations/{orgId}/service-keys", None, m.ServiceKeys)
REVOKE_SERVICE_KEY = EmptyRoute("DELETE", "/v1/organizations/{orgId}/service-keys/{keyId}")
# agents and sessions (seed 000)
LIST_AGENTS = R("GET", "/v1/agents", None, m.AgentList)
DELETE_AGENT = R("DELETE", "/v1/agents/{agentId}", None, m.DeletedAgent)
LIST_SESSIONS = R("GET", "/v1/sessions", None, m.SessionList)
DELETE_SESSION = R("DELETE", "/v1/sessions/{sessionId}", None, m.DeletedSession)
SESSION_ITEMS = R("GET", "/v1/sessions/{sessionId}/items", None, m.SessionItemList)
CREATE_AGENT = R("POST", "/v1/agents", m.CreateAgent, m.AgentAnswer, 201)
GET_AGENT = R("GET", "/v1/agents/{agentId}", None, m.AgentAnswer)
CREATE_SESSION = R("POST", "/v1/sessions", m.CreateSession, m.SessionAnswer, 201)
GET_SESSION = R("GET", "/v1/sessions/{sessionId}", None, m.SessionAnswer)
POST_TURN = R("POST", "/v1/sessions/{sessionId}/turns", m.PostTurn, m.TurnAnswer)
FORK_SESSION = R("POST", "/v1/sessions/{sessionId}/fork", m.ForkSession, m.SessionAnswer, 201)
PROMOTE_SESSION = R("POST", "/v1/sessions/{sessionId}/promote", m.Promote, m.AgentAnswer, 201)
GET_SESSION_MEMORY = R("GET", "/v1/sessions/{sessionId}/memory", None, m.SessionMemory)
SESSION_MEMORY_COMMAND = R(
    "POST", "/v1/sessions/{sessionId}/memory", m.MemoryCommand, m.SessionAnswer
)
SESSION_MEMORY_TEXT = R("GET", "/v1/sessions/{sessionId}/memory/text", None, m.MemoryText)
SESSION_LEARNING = R("GET", "/v1/sessions/{sessionId}/learning", None, m.Executions)
GET_AGENT_MEMORY = R("GET", "/v1/agents/{agentId}/memory", None, m.AgentMemory)
AGENT_MEMORY_COMMAND = R("POST", "/v1/agents/{agentId}/memory", m.AgentMemoryCommand, m.AgentMemory)
AGENT_MEMORY_LOG = R("GET", "/v1/agents/{agentId}/memory/log", None, m.MemoryLog)
AGENT_MEMORY_TEXT = R("GET", "/v1/agents/{agentId}/memory/text", None, m.MemoryText)
AGENT_LEARNING = R("GET", "/v1/agents/{agentId}/learning", None, m.Executions)
# agent versions (seed 003)
GET_DRAFT = R("GET", "/v1/agents/{agentId}/draft", None, m.DraftAnswer)
PATCH_DRAFT = R("PATCH", "/v1/agents/{agentId}/draft", m.PatchDraft, m.DraftAnswer)
PUBLISH = R("POST", "/v1/agents/{agentId}/publish", m.EmptyBody, m.VersionAnswer, 201)
VERSIONS = R("GET", "/v1/agents/{agentId}/versions", None, m.VersionsAnswer)
ACTIVATE = R("POST", "/v1/agents/{agentId}/versions/{n}/activate", m.EmptyBody, m.ActiveAnswer)
# agent memories (seed 004)
LIST_AGENT_MEMORIES = R("GET", "/v1/agent_memories", None, m.AgentMemoryList)
CREATE_AGENT_MEMORY = R("POST", "/v1/agent_memories", m.CreateAgentMemory, m.AgentMemoryObject, 201)
RECALL_AGENT_MEMORIES = R(
    "POST", "/v1/agent_memories/recall", m.RecallAgentMemories, m.AgentMemoryList
)
GET_AGENT_MEMORY_OBJECT = R("GET", "/v1/agent_memories/{memoryId}", None, m.AgentMemoryObject)
UPDATE_AGENT_MEMORY = R(
    "PATCH", "/v1/agent_memories/{memoryId}", m.UpdateAgentMemory, m.AgentMemoryObject
)
DELETE_AGENT_MEMORY = R("DELETE", "/v1/agent_memories/{memoryId}", None, m.DeletedAgentMemory)
# bots, channels, chats and bot memory (seed 002)
CREATE_BOT = R("POST", "/v1/bots", m.CreateBot, m.BotAnswer, 201)
GET_BOT = R("GET", "/v1/bots/{botId}", None, m.BotAnswer)
LIST_BOTS = R("GET", "/v1/bots", None, m.BotsAnswer)
LIST_CHANNELS = R("GET", "/v1/channels", None, m.ChannelsAnswer)
LIST_CHATS = R("GET", "/v1/chats", None, m.ChatsAnswer)
CREATE_LINK = R("POST", "/v1/bots/{botId}/links", m.CreateLink, m.LinkAnswer, 201)
CREATE_CHANNEL = R("POST", "/v1/channels", m.CreateChannel, m.ChannelAnswer, 201)
CHANGE_MEMBERS = R("POST", "/v1/channels/{channelId}/members", m.ChangeMembers, m.ChannelAnswer)
CREATE_CHAT = R("POST", "/v1/chats", m.CreateChat, m.ChatAnswer, 201)
CHAT_ITEMS = R("GET", "/v1/chats/{chatId}/items", None, m.ChatItems)
DELETE_CHAT_ITEMS = EmptyRoute("DELETE", "/v1/chats/{chatId}/items")
START_TURN = R("POST", "/v1/chats/{chatId}/turns", m.StartTurn, m.TurnStarted, 201)
GET_TURN = R("GET", "/v1/chats/{chatId}/turns/{turnId}", None, m.ChatTurnAnswer)
ADD_TURN_ITEMS = R("POST", "/v1/chats/{chatId}/turns/{turnId}/items", m.AddItems, m.ItemIds)
CONFIDE = R("POST", "/v1/chats/{chatId}/turns/{turnId}/confide", m.Confide, m.ConfideAnswered)
COMPLETE_TURN = R(
    "POST", "/v1/chats/{chatId}/turns/{turnId}/complete", m.CompleteTurn, m.TurnCompleted
)
CONFESSIONS = R("GET", "/v1/chats/{chatId}/confessions", None, m.Confessions)
ENRICHMENTS = R("GET", "/v1/chats/{chatId}/enrichments", None, m.Enrichments)
GET_BOT_MEMORY = R("GET", "/v1/bots/{botId}/memory", None, m.BotMemory)
BOT_MEMORY_COMMAND = R("POST", "/v1/bots/{botId}/memory", m.BotMemoryCommand, m.BotMemoryChange)
BOT_MEMORY_LOG = R("GET", "/v1/bots/{botId}/memory/log", None, m.BotMemoryLog)
PURGE_BOT_MEMORY = R("POST", "/v1/bots/{botId}/memory/purge", m.Purge, m.Purged)
GET_BOT_SETTINGS = R("GET", "/v1/bots/{botId}/memory/bot", None, m.BotSettings)
PATCH_BOT_SETTINGS = R("PATCH", "/v1/bots/{botId}/memory/bot", m.BotSettingsPatch, m.BotSettings)
BOT_CONTEXT = R("POST", "/v1/bots/{botId}/memory/context", m.ContextAsk, m.ContextText)
SHARE_ENTRY = R("POST", "/v1/bots/{botId}/memory/share", m.Share, m.SharedEntry)
BOT_LEARNING = R("GET", "/v1/bots/{botId}/learning", None, m.BotExecutions)
# threads (seed 003)
CREATE_THREAD = R("POST", "/v1/threads", m.CreateThread, m.ThreadAnswer, 201)
LIST_THREADS = R("GET", "/v1/threads", None, m.ThreadsAnswer)
THREAD_LEARNING = R("GET", "/v1/threads/{threadId}/learning", None, m.Executions)
GET_THREAD = R("GET", "/v1/threads/{threadId}", None, m.ThreadAnswer)
UPDATE_THREAD = R("PATCH", "/v1/threads/{threadId}", m.UpdateThread, m.ThreadAnswer)
DELETE_THREAD = R("DELETE", "/v1/threads/{threadId}", None, m.DeletedThread)
SAVE_MESSAGES = R("POST", "/v1/threads/{threadId}/messages", m.SaveMessages, m.MessageIds)
LIST_MESSAGES = R("GET", "/v1/threads/{threadId}/messages", None, m.MessagesAnswer)
POP_MESSAGE = R("DELETE", "/v1/threads/{threadId}/messages/last", None, m.RemovedMessage)
CLEAR_MESSAGES = EmptyRoute("DELETE", "/v1/threads/{threadId}/messages")
THREAD_CONTEXT = R("POST", "/v1/threads/{threadId}/context", m.ContextRequest, m.ContextAnswer)
GET_WORKING_MEMORY = R("GET", "/v1/threads/{threadId}/working-memory", None, m.WorkingMemory)
PUT_WORKING_MEMORY = R(
    "PUT", "/v1/threads/{threadId}/working-memory", m.WorkingMemoryIn, m.WorkingMemory
)

THREAD_OBSERVATIONS = R("GET", "/v1/threads/{threadId}/observations", None, m.ObservationLog)
THREAD_RECALL = R("POST", "/v1/threads/{threadId}/recall", m.ThreadRecall, m.ThreadRecallAnswer)
EVENTS = R("GET", "/v1/events", None, m.EventsAnswer)

ROUTES: tuple[Route[BaseModel] | EmptyRoute, ...] = tuple(
    value for value in dict(globals()).values() if isinstance(value, Route | EmptyRoute)
)
