/**
 * AgentMemory: every route of infra/openapi.json, grouped by what it acts on. Method names
 * follow the Python client (clients/python/agent_memory_client/_sync_client.py), so that
 * `client.create_session(...)` there is `client.sessions.create(...)` here.
 */
import { SessionConflict, VersionConflict } from "./errors.js";
import { Transport, type ClientOptions, type RequestOptions } from "./http.js";
import { EventFeed, pages, type EventFeedOptions } from "./paging.js";
import type * as t from "./types.js";

export interface PageOptions {
  /** Objects fetched per request. Default 100. */
  pageSize?: number;
}

export interface RetryOptions {
  /** How many read-build-apply rounds before the conflict is thrown. Default 5. */
  attempts?: number;
}

/**
 * Read the current state and `apply` a change built from it at that state's version; on the
 * given conflict (someone changed it meanwhile) read and apply again, up to `attempts` times.
 */
async function optimistic<S, R>(
  conflict: typeof SessionConflict | typeof VersionConflict,
  attempts: number,
  read: () => Promise<S>,
  apply: (state: S) => Promise<R>,
): Promise<R> {
  for (let attempt = 1; ; attempt++) {
    const state = await read();
    try {
      return await apply(state);
    } catch (error) {
      if (!(error instanceof conflict) || attempt >= attempts) throw error;
    }
  }
}

class Group {
  constructor(protected readonly http: Transport) {}
}

/** Administration: the deployment's admin token. */
export class Admin extends Group {
  async createOrganization(body: t.CreateOrganization): Promise<t.CreatedOrganization> {
    return this.http.call("post", "/v1/admin/organizations", { body });
  }

  /** A user and their first token (shown once; only its hash is stored). */
  async createUser(body: t.CreateUser): Promise<t.CreatedUser> {
    return this.http.call("post", "/v1/admin/users", { body });
  }

  /** A new token for `userId`: a rotation (every token they held stops working). */
  async issueToken(userId: string, organizationId?: string): Promise<t.IssuedToken> {
    return this.http.call("post", "/v1/admin/users/{userId}/tokens", {
      path: { userId },
      body: organizationId === undefined ? {} : { organizationId },
    });
  }

  async revokeToken(tokenPrefix: string): Promise<void> {
    await this.http.call("delete", "/v1/admin/tokens/{tokenPrefix}", { path: { tokenPrefix } });
  }

  /** One page of every organization, in id order (ids, names, people; no content). */
  async listOrganizations(
    query: t.Query<"/v1/admin/organizations", "get"> = {},
  ): Promise<t.OrganizationList> {
    return this.http.call("get", "/v1/admin/organizations", { query });
  }

  /** Every organization, across pages (`next` until null). */
  async *iterateOrganizations({
    pageSize = 100,
  }: PageOptions = {}): AsyncGenerator<t.ListedOrganization, void, undefined> {
    let after: string | undefined;
    for (;;) {
      const page = await this.listOrganizations({ limit: pageSize, after });
      yield* page.organizations;
      if (!page.next) return;
      after = page.next;
    }
  }

  /**
   * The organization and everything in it: what this call removed, by kind. A call cut short
   * is finished by the next (so it is retried like a GET); once it is gone, `NotFound`.
   */
  async deleteOrganization(orgId: string): Promise<Record<string, number>> {
    const answer = await this.http.call("delete", "/v1/admin/organizations/{orgId}", {
      path: { orgId },
      idempotent: true,
    });
    return answer.deleted;
  }
}

/** An organization's service keys: its backend acting for its people (`Act-As`). */
export class ServiceKeys extends Group {
  /** A key, shown once (only its hash is stored). An org admin, or the admin token. */
  async create(orgId: string, body: t.CreateServiceKey): Promise<t.CreatedServiceKey> {
    return this.http.call("post", "/v1/organizations/{orgId}/service-keys", {
      path: { orgId },
      body,
    });
  }

  async list(orgId: string): Promise<t.ServiceKey[]> {
    const answer = await this.http.call("get", "/v1/organizations/{orgId}/service-keys", {
      path: { orgId },
    });
    return answer.serviceKeys;
  }

  /** The key stops working at once. */
  async revoke(orgId: string, keyId: string): Promise<void> {
    await this.http.call("delete", "/v1/organizations/{orgId}/service-keys/{keyId}", {
      path: { orgId, keyId },
    });
  }
}

/** An organization's people (an org admin, or a service key without `Act-As`). */
export class OrganizationPeople extends Group {
  /** One page, in id order; pass the answer's `next` as `after` for the following one. */
  async list(
    orgId: string,
    query: t.Query<"/v1/organizations/{orgId}/users", "get"> = {},
  ): Promise<t.OrganizationUsers> {
    return this.http.call("get", "/v1/organizations/{orgId}/users", { path: { orgId }, query });
  }

  /** Every person of the organization, in id order, across pages (`next` until null). */
  async *iterate(
    orgId: string,
    { pageSize = 100 }: PageOptions = {},
  ): AsyncGenerator<t.OrganizationUser, void, undefined> {
    let after: string | undefined;
    for (;;) {
      const page = await this.list(orgId, { limit: pageSize, after });
      yield* page.users;
      if (!page.next) return;
      after = page.next;
    }
  }

  /** A person without a token: the organization's service key acts for them. */
  async add(orgId: string, body: t.AddUser = {}): Promise<t.OrganizationUser> {
    const answer = await this.http.call("post", "/v1/organizations/{orgId}/users", {
      path: { orgId },
      body,
    });
    return answer.user;
  }

  /** The person's name (an org admin, the admin token, or the organization's key). */
  async rename(orgId: string, userId: string, name: string): Promise<t.OrganizationUser> {
    const answer = await this.http.call("patch", "/v1/organizations/{orgId}/users/{userId}", {
      path: { orgId, userId },
      body: { name },
    });
    return answer.user;
  }

  /** Erase the person, then remove their record and every token (the id is free again). */
  async delete(orgId: string, userId: string): Promise<t.ErasedUser> {
    return this.http.call("delete", "/v1/organizations/{orgId}/users/{userId}", {
      path: { orgId, userId },
    });
  }
}

export class Organizations extends Group {
  readonly serviceKeys = new ServiceKeys(this.http);
  readonly users = new OrganizationPeople(this.http);

  async getSettings(orgId: string): Promise<t.OrganizationSettings> {
    return this.http.call("get", "/v1/organizations/{orgId}/settings", { path: { orgId } });
  }

  /** A value sets, `null` resets to the default, a field left out keeps. */
  async patchSettings(orgId: string, patch: t.SettingsPatch): Promise<t.OrganizationSettings> {
    return this.http.call("patch", "/v1/organizations/{orgId}/settings", {
      path: { orgId },
      body: patch,
    });
  }

  /**
   * Erase one person across the organization (an organization admin). The API makes it
   * resumable and idempotent, so it is retried like a GET.
   */
  async eraseUser(orgId: string, userId: string): Promise<t.ErasedUser> {
    return this.http.call("post", "/v1/organizations/{orgId}/users/{userId}/erase", {
      path: { orgId, userId },
      idempotent: true,
    });
  }
}

/** An agent's memory (seed 000): entries at a version, changed by commands. */
export class AgentMemoryOfAgent extends Group {
  async get(agentId: string): Promise<t.AgentMemoryState> {
    return this.http.call("get", "/v1/agents/{agentId}/memory", { path: { agentId } });
  }

  /** Apply one command at version `expected`; stale: `VersionConflict`. */
  async command(agentId: string, body: t.AgentMemoryCommand): Promise<t.AgentMemoryState> {
    return this.http.call("post", "/v1/agents/{agentId}/memory", { path: { agentId }, body });
  }

  /**
   * Read the memory, `build` the command from it, apply it at that version; on
   * `VersionConflict` read and build again. `build` returning null applies nothing.
   */
  async update(
    agentId: string,
    build: (memory: t.AgentMemoryState) => t.AgentCommand | null,
    { attempts = 5 }: RetryOptions = {},
  ): Promise<t.AgentMemoryState> {
    return optimistic(
      VersionConflict,
      attempts,
      () => this.get(agentId),
      async (memory) => {
        const command = build(memory);
        return command === null ? memory : this.command(agentId, { expected: memory.version, command });
      },
    );
  }

  /** Changes newest first; `before` (a version) pages back. */
  async log(
    agentId: string,
    query: t.Query<"/v1/agents/{agentId}/memory/log", "get"> = {},
  ): Promise<t.AgentMemoryChange[]> {
    const answer = await this.http.call("get", "/v1/agents/{agentId}/memory/log", {
      path: { agentId },
      query,
    });
    return answer.changes;
  }

  /** Every change, newest first, across pages. */
  async *iterateLog(
    agentId: string,
    { pageSize = 100 }: PageOptions = {},
  ): AsyncGenerator<t.AgentMemoryChange, void, undefined> {
    let before: number | undefined;
    for (;;) {
      const page = await this.log(agentId, { limit: pageSize, before });
      yield* page;
      const last = page[page.length - 1];
      if (last === undefined || page.length < pageSize || last.version <= 1) return;
      before = last.version;
    }
  }

  /** What the agent's model is given. */
  async text(agentId: string): Promise<t.MemoryText> {
    return this.http.call("get", "/v1/agents/{agentId}/memory/text", { path: { agentId } });
  }
}

export class Agents extends Group {
  readonly memory = new AgentMemoryOfAgent(this.http);

  async create(body: t.CreateAgent): Promise<t.Agent> {
    return (await this.http.call("post", "/v1/agents", { body })).agent;
  }

  /** An agent (its owner or a member). */
  async get(agentId: string): Promise<t.Agent> {
    return (await this.http.call("get", "/v1/agents/{agentId}", { path: { agentId } })).agent;
  }

  async list(query: t.Query<"/v1/agents", "get"> = {}): Promise<t.AgentList> {
    return this.http.call("get", "/v1/agents", { query });
  }

  /** Every agent the caller may see, newest first, across pages. */
  iterate({ pageSize = 100 }: PageOptions = {}): AsyncGenerator<t.Agent, void, undefined> {
    return pages(
      (after) => this.list({ limit: pageSize, starting_after: after }),
      (page) => ({ items: page.data, hasMore: page.has_more }),
      (agent) => agent.id,
    );
  }

  async delete(agentId: string): Promise<t.DeletedAgent> {
    return this.http.call("delete", "/v1/agents/{agentId}", { path: { agentId } });
  }

  /** One execution per completed turn of the agent's sessions, newest first. */
  async learning(agentId: string): Promise<t.Execution[]> {
    const answer = await this.http.call("get", "/v1/agents/{agentId}/learning", {
      path: { agentId },
    });
    return answer.executions;
  }

  // Versions and memory options (seed 003): edit the draft, publish, activate.

  async getDraft(agentId: string): Promise<t.Draft> {
    return (await this.http.call("get", "/v1/agents/{agentId}/draft", { path: { agentId } })).draft;
  }

  /** Replace the draft's `memory` block (`null` restores the platform defaults). */
  async patchDraft(agentId: string, memory: t.PatchDraft["memory"]): Promise<t.Draft> {
    const answer = await this.http.call("patch", "/v1/agents/{agentId}/draft", {
      path: { agentId },
      body: { memory },
    });
    return answer.draft;
  }

  async publish(agentId: string): Promise<t.Version> {
    const answer = await this.http.call("post", "/v1/agents/{agentId}/publish", {
      path: { agentId },
      body: {},
    });
    return answer.version;
  }

  /** Published versions newest first (`before` pages back), and the active one's number. */
  async versions(
    agentId: string,
    query: t.Query<"/v1/agents/{agentId}/versions", "get"> = {},
  ): Promise<t.Versions> {
    return this.http.call("get", "/v1/agents/{agentId}/versions", { path: { agentId }, query });
  }

  /** Make version `n` the one threads use; answers the active number. */
  async activate(agentId: string, n: number): Promise<number> {
    const answer = await this.http.call("post", "/v1/agents/{agentId}/versions/{n}/activate", {
      path: { agentId, n },
      body: {},
    });
    return answer.active;
  }
}

export class SessionItems extends Group {
  async list(
    sessionId: string,
    query: t.Query<"/v1/sessions/{sessionId}/items", "get"> = {},
  ): Promise<t.SessionItemList> {
    return this.http.call("get", "/v1/sessions/{sessionId}/items", {
      path: { sessionId },
      query,
    });
  }

  /** The session's history, oldest first, across pages. */
  iterate(
    sessionId: string,
    { pageSize = 100 }: PageOptions = {},
  ): AsyncGenerator<t.SessionItem, void, undefined> {
    return pages(
      (after) => this.list(sessionId, { limit: pageSize, starting_after: after }),
      (page) => ({ items: page.data, hasMore: page.has_more }),
      (item) => item.id,
    );
  }
}

/** A session's memory (seed 000): entries learned from its turns, changed by commands. */
export class SessionMemoryOfSession extends Group {
  constructor(
    http: Transport,
    private readonly sessions: Sessions,
  ) {
    super(http);
  }

  async get(sessionId: string): Promise<t.SessionMemory> {
    return this.http.call("get", "/v1/sessions/{sessionId}/memory", { path: { sessionId } });
  }

  /** Apply one command at `expected` head and `revision`; stale: `SessionConflict`. */
  async command(sessionId: string, body: t.SessionMemoryCommand): Promise<t.Session> {
    const answer = await this.http.call("post", "/v1/sessions/{sessionId}/memory", {
      path: { sessionId },
      body,
    });
    return answer.session;
  }

  /**
   * Read the session and its memory, `build` the command from them, apply it; on
   * `SessionConflict` read and build again. `build` returning null applies nothing.
   */
  async update(
    sessionId: string,
    build: (session: t.Session, memory: t.SessionMemory) => t.SessionCommand | null,
    { attempts = 5 }: RetryOptions = {},
  ): Promise<t.Session> {
    const read = async () => {
      const session = await this.sessions.get(sessionId);
      return { session, memory: await this.get(sessionId) };
    };
    return optimistic(SessionConflict, attempts, read, async ({ session, memory }) => {
      const command = build(session, memory);
      if (command === null) return session;
      return this.command(sessionId, {
        expected: session.head,
        revision: session.revision,
        command,
      });
    });
  }

  /** What the agent's model is given (`text` is "" when the memory's `use` is off). */
  async text(sessionId: string): Promise<t.MemoryText> {
    return this.http.call("get", "/v1/sessions/{sessionId}/memory/text", {
      path: { sessionId },
    });
  }
}

export class Sessions extends Group {
  readonly items = new SessionItems(this.http);
  readonly memory = new SessionMemoryOfSession(this.http, this);

  /** `model` left out: the deployment's default model; `null`: a session without a model. */
  async create(body: t.CreateSession): Promise<t.Session> {
    return (await this.http.call("post", "/v1/sessions", { body })).session;
  }

  async get(sessionId: string): Promise<t.Session> {
    const answer = await this.http.call("get", "/v1/sessions/{sessionId}", {
      path: { sessionId },
    });
    return answer.session;
  }

  async list(query: t.Query<"/v1/sessions", "get">): Promise<t.SessionList> {
    return this.http.call("get", "/v1/sessions", { query });
  }

  /** Every session of an agent, newest first, across pages. */
  iterate({
    agentId,
    pageSize = 100,
  }: { agentId: string } & PageOptions): AsyncGenerator<t.Session, void, undefined> {
    return pages(
      (after) => this.list({ agentId, limit: pageSize, starting_after: after }),
      (page) => ({ items: page.data, hasMore: page.has_more }),
      (session) => session.id,
    );
  }

  async delete(sessionId: string): Promise<t.DeletedSession> {
    return this.http.call("delete", "/v1/sessions/{sessionId}", { path: { sessionId } });
  }

  /** Add a turn's items; the answer says whether learning started. */
  async postTurn(sessionId: string, body: t.PostTurn): Promise<t.TurnAnswer> {
    return this.http.call("post", "/v1/sessions/{sessionId}/turns", { path: { sessionId }, body });
  }

  /** A new session starting with this one's head and revision. */
  async fork(sessionId: string): Promise<t.Session> {
    const answer = await this.http.call("post", "/v1/sessions/{sessionId}/fork", {
      path: { sessionId },
      body: {},
    });
    return answer.session;
  }

  /** A subagent session becomes an agent (any other kind: `SessionConflict`). */
  async promote(sessionId: string, body: t.Promote = {}): Promise<t.Agent> {
    const answer = await this.http.call("post", "/v1/sessions/{sessionId}/promote", {
      path: { sessionId },
      body,
    });
    return answer.agent;
  }

  /** The session's learning executions, newest first. */
  async learning(sessionId: string): Promise<t.Execution[]> {
    const answer = await this.http.call("get", "/v1/sessions/{sessionId}/learning", {
      path: { sessionId },
    });
    return answer.executions;
  }
}

/** Agent memories (seed 004): notes an agent keeps, recalled by importance or meaning. */
export class AgentMemories extends Group {
  async create(body: t.CreateAgentMemory): Promise<t.AgentMemoryObject> {
    return this.http.call("post", "/v1/agent_memories", { body });
  }

  /** One memory by id (expired ones too). */
  async get(memoryId: string): Promise<t.AgentMemoryObject> {
    return this.http.call("get", "/v1/agent_memories/{memoryId}", { path: { memoryId } });
  }

  /** Only the fields given change; `null` clears entity, metadata and expires_at. */
  async update(memoryId: string, patch: t.UpdateAgentMemory): Promise<t.AgentMemoryObject> {
    return this.http.call("patch", "/v1/agent_memories/{memoryId}", {
      path: { memoryId },
      body: patch,
    });
  }

  async delete(memoryId: string): Promise<t.DeletedAgentMemory> {
    return this.http.call("delete", "/v1/agent_memories/{memoryId}", { path: { memoryId } });
  }

  /** Unexpired memories, newest first: one page (`limit` 1..100, default 10). */
  async list(query: t.Query<"/v1/agent_memories", "get"> = {}): Promise<t.AgentMemoryList> {
    return this.http.call("get", "/v1/agent_memories", { query });
  }

  /** Every unexpired memory of the caller, newest first, across pages. */
  iterate({
    category,
    entity,
    pageSize = 100,
  }: Pick<t.Query<"/v1/agent_memories", "get">, "category" | "entity"> &
    PageOptions = {}): AsyncGenerator<t.AgentMemoryObject, void, undefined> {
    return pages(
      (after) => this.list({ limit: pageSize, starting_after: after, category, entity }),
      (page) => ({ items: page.data, hasMore: page.has_more }),
      (memory) => memory.id,
    );
  }

  /** Unexpired memories, highest importance first (with `query`, closest in meaning first). */
  async recall(body: t.RecallAgentMemories = {}): Promise<t.AgentMemoryList> {
    return this.http.call("post", "/v1/agent_memories/recall", { body });
  }
}

/** A bot's memory (seed 002): entries per person, channel or bot, learned from its chats. */
export class BotMemoryOfBot extends Group {
  /** Entries for the caller that carry all of `tags`. */
  async get(botId: string, { tags }: { tags?: string[] } = {}): Promise<t.BotMemory> {
    return this.http.call("get", "/v1/bots/{botId}/memory", {
      path: { botId },
      query: tags && tags.length > 0 ? { tags } : {},
    });
  }

  async remember(
    botId: string,
    { content, tags }: { content: string; tags?: string[] },
  ): Promise<t.BotMemoryChange> {
    return this.http.call("post", "/v1/bots/{botId}/memory", {
      path: { botId },
      body: { command: { _tag: "Remember", content, tags: tags ?? [] } },
    });
  }

  /** Stop an entry being for the caller (not theirs, or unknown: `EntryConflict`). */
  async forget(botId: string, entryId: string): Promise<t.BotMemoryChange> {
    return this.http.call("post", "/v1/bots/{botId}/memory", {
      path: { botId },
      body: { command: { _tag: "Forget", id: entryId } },
    });
  }

  /** Changes newest first, of entries the caller may see; `before` (a version) pages back. */
  async log(
    botId: string,
    query: t.Query<"/v1/bots/{botId}/memory/log", "get"> = {},
  ): Promise<t.BotLogChange[]> {
    const answer = await this.http.call("get", "/v1/bots/{botId}/memory/log", {
      path: { botId },
      query,
    });
    return answer.changes;
  }

  /**
   * Remove every entry carrying `tag`; answers how many. The API makes it resumable and
   * idempotent (repeat until it is done), so it is retried like a GET.
   */
  async purge(botId: string, tag: string): Promise<number> {
    const answer = await this.http.call("post", "/v1/bots/{botId}/memory/purge", {
      path: { botId },
      body: { tag },
      idempotent: true,
    });
    return answer.removed;
  }

  /** The memory text for a chat: only entries every reader of that chat may see. */
  async context(botId: string, body: t.ContextAsk): Promise<t.BotContext> {
    return this.http.call("post", "/v1/bots/{botId}/memory/context", { path: { botId }, body });
  }

  /** Widen an entry's audience (`for:channel:<id>` or `for:bot`) when its sources allow. */
  async share(botId: string, body: t.Share): Promise<t.SharedEntry> {
    return this.http.call("post", "/v1/bots/{botId}/memory/share", { path: { botId }, body });
  }
}

/** The memory bot's settings (instructions, concurrency, budget), at a version. */
export class BotSettingsOfBot extends Group {
  async get(botId: string): Promise<t.BotSettings> {
    return this.http.call("get", "/v1/bots/{botId}/memory/bot", { path: { botId } });
  }

  /** Change at version `expected`; stale: `VersionConflict`. */
  async patch(botId: string, patch: t.BotSettingsPatch): Promise<t.BotSettings> {
    return this.http.call("patch", "/v1/bots/{botId}/memory/bot", { path: { botId }, body: patch });
  }

  /**
   * Read the settings, `build` the fields to change, apply them at that version; on
   * `VersionConflict` read and build again. `build` returning null changes nothing.
   */
  async update(
    botId: string,
    build: (settings: t.BotSettings) => Omit<t.BotSettingsPatch, "expected"> | null,
    { attempts = 5 }: RetryOptions = {},
  ): Promise<t.BotSettings> {
    return optimistic(
      VersionConflict,
      attempts,
      () => this.get(botId),
      async (settings) => {
        const change = build(settings);
        return change === null ? settings : this.patch(botId, { ...change, expected: settings.version });
      },
    );
  }
}

export class Bots extends Group {
  readonly memory = new BotMemoryOfBot(this.http);
  readonly settings = new BotSettingsOfBot(this.http);

  /** A bot; the creator has write. */
  async create(body: t.CreateBot): Promise<t.Bot> {
    return (await this.http.call("post", "/v1/bots", { body })).bot;
  }

  async get(botId: string): Promise<t.Bot> {
    return (await this.http.call("get", "/v1/bots/{botId}", { path: { botId } })).bot;
  }

  /** One page of the bots the caller reaches (a grant, a link), newest first. */
  async list(query: t.Query<"/v1/bots", "get"> = {}): Promise<t.BotList> {
    return this.http.call("get", "/v1/bots", { query });
  }

  /** Every bot the caller reaches, newest first, across pages. */
  iterate({ pageSize = 100 }: PageOptions = {}): AsyncGenerator<t.Bot, void, undefined> {
    return pages(
      (after) => this.list({ limit: pageSize, starting_after: after }),
      (page) => ({ items: page.bots, hasMore: page.has_more }),
      (bot) => bot.id,
    );
  }

  /**
   * Link another organization, or change its people's grants: a level sets one, `null`
   * removes it, people not named keep theirs.
   */
  async link(botId: string, body: t.CreateLink): Promise<t.Link> {
    const answer = await this.http.call("post", "/v1/bots/{botId}/links", { path: { botId }, body });
    return answer.link;
  }

  /** Learning executions: a writer sees its organization's, anyone else their own chats'. */
  async learning(botId: string): Promise<t.BotExecution[]> {
    const answer = await this.http.call("get", "/v1/bots/{botId}/learning", { path: { botId } });
    return answer.executions;
  }
}

export class Channels extends Group {
  /** A channel; the creator is a member. */
  async create(body: t.CreateChannel): Promise<t.Channel> {
    return (await this.http.call("post", "/v1/channels", { body })).channel;
  }

  /** One page of the caller's channels (an organization admin: all), newest first. */
  async list(query: t.Query<"/v1/channels", "get"> = {}): Promise<t.ChannelList> {
    return this.http.call("get", "/v1/channels", { query });
  }

  /** Every channel of the caller, newest first, across pages. */
  iterate({ pageSize = 100 }: PageOptions = {}): AsyncGenerator<t.Channel, void, undefined> {
    return pages(
      (after) => this.list({ limit: pageSize, starting_after: after }),
      (page) => ({ items: page.channels, hasMore: page.has_more }),
      (channel) => channel.id,
    );
  }

  /** The channel's creator or an organization admin. */
  async changeMembers(channelId: string, body: t.ChangeMembers): Promise<t.Channel> {
    const answer = await this.http.call("post", "/v1/channels/{channelId}/members", {
      path: { channelId },
      body,
    });
    return answer.channel;
  }
}

export class ChatItems extends Group {
  /** The history oldest first (`after`: an item id), keeping the person's own words. */
  async list(
    chatId: string,
    query: t.Query<"/v1/chats/{chatId}/items", "get"> = {},
  ): Promise<t.ChatItem[]> {
    const answer = await this.http.call("get", "/v1/chats/{chatId}/items", {
      path: { chatId },
      query,
    });
    return answer.items;
  }

  /** Delete the chat's history (its owner); learned memory stays until purged. */
  async delete(chatId: string): Promise<void> {
    await this.http.call("delete", "/v1/chats/{chatId}/items", { path: { chatId } });
  }
}

/** A chat's Turns: a person's input, the bot's items, confide, complete. */
export class ChatTurns extends Group {
  /** Start a Turn with the caller as its actor; `input` is what the bot's model should see. */
  async start(chatId: string, body: t.StartTurn): Promise<t.TurnStarted> {
    return this.http.call("post", "/v1/chats/{chatId}/turns", { path: { chatId }, body });
  }

  /** The Turn and its status now (`abandoned`: not completed within 24 hours). */
  async get(chatId: string, turnId: string): Promise<t.ChatTurn> {
    const answer = await this.http.call("get", "/v1/chats/{chatId}/turns/{turnId}", {
      path: { chatId, turnId },
    });
    return answer.turn;
  }

  /** The bot's words, tool results (`app`), notices; answers their ids. */
  async addItems(chatId: string, turnId: string, items: t.ItemIn[]): Promise<string[]> {
    const answer = await this.http.call("post", "/v1/chats/{chatId}/turns/{turnId}/items", {
      path: { chatId, turnId },
      body: { items },
    });
    return answer.itemIds;
  }

  /** The bot's confession; `calm` when the fixed calm answer was given. */
  async confide(chatId: string, turnId: string, text: string): Promise<t.ConfideAnswered> {
    return this.http.call("post", "/v1/chats/{chatId}/turns/{turnId}/confide", {
      path: { chatId, turnId },
      body: { text },
    });
  }

  /** Complete the Turn; with `items`, the bot's last words are saved in the same request. */
  async complete(chatId: string, turnId: string, body: t.CompleteTurn = {}): Promise<t.TurnCompleted> {
    return this.http.call("post", "/v1/chats/{chatId}/turns/{turnId}/complete", {
      path: { chatId, turnId },
      body,
    });
  }
}

export class Chats extends Group {
  readonly items = new ChatItems(this.http);
  readonly turns = new ChatTurns(this.http);

  async create(body: t.CreateChat): Promise<t.Chat> {
    return (await this.http.call("post", "/v1/chats", { body })).chat;
  }

  /** One page of the chats the caller owns or started a turn in, newest first. */
  async list(query: t.Query<"/v1/chats", "get"> = {}): Promise<t.ChatList> {
    return this.http.call("get", "/v1/chats", { query });
  }

  /** Every chat of the caller (of one bot, when given), newest first, across pages. */
  iterate({
    botId,
    pageSize = 100,
  }: Pick<t.Query<"/v1/chats", "get">, "botId"> & PageOptions = {}): AsyncGenerator<
    t.Chat,
    void,
    undefined
  > {
    return pages(
      (after) => this.list({ botId, limit: pageSize, starting_after: after }),
      (page) => ({ items: page.chats, hasMore: page.has_more }),
      (chat) => chat.id,
    );
  }

  /** The chat's confide calls (its owner only). */
  async confessions(chatId: string): Promise<t.Confession[]> {
    const answer = await this.http.call("get", "/v1/chats/{chatId}/confessions", {
      path: { chatId },
    });
    return answer.confessions;
  }

  /** The inputs the memory bot rewrote (its owner only). */
  async enrichments(chatId: string): Promise<t.Enrichment[]> {
    const answer = await this.http.call("get", "/v1/chats/{chatId}/enrichments", {
      path: { chatId },
    });
    return answer.enrichments;
  }
}

export class ThreadMessages extends Group {
  /** Save messages; an agent version with readOnly saves nothing (`[]`). */
  async save(threadId: string, messages: t.MessageIn[]): Promise<string[]> {
    const answer = await this.http.call("post", "/v1/threads/{threadId}/messages", {
      path: { threadId },
      body: { messages },
    });
    return answer.messageIds;
  }

  /** Chronological; with `limit`, the latest `limit` in chronological order. */
  async list(
    threadId: string,
    query: t.Query<"/v1/threads/{threadId}/messages", "get"> = {},
  ): Promise<t.Message[]> {
    const answer = await this.http.call("get", "/v1/threads/{threadId}/messages", {
      path: { threadId },
      query,
    });
    return answer.messages;
  }

  /**
   * Remove and return the latest message (null: the thread has none). A DELETE, but not one
   * to repeat blindly: a second call would remove the message before, so it is not retried.
   */
  async popLast(threadId: string): Promise<t.Message | null> {
    const answer = await this.http.call("delete", "/v1/threads/{threadId}/messages/last", {
      path: { threadId },
      idempotent: false,
    });
    return answer.message;
  }

  /** Clear the thread's messages (its working memory stays). */
  async clear(threadId: string): Promise<void> {
    await this.http.call("delete", "/v1/threads/{threadId}/messages", { path: { threadId } });
  }
}

export class ThreadWorkingMemory extends Group {
  async get(threadId: string): Promise<t.WorkingMemory> {
    return this.http.call("get", "/v1/threads/{threadId}/working-memory", {
      path: { threadId },
    });
  }

  /** Replace it (validated against the agent's schema when one is set). */
  async put(threadId: string, content: t.WorkingMemoryIn["content"]): Promise<t.WorkingMemory> {
    return this.http.call("put", "/v1/threads/{threadId}/working-memory", {
      path: { threadId },
      body: { content },
    });
  }
}

/** Threads (seed 003): a user's conversations with an agent, and what its model is given. */
export class Threads extends Group {
  readonly messages = new ThreadMessages(this.http);
  readonly workingMemory = new ThreadWorkingMemory(this.http);

  /** A thread of the caller (`resourceId` naming another user is a 403). */
  async create(body: t.CreateThread): Promise<t.Thread> {
    return (await this.http.call("post", "/v1/threads", { body })).thread;
  }

  async get(threadId: string): Promise<t.Thread> {
    const answer = await this.http.call("get", "/v1/threads/{threadId}", { path: { threadId } });
    return answer.thread;
  }

  /** Set the title and/or replace the metadata (`{}` clears it); a title set here is kept. */
  async update(threadId: string, body: t.UpdateThread): Promise<t.Thread> {
    const answer = await this.http.call("patch", "/v1/threads/{threadId}", {
      path: { threadId },
      body,
    });
    return answer.thread;
  }

  /** The thread with its messages, working memory, observations and recall vectors. */
  async delete(threadId: string): Promise<t.DeletedThread> {
    return this.http.call("delete", "/v1/threads/{threadId}", { path: { threadId } });
  }

  /** One page of the caller's threads, newest first, with titles. */
  async list(query: t.Query<"/v1/threads", "get"> = {}): Promise<t.ThreadList> {
    return this.http.call("get", "/v1/threads", { query });
  }

  /** Every thread of the caller (of one agent, when given), newest first, across pages. */
  iterate({
    agentId,
    resourceId,
    pageSize = 100,
  }: Pick<t.Query<"/v1/threads", "get">, "agentId" | "resourceId"> &
    PageOptions = {}): AsyncGenerator<t.Thread, void, undefined> {
    return pages(
      (after) => this.list({ agentId, resourceId, limit: pageSize, starting_after: after }),
      (page) => ({ items: page.threads, hasMore: page.has_more }),
      (thread) => thread.id,
    );
  }

  /** The thread's background runs (titles, observations), newest first. */
  async learning(threadId: string): Promise<t.Execution[]> {
    const answer = await this.http.call("get", "/v1/threads/{threadId}/learning", {
      path: { threadId },
    });
    return answer.executions;
  }

  /** What the agent's model gets for this turn: history, recall, working memory, tools. */
  async context(threadId: string, message?: string): Promise<t.ThreadContext> {
    return this.http.call("post", "/v1/threads/{threadId}/context", {
      path: { threadId },
      body: message === undefined ? {} : { message: { role: "user", content: message } },
    });
  }

  /** The observation log (every observation made, buffered or active). */
  async observations(threadId: string): Promise<t.ObservationLog> {
    return this.http.call("get", "/v1/threads/{threadId}/observations", { path: { threadId } });
  }

  /**
   * Messages matching `query` (the `recall` tool of observationalMemory.retrieval; without
   * it, `ThreadConflict`).
   */
  async recall(threadId: string, body: t.ThreadRecall): Promise<t.RecalledMessage[]> {
    const answer = await this.http.call("post", "/v1/threads/{threadId}/recall", {
      path: { threadId },
      body,
    });
    return answer.messages;
  }
}

export class Events extends Group {
  /**
   * What changed after the cursor `after`, oldest first; pass the answer's `next` as the
   * following `after` (an empty page still moves `next` on).
   */
  async list(query: t.Query<"/v1/events", "get"> = {}, signal?: AbortSignal): Promise<t.EventPage> {
    return this.http.call("get", "/v1/events", { query, signal });
  }

  /** The feed from `after` on, page by page; see `EventFeed` for when it ends. */
  iterate(options: EventFeedOptions = {}): EventFeed<t.Event> {
    return new EventFeed(
      (after, signal) => this.list({ after, limit: options.limit }, signal),
      options,
    );
  }
}

/**
 * The agent-memory API over HTTP with one bearer token.
 *
 * ```ts
 * const client = new AgentMemory({ baseUrl: "http://127.0.0.1:8080", token });
 * const agent = await client.agents.create({ name: "travel-planner" });
 * ```
 *
 * Error answers throw `AgentMemoryError` subclasses (`NotFound`, `ValidationError`,
 * `SessionConflict`, ...). A 429 is retried for every call, waiting what `Retry-After` says;
 * a 5xx or a lost connection only for idempotent calls (see `ClientOptions`).
 */
export class AgentMemory {
  readonly admin: Admin;
  readonly organizations: Organizations;
  readonly agents: Agents;
  readonly sessions: Sessions;
  readonly agentMemories: AgentMemories;
  readonly bots: Bots;
  readonly channels: Channels;
  readonly chats: Chats;
  readonly threads: Threads;
  readonly events: Events;
  private readonly http: Transport;
  private readonly options: ClientOptions;

  constructor(options: ClientOptions) {
    this.options = options;
    this.http = new Transport(options);
    this.admin = new Admin(this.http);
    this.organizations = new Organizations(this.http);
    this.agents = new Agents(this.http);
    this.sessions = new Sessions(this.http);
    this.agentMemories = new AgentMemories(this.http);
    this.bots = new Bots(this.http);
    this.channels = new Channels(this.http);
    this.chats = new Chats(this.http);
    this.threads = new Threads(this.http);
    this.events = new Events(this.http);
  }

  get baseUrl(): string {
    return this.http.baseUrl;
  }

  /**
   * The same client acting for `userId` of the service key's organization (`Act-As`): every
   * rule of every route is then that person's.
   */
  actingFor(userId: string): AgentMemory {
    return new AgentMemory({ ...this.options, actAs: userId });
  }

  /** Liveness (needs no token). */
  async health(): Promise<t.Health> {
    return this.http.call("get", "/healthz");
  }

  /** Who this client's token is (user, organization, role). */
  async me(): Promise<t.Caller> {
    return (await this.http.call("get", "/v1/me")).user;
  }

  /** The tokens this client's person holds: who issued each and when. */
  async myTokens(): Promise<t.MyToken[]> {
    return (await this.http.call("get", "/v1/me/tokens")).tokens;
  }

  /** One more token for this client's person, beside the others (shown once). */
  async addMyToken(): Promise<t.IssuedToken> {
    return this.http.call("post", "/v1/me/tokens", { body: {} });
  }

  /** Revoke one of this client's person's own tokens. */
  async revokeMyToken(tokenPrefix: string): Promise<void> {
    await this.http.call("delete", "/v1/me/tokens/{tokenPrefix}", { path: { tokenPrefix } });
  }

  /**
   * This client's person's export, a line at a time as the service streams it: first
   * `{format: "agent-memory-export", version, userId, organizationId, exportedAt}`, then each
   * object as its read route answers it with its `type`, last `{type: "end", lines}` (an
   * export cut short has none).
   */
  export(signal?: AbortSignal): AsyncGenerator<Record<string, unknown>> {
    return this.http.lines("get", "/v1/me/export", signal);
  }

  /** What the deployment can run: model providers, allowed models, embedders. */
  async capabilities(): Promise<t.Capabilities> {
    return this.http.call("get", "/v1/capabilities");
  }

  /**
   * Any request, for a route this client has no method for yet: `path` relative to
   * `baseUrl` (query in `options.query`); the same headers, retries and errors.
   */
  async request<T = unknown>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    return (await this.http.request(method.toUpperCase(), path, options)) as T;
  }
}
