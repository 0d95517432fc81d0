/**
 * A Mastra (`@mastra/core` 1.x) storage adapter for the memory domain, kept in the
 * agent-memory service's threads.
 *
 * - A Mastra thread is a service thread of one agent (`POST /v1/threads`). The service picks
 *   thread ids and has no thread metadata, rename or delete route, so each person keeps one
 *   more service thread, the *index*: an append-only log of records (Mastra thread id ->
 *   service thread id, title, metadata, resource, tombstones; resources' working memory and
 *   metadata). The index is read on every lookup, so several processes see each other's
 *   writes, but two processes writing the same person's index at once are not serialized.
 * - A Mastra message is a service message: `content` holds its text (what the service's own
 *   title, observer, embedding and context work read), `item` holds the whole Mastra message
 *   (`MastraDBMessage`, with Mastra's own id), returned exactly as sent.
 * - Messages cannot be changed in place: an update or deletion of messages, or a save of an
 *   id the thread already holds, clears the thread's messages and writes them again.
 */
import type { AgentMemory, Message } from "@agent-memory/client";
import type { MastraDBMessage, StorageThreadType } from "@mastra/core/memory";
import { MastraCompositeStore, MemoryStorage } from "@mastra/core/storage";
import type {
  StorageCloneThreadInput,
  StorageCopyThreadOutput,
  StorageListMessagesByResourceIdInput,
  StorageListMessagesInput,
  StorageListMessagesOutput,
  StorageListThreadsInput,
  StorageListThreadsOutput,
  StorageResourceType,
} from "@mastra/core/storage";

/** Marks the service messages this adapter writes. */
const MARK = "agentMemoryMastra";
const INDEX_CONTENT = "[mastra thread index: not a conversation]";
/** Rewrite the index folded once it holds this many records (the service lists 1000 at most). */
const COMPACT_AT = 600;

export interface AgentMemoryStoreOptions {
  /** A client of the service: a person's token, or a service key (see `actAsResource`). */
  client: AgentMemory;
  /** The service agent whose threads hold Mastra's threads. */
  agentId: string;
  /**
   * With a service key: act for each Mastra `resourceId` as that person of the organization
   * (`Act-As`), so each resource is its own person (its recall and working memory never
   * cross). Without it (default), every resource is kept in the one person's threads and
   * the adapter keeps resources apart.
   */
  actAsResource?: boolean;
  /**
   * With `actAsResource`: the resource of a Mastra thread, for the calls Mastra makes with a
   * thread id alone (`getThreadById({ threadId })`, `listMessagesById`, ...) about a thread
   * this process has not seen yet (after a restart, say). Without it such a call searches
   * only the resources this process has seen. Example: thread ids made as `${userId}:...`.
   */
  resolveResource?: (threadId: string) => string | undefined | Promise<string | undefined>;
  /**
   * Rewrite a person's index folded (one record a thread and a resource) once it holds this
   * many records (default 600; at most 900, since the service lists 1000 messages at most).
   */
  indexCompactAt?: number;
  /** The Mastra store's id (default `agent-memory`). */
  id?: string;
}

interface ThreadRecord {
  kind: "thread";
  id: string;
  serviceThreadId: string;
  resourceId: string;
  title?: string;
  metadata?: Record<string, unknown>;
  createdAt: string;
  updatedAt: string;
  deleted?: boolean;
}

interface ResourceRecord {
  kind: "resource";
  id: string;
  workingMemory?: string;
  metadata?: Record<string, unknown>;
  createdAt: string;
  updatedAt: string;
}

/**
 * A change of some fields of a thread (title, metadata, updatedAt, deleted), folded over its
 * record: two changes of different fields made at once (a title Mastra generates while its
 * messages are saved) do not undo each other.
 */
interface ThreadPatch {
  kind: "thread-patch";
  id: string;
  updatedAt: string;
  title?: string;
  metadata?: Record<string, unknown>;
  deleted?: boolean;
}

type IndexRecord = ThreadRecord | ThreadPatch | ResourceRecord;

function fold(state: Pick<IndexState, "threads" | "resources">, record: IndexRecord): void {
  if (record.kind === "thread") state.threads.set(record.id, record);
  else if (record.kind === "resource") state.resources.set(record.id, record);
  else {
    const current = state.threads.get(record.id);
    if (!current) return;
    const { kind: _kind, ...fields } = record;
    state.threads.set(record.id, { ...current, ...fields });
  }
}

interface IndexState {
  threads: Map<string, ThreadRecord>;
  resources: Map<string, ResourceRecord>;
  records: number;
}

/** A stored Mastra message, as kept in a service message's `item`. */
interface StoredMessage {
  [MARK]: "message";
  message: Omit<MastraDBMessage, "createdAt"> & { createdAt: string };
}

/** A person of the service: a client, and (once found) the id of their index thread. */
interface Person {
  client: AgentMemory;
  indexThreadId?: Promise<string>;
}

function textOf(message: MastraDBMessage): string {
  const content = message.content;
  const parts = Array.isArray(content?.parts) ? content.parts : [];
  const text = parts
    .map((part) => (part && part.type === "text" && typeof part.text === "string" ? part.text : ""))
    .filter((piece) => piece.length > 0)
    .join("\n");
  if (text) return text;
  return typeof content?.content === "string" ? content.content : "";
}

function toStored(message: MastraDBMessage): StoredMessage {
  const createdAt = message.createdAt instanceof Date ? message.createdAt : new Date(message.createdAt ?? Date.now());
  return { [MARK]: "message", message: { ...message, createdAt: createdAt.toISOString() } };
}

function fromStored(stored: StoredMessage): MastraDBMessage {
  return { ...stored.message, createdAt: new Date(stored.message.createdAt) } as MastraDBMessage;
}

function storedOf(message: Message): StoredMessage | null {
  const item = (message as Record<string, unknown>)["item"];
  if (item && typeof item === "object" && (item as Record<string, unknown>)[MARK] === "message") {
    return item as StoredMessage;
  }
  return null;
}

function threadOf(record: ThreadRecord): StorageThreadType {
  const thread: StorageThreadType = {
    id: record.id,
    resourceId: record.resourceId,
    createdAt: new Date(record.createdAt),
    updatedAt: new Date(record.updatedAt),
  };
  if (record.title !== undefined) thread.title = record.title;
  if (record.metadata !== undefined) thread.metadata = record.metadata;
  return thread;
}

function resourceOf(record: ResourceRecord): StorageResourceType {
  const resource: StorageResourceType = {
    id: record.id,
    createdAt: new Date(record.createdAt),
    updatedAt: new Date(record.updatedAt),
  };
  if (record.workingMemory !== undefined) resource.workingMemory = record.workingMemory;
  if (record.metadata !== undefined) resource.metadata = record.metadata;
  return resource;
}

function serviceRole(role: string): "user" | "assistant" | "system" {
  return role === "user" || role === "system" ? role : "assistant";
}

function time(value: Date | string | number | undefined): number {
  return value instanceof Date ? value.getTime() : new Date(value ?? 0).getTime();
}

/** Thrown when Mastra asks for something the service cannot do. */
export class UnsupportedByService extends Error {
  constructor(what: string) {
    super(`agent-memory service: ${what}`);
    this.name = "UnsupportedByService";
  }
}

/** The memory domain (`MemoryStorage`) kept in the service's threads. */
export class AgentMemoryMemoryStorage extends MemoryStorage {
  override readonly supportsPartialThreadUpdate = true;
  private readonly client: AgentMemory;
  private readonly agentId: string;
  private readonly actAsResource: boolean;
  private readonly resolveResource: AgentMemoryStoreOptions["resolveResource"];
  private readonly compactAt: number;
  private readonly people = new Map<string, Person>();
  /** Mastra thread id -> resource id, for lookups Mastra makes without a resource. */
  private readonly resourceOfThread = new Map<string, string>();

  constructor(options: AgentMemoryStoreOptions) {
    super();
    this.client = options.client;
    this.agentId = options.agentId;
    this.actAsResource = options.actAsResource ?? false;
    this.resolveResource = options.resolveResource;
    this.compactAt = Math.max(2, Math.min(900, options.indexCompactAt ?? COMPACT_AT));
  }

  // ---- people and the index ------------------------------------------------------------

  private person(resourceId: string | undefined): Person {
    const key = this.actAsResource ? resourceId : "";
    if (key === undefined) {
      throw new UnsupportedByService("with actAsResource, a call needs a resourceId (or a thread this process has seen)");
    }
    let person = this.people.get(key);
    if (!person) {
      person = { client: this.actAsResource ? this.client.actingFor(key) : this.client };
      this.people.set(key, person);
    }
    return person;
  }

  /** The people to search for a thread or message whose resource is not known. */
  private async candidates(threadId?: string): Promise<Person[]> {
    if (!this.actAsResource) return [this.person(undefined)];
    if (threadId !== undefined) {
      const known = this.resourceOfThread.get(threadId) ?? (await this.resolveResource?.(threadId));
      if (known !== undefined) return [this.person(known)];
    }
    return [...this.people.values()];
  }

  private indexThreadId(person: Person): Promise<string> {
    if (!person.indexThreadId) {
      person.indexThreadId = this.findOrCreateIndex(person).catch((error: unknown) => {
        person.indexThreadId = undefined;
        throw error;
      });
    }
    return person.indexThreadId;
  }

  private async findOrCreateIndex(person: Person): Promise<string> {
    const threads: { id: string }[] = [];
    for await (const thread of person.client.threads.iterate({ agentId: this.agentId })) threads.push(thread);
    // Newest first: the index is the first thread this adapter made, so look from the oldest.
    for (const thread of threads.reverse()) {
      const [last] = await person.client.threads.messages.list(thread.id, { limit: 1 });
      const item = last ? (last as Record<string, unknown>)["item"] : undefined;
      if (item && typeof item === "object" && (item as Record<string, unknown>)[MARK] === "index") return thread.id;
    }
    const created = await person.client.threads.create({ agentId: this.agentId });
    return created.id;
  }

  private async readIndex(person: Person): Promise<IndexState> {
    const indexId = await this.indexThreadId(person);
    const messages = await person.client.threads.messages.list(indexId, { limit: 1000 });
    const state: IndexState = { threads: new Map(), resources: new Map(), records: messages.length };
    for (const message of messages) {
      const item = (message as Record<string, unknown>)["item"] as { [MARK]?: string; record?: IndexRecord } | undefined;
      const record = item?.[MARK] === "index" ? item.record : undefined;
      if (record) fold(state, record);
    }
    return state;
  }

  private async append(person: Person, records: IndexRecord[], state?: IndexState): Promise<void> {
    const indexId = await this.indexThreadId(person);
    const toMessage = (record: IndexRecord) => ({
      role: "system" as const,
      content: INDEX_CONTENT,
      item: { [MARK]: "index", record } as Record<string, unknown>,
    });
    if (state && state.records + records.length >= this.compactAt) {
      for (const record of records) fold(state, record);
      const folded: IndexRecord[] = [...state.threads.values(), ...state.resources.values()];
      await person.client.threads.messages.clear(indexId);
      for (let start = 0; start < folded.length; start += 100) {
        await this.saveChecked(person, indexId, folded.slice(start, start + 100).map(toMessage));
      }
      return;
    }
    await this.saveChecked(person, indexId, records.map(toMessage));
  }

  private async saveChecked(
    person: Person,
    serviceThreadId: string,
    messages: { role: "user" | "assistant" | "system"; content: string; item: Record<string, unknown> }[],
  ): Promise<void> {
    if (messages.length === 0) return;
    const ids = await person.client.threads.messages.save(serviceThreadId, messages);
    if (ids.length !== messages.length) {
      throw new UnsupportedByService("the agent's active version is readOnly: the service saved nothing");
    }
  }

  /** The thread's record, searching the people this process knows when no resource is given. */
  private async locate(
    threadId: string,
    resourceId?: string,
  ): Promise<{ person: Person; state: IndexState; record: ThreadRecord } | null> {
    const people = resourceId !== undefined ? [this.person(resourceId)] : await this.candidates(threadId);
    for (const person of people) {
      const state = await this.readIndex(person);
      const record = state.threads.get(threadId);
      if (record && !record.deleted && (resourceId === undefined || record.resourceId === resourceId)) {
        this.resourceOfThread.set(threadId, record.resourceId);
        return { person, state, record };
      }
    }
    return null;
  }

  private async require(threadId: string): Promise<{ person: Person; state: IndexState; record: ThreadRecord }> {
    const found = await this.locate(threadId);
    if (!found) throw new Error(`thread ${threadId} not found`);
    return found;
  }

  // ---- messages of one thread ----------------------------------------------------------

  private async threadMessages(person: Person, record: ThreadRecord): Promise<MastraDBMessage[]> {
    const messages = await person.client.threads.messages.list(record.serviceThreadId, { limit: 1000 });
    const out: MastraDBMessage[] = [];
    for (const message of messages) {
      const stored = storedOf(message);
      if (stored) out.push({ ...fromStored(stored), threadId: record.id, resourceId: record.resourceId });
    }
    return out;
  }

  private async rewrite(person: Person, record: ThreadRecord, messages: MastraDBMessage[]): Promise<void> {
    await person.client.threads.messages.clear(record.serviceThreadId);
    const sorted = [...messages].sort((a, b) => time(a.createdAt) - time(b.createdAt));
    for (let start = 0; start < sorted.length; start += 100) {
      await this.saveChecked(
        person,
        record.serviceThreadId,
        sorted.slice(start, start + 100).map((message) => ({
          role: serviceRole(message.role),
          content: textOf(message),
          item: toStored(message) as unknown as Record<string, unknown>,
        })),
      );
    }
  }

  private async touch(person: Person, state: IndexState, record: ThreadRecord): Promise<void> {
    await this.append(person, [{ kind: "thread-patch", id: record.id, updatedAt: new Date().toISOString() }], state);
  }

  // ---- the service side ----------------------------------------------------------------

  /**
   * The service thread holding a Mastra thread (null: none), and the client acting for its
   * person: for the service's own routes, e.g. `client.threads.context(serviceThreadId, text)`
   * (its lastMessages, semantic recall, working memory and observations) or
   * `client.threads.recall(serviceThreadId, { query })`.
   */
  async serviceThread({
    threadId,
    resourceId,
  }: {
    threadId: string;
    resourceId?: string;
  }): Promise<{ serviceThreadId: string; client: AgentMemory } | null> {
    const found = await this.locate(threadId, resourceId);
    return found ? { serviceThreadId: found.record.serviceThreadId, client: found.person.client } : null;
  }

  // ---- MemoryStorage -------------------------------------------------------------------

  override async dangerouslyClearAll(): Promise<void> {
    throw new UnsupportedByService(
      "dangerouslyClearAll: the service has no route to delete threads; delete them with deleteThread, or erase the person",
    );
  }

  override async getThreadById({
    threadId,
    resourceId,
  }: {
    threadId: string;
    resourceId?: string;
  }): Promise<StorageThreadType | null> {
    const found = await this.locate(threadId, resourceId);
    return found ? threadOf(found.record) : null;
  }

  override async saveThread({ thread }: { thread: StorageThreadType }): Promise<StorageThreadType> {
    const person = this.person(thread.resourceId);
    const state = await this.readIndex(person);
    const existing = state.threads.get(thread.id);
    if (existing && !existing.deleted && existing.resourceId !== thread.resourceId) {
      throw new Error(`thread ${thread.id} belongs to another resource`);
    }
    const live = existing && !existing.deleted ? existing : undefined;
    // A deleted thread's service thread is empty (cleared): a thread saved again under its id reuses it.
    const serviceThreadId =
      existing?.serviceThreadId ?? (await person.client.threads.create({ agentId: this.agentId })).id;
    const record: ThreadRecord = {
      kind: "thread",
      id: thread.id,
      serviceThreadId,
      resourceId: thread.resourceId,
      // Saving a thread that exists (Mastra's upsert) keeps its creation time, and the title
      // and metadata the new one leaves out.
      createdAt: live?.createdAt ?? (thread.createdAt ? new Date(thread.createdAt) : new Date()).toISOString(),
      updatedAt: (thread.updatedAt ? new Date(thread.updatedAt) : new Date()).toISOString(),
    };
    const title = thread.title ?? live?.title;
    const metadata = thread.metadata ?? live?.metadata;
    if (title !== undefined) record.title = title;
    if (metadata !== undefined) record.metadata = metadata;
    await this.append(person, [record], state);
    this.resourceOfThread.set(thread.id, thread.resourceId);
    return threadOf(record);
  }

  override async updateThread({
    id,
    title,
    metadata,
  }: {
    id: string;
    title?: string;
    metadata?: Record<string, unknown>;
  }): Promise<StorageThreadType> {
    const { person, state, record } = await this.require(id);
    const patch: ThreadPatch = { kind: "thread-patch", id, updatedAt: new Date().toISOString() };
    if (title !== undefined) patch.title = title;
    // As Mastra's own stores do: the metadata given is merged over what the thread holds.
    if (metadata !== undefined) patch.metadata = { ...(record.metadata ?? {}), ...metadata };
    await this.append(person, [patch], state);
    const { kind: _kind, ...fields } = patch;
    return threadOf({ ...record, ...fields });
  }

  override async deleteThread({ threadId }: { threadId: string }): Promise<void> {
    const found = await this.locate(threadId);
    if (!found) return;
    const { person, state, record } = found;
    // The service has no thread deletion: its messages are cleared and the index forgets it.
    await person.client.threads.messages.clear(record.serviceThreadId);
    await this.append(person, [{ kind: "thread-patch", id: threadId, deleted: true, updatedAt: new Date().toISOString() }], state);
    this.resourceOfThread.delete(threadId);
  }

  override async listThreads(args: StorageListThreadsInput): Promise<StorageListThreadsOutput> {
    const resourceId = args.filter?.resourceId;
    const people = this.actAsResource ? (resourceId !== undefined ? [this.person(resourceId)] : await this.candidates()) : [this.person(undefined)];
    let threads: ThreadRecord[] = [];
    for (const person of people) {
      const state = await this.readIndex(person);
      threads.push(...[...state.threads.values()].filter((record) => !record.deleted));
    }
    if (resourceId !== undefined) threads = threads.filter((record) => record.resourceId === resourceId);
    const wanted = args.filter?.metadata;
    if (wanted) {
      threads = threads.filter((record) =>
        Object.entries(wanted).every(([key, value]) => JSON.stringify(record.metadata?.[key]) === JSON.stringify(value)),
      );
    }
    for (const record of threads) this.resourceOfThread.set(record.id, record.resourceId);
    const { field, direction } = this.parseOrderBy(args.orderBy, "DESC");
    threads.sort((a, b) => {
      const difference = time(a[field]) - time(b[field]);
      return direction === "ASC" ? difference : -difference;
    });
    const page = args.page ?? 0;
    const perPageInput = args.perPage ?? 100;
    this.validatePaginationInput(page, perPageInput);
    const total = threads.length;
    const selected =
      perPageInput === false ? threads : threads.slice(page * perPageInput, page * perPageInput + perPageInput);
    return {
      threads: selected.map(threadOf),
      total,
      page,
      perPage: perPageInput,
      hasMore: perPageInput === false ? false : (page + 1) * perPageInput < total,
    };
  }

  override async listMessages(args: StorageListMessagesInput): Promise<StorageListMessagesOutput> {
    const threadIds = Array.isArray(args.threadId) ? args.threadId : [args.threadId];
    if (threadIds.length === 0 || threadIds.some((id) => !id.trim())) {
      throw new Error("threadId must be a non-empty string or array of non-empty strings");
    }
    this.validatePaginationInput(args.page ?? 0, args.perPage ?? 40);
    const messages: MastraDBMessage[] = [];
    for (const threadId of threadIds) {
      const found = await this.locate(threadId, args.resourceId);
      if (found) messages.push(...(await this.threadMessages(found.person, found.record)));
    }
    return this.window(messages, args, threadIds.length === 1 ? threadIds[0] : undefined);
  }

  override async listMessagesByResourceId(args: StorageListMessagesByResourceIdInput): Promise<StorageListMessagesOutput> {
    const person = this.person(args.resourceId);
    const state = await this.readIndex(person);
    const messages: MastraDBMessage[] = [];
    for (const record of state.threads.values()) {
      if (record.deleted || record.resourceId !== args.resourceId) continue;
      this.resourceOfThread.set(record.id, record.resourceId);
      messages.push(...(await this.threadMessages(person, record)));
    }
    return this.window(messages, args, undefined);
  }

  /** Filter, order, page and add the `include`d messages with their context, as Mastra's stores do. */
  private async window(
    all: MastraDBMessage[],
    args: StorageListMessagesByResourceIdInput | StorageListMessagesInput,
    onlyThreadId: string | undefined,
  ): Promise<StorageListMessagesOutput> {
    const page = args.page ?? 0;
    const perPageInput = args.perPage ?? 40;
    this.validatePaginationInput(page, perPageInput);
    const { direction } = this.parseOrderBy(args.orderBy, "ASC");
    const order = (a: MastraDBMessage, b: MastraDBMessage) => {
      const difference = time(a.createdAt) - time(b.createdAt);
      return direction === "ASC" ? difference : -difference;
    };
    let messages = all;
    const range = args.filter?.dateRange;
    if (range) {
      messages = messages.filter((message) => {
        const at = time(message.createdAt);
        if (range.start) {
          const start = time(range.start);
          if (range.startExclusive ? at <= start : at < start) return false;
        }
        if (range.end) {
          const end = time(range.end);
          if (range.endExclusive ? at >= end : at > end) return false;
        }
        return true;
      });
    }
    const wanted = args.filter?.metadata;
    if (wanted) {
      messages = messages.filter((message) =>
        Object.entries(wanted).every(([key, value]) => message.content?.metadata?.[key] === value),
      );
    }
    messages.sort(order);
    const total = messages.length;
    const selected =
      perPageInput === false
        ? messages
        : perPageInput === 0
          ? []
          : messages.slice(page * perPageInput, page * perPageInput + perPageInput);
    const out = [...selected];
    const seen = new Set(out.map((message) => message.id));
    for (const include of args.include ?? []) {
      const found = await this.findMessage(include.id, include.threadId ?? onlyThreadId);
      if (!found) continue;
      if (args.resourceId !== undefined && found.record.resourceId !== args.resourceId) continue;
      const window = found.messages.sort((a, b) => time(a.createdAt) - time(b.createdAt));
      const at = window.findIndex((message) => message.id === include.id);
      const from = Math.max(0, at - (include.withPreviousMessages ?? 0));
      for (const message of window.slice(from, at + (include.withNextMessages ?? 0) + 1)) {
        if (seen.has(message.id)) continue;
        seen.add(message.id);
        out.push(message);
      }
    }
    out.sort(order);
    return {
      messages: out,
      total,
      page,
      perPage: perPageInput,
      hasMore: perPageInput === false || perPageInput === 0 ? false : (page + 1) * perPageInput < total,
    };
  }

  /** The thread holding message `id`: the one named, else every thread of the people known. */
  private async findMessage(
    id: string,
    threadId?: string,
  ): Promise<{ person: Person; record: ThreadRecord; messages: MastraDBMessage[] } | null> {
    if (threadId !== undefined) {
      const found = await this.locate(threadId);
      if (found) {
        const messages = await this.threadMessages(found.person, found.record);
        if (messages.some((message) => message.id === id)) return { person: found.person, record: found.record, messages };
      }
    }
    for (const person of await this.candidates()) {
      const state = await this.readIndex(person);
      for (const record of state.threads.values()) {
        if (record.deleted || record.id === threadId) continue;
        const messages = await this.threadMessages(person, record);
        if (messages.some((message) => message.id === id)) return { person, record, messages };
      }
    }
    return null;
  }

  override async listMessagesById({ messageIds }: { messageIds: string[] }): Promise<{ messages: MastraDBMessage[] }> {
    const wanted = new Set(messageIds);
    const out: MastraDBMessage[] = [];
    if (wanted.size === 0) return { messages: out };
    // The service has no lookup by message id: the threads of every person this adapter
    // knows are read until all are found.
    for (const person of await this.candidates()) {
      const state = await this.readIndex(person);
      for (const record of state.threads.values()) {
        if (record.deleted) continue;
        for (const message of await this.threadMessages(person, record)) {
          if (wanted.has(message.id)) {
            out.push(message);
            wanted.delete(message.id);
          }
        }
        if (wanted.size === 0) break;
      }
      if (wanted.size === 0) break;
    }
    out.sort((a, b) => time(a.createdAt) - time(b.createdAt));
    return { messages: out };
  }

  override async saveMessages({ messages }: { messages: MastraDBMessage[] }): Promise<{ messages: MastraDBMessage[] }> {
    const byThread = new Map<string, MastraDBMessage[]>();
    for (const message of messages) {
      if (!message.threadId) throw new Error(`message ${message.id} has no threadId`);
      const list = byThread.get(message.threadId) ?? [];
      list.push(message);
      byThread.set(message.threadId, list);
    }
    for (const [threadId, batch] of byThread) {
      const resourceId = batch.find((message) => message.resourceId)?.resourceId;
      const found = await this.locate(threadId, this.actAsResource ? resourceId : undefined);
      if (!found) throw new Error(`thread ${threadId} not found`);
      const { person, state, record } = found;
      const existing = await this.threadMessages(person, record);
      const known = new Set(existing.map((message) => message.id));
      const stamped = batch.map((message) => ({ ...message, threadId: record.id, resourceId: record.resourceId }));
      if (stamped.some((message) => known.has(message.id))) {
        // A save of an id the thread holds replaces that message: clear and write again.
        const replaced = new Map(stamped.map((message) => [message.id, message]));
        const merged = existing.map((message) => replaced.get(message.id) ?? message);
        for (const message of stamped) if (!known.has(message.id)) merged.push(message);
        await this.rewrite(person, record, merged);
      } else {
        for (let start = 0; start < stamped.length; start += 100) {
          await this.saveChecked(
            person,
            record.serviceThreadId,
            stamped.slice(start, start + 100).map((message) => ({
              role: serviceRole(message.role),
              content: textOf(message),
              item: toStored(message) as unknown as Record<string, unknown>,
            })),
          );
        }
      }
      await this.touch(person, state, record);
    }
    return { messages };
  }

  override async updateMessages(args: {
    messages: (Partial<Omit<MastraDBMessage, "createdAt">> & {
      id: string;
      content?: { metadata?: MastraDBMessage["content"]["metadata"]; content?: MastraDBMessage["content"]["content"] };
    })[];
  }): Promise<MastraDBMessage[]> {
    const updated: MastraDBMessage[] = [];
    const pending = new Map(args.messages.map((update) => [update.id, update]));
    while (pending.size > 0) {
      const [firstId, first] = pending.entries().next().value as [string, (typeof args.messages)[number]];
      const found = await this.findMessage(firstId, first.threadId);
      if (!found) throw new Error(`message ${firstId} not found`);
      const { person, record } = found;
      let messages = found.messages;
      const moved: MastraDBMessage[] = [];
      messages = messages.map((message) => {
        const update = pending.get(message.id);
        if (!update) return message;
        pending.delete(message.id);
        const { content, ...rest } = update;
        const next: MastraDBMessage = { ...message, ...rest } as MastraDBMessage;
        if (content) {
          next.content = { ...message.content, ...content } as MastraDBMessage["content"];
          if (content.metadata) next.content.metadata = { ...(message.content.metadata ?? {}), ...content.metadata };
        }
        updated.push(next);
        if (rest.threadId !== undefined && rest.threadId !== record.id) moved.push(next);
        return next;
      });
      if (moved.length > 0) {
        throw new UnsupportedByService("updateMessages cannot move a message to another thread");
      }
      await this.rewrite(person, record, messages);
    }
    return updated;
  }

  override async deleteMessages(messageIds: string[]): Promise<void> {
    const pending = new Set(messageIds);
    for (const person of await this.candidates()) {
      if (pending.size === 0) break;
      const state = await this.readIndex(person);
      for (const record of state.threads.values()) {
        if (record.deleted || pending.size === 0) continue;
        const messages = await this.threadMessages(person, record);
        if (!messages.some((message) => pending.has(message.id))) continue;
        for (const message of messages) pending.delete(message.id);
        // No deletion of one message: the thread is cleared and the rest written again.
        await this.rewrite(
          person,
          record,
          messages.filter((message) => !messageIds.includes(message.id)),
        );
      }
    }
  }

  override async copyThread(args: StorageCloneThreadInput): Promise<StorageCopyThreadOutput> {
    const { person: sourcePerson, record: source } = await this.require(args.sourceThreadId);
    const newThreadId = args.newThreadId || crypto.randomUUID();
    const resourceId = args.resourceId || source.resourceId;
    if (await this.locate(newThreadId, resourceId)) throw new Error(`Thread with id ${newThreadId} already exists`);
    let messages = (await this.threadMessages(sourcePerson, source)).sort((a, b) => time(a.createdAt) - time(b.createdAt));
    const filter = args.options?.messageFilter;
    if (filter?.messageIds && filter.messageIds.length > 0) {
      const ids = new Set(filter.messageIds);
      messages = messages.filter((message) => ids.has(message.id));
    }
    if (filter?.startDate) messages = messages.filter((message) => time(message.createdAt) >= time(filter.startDate));
    if (filter?.endDate) messages = messages.filter((message) => time(message.createdAt) <= time(filter.endDate));
    const limit = args.options?.messageLimit;
    if (limit && limit > 0 && messages.length > limit) messages = messages.slice(-limit);
    const now = new Date();
    const lastMessageId = messages.at(-1)?.id;
    const title = args.title || (source.title ? `Clone of ${source.title}` : undefined);
    const thread = await this.saveThread({
      thread: {
        id: newThreadId,
        resourceId,
        ...(title === undefined ? {} : { title }),
        metadata: { ...args.metadata, clone: { sourceThreadId: source.id, clonedAt: now, ...(lastMessageId ? { lastMessageId } : {}) } },
        createdAt: now,
        updatedAt: now,
      },
    });
    const messageIdMap: Record<string, string> = {};
    const copies = messages.map((message) => {
      const id = crypto.randomUUID();
      messageIdMap[message.id] = id;
      return { ...message, id, threadId: newThreadId, resourceId };
    });
    if (copies.length > 0) await this.saveMessages({ messages: copies });
    return { thread, messageIdMap };
  }

  override async updateThreadResourceId({
    threadId,
    resourceId,
  }: {
    threadId: string;
    resourceId: string;
  }): Promise<StorageThreadType> {
    const { record } = await this.require(threadId);
    if (record.resourceId === resourceId) return threadOf(record);
    throw new UnsupportedByService(
      `updateThreadResourceId: a service thread belongs to one person for good; thread ${threadId} cannot move from resource ${record.resourceId} to ${resourceId}`,
    );
  }

  override async getResourceById({ resourceId }: { resourceId: string }): Promise<StorageResourceType | null> {
    const state = await this.readIndex(this.person(resourceId));
    const record = state.resources.get(resourceId);
    return record ? resourceOf(record) : null;
  }

  override async saveResource({ resource }: { resource: StorageResourceType }): Promise<StorageResourceType> {
    const person = this.person(resource.id);
    const state = await this.readIndex(person);
    const record: ResourceRecord = {
      kind: "resource",
      id: resource.id,
      createdAt: new Date(resource.createdAt ?? Date.now()).toISOString(),
      updatedAt: new Date(resource.updatedAt ?? Date.now()).toISOString(),
    };
    if (resource.workingMemory !== undefined) record.workingMemory = resource.workingMemory;
    if (resource.metadata !== undefined) record.metadata = resource.metadata;
    await this.append(person, [record], state);
    return resourceOf(record);
  }

  override async updateResource({
    resourceId,
    workingMemory,
    metadata,
  }: {
    resourceId: string;
    workingMemory?: string;
    metadata?: Record<string, unknown>;
  }): Promise<StorageResourceType> {
    const person = this.person(resourceId);
    const state = await this.readIndex(person);
    const now = new Date().toISOString();
    const record: ResourceRecord = { ...(state.resources.get(resourceId) ?? { kind: "resource", id: resourceId, createdAt: now }), updatedAt: now };
    if (workingMemory !== undefined) record.workingMemory = workingMemory;
    if (metadata !== undefined) record.metadata = { ...(record.metadata ?? {}), ...metadata };
    await this.append(person, [record], state);
    return resourceOf(record);
  }
}

/**
 * A Mastra store whose memory domain is the service: `new Memory({ storage: new
 * AgentMemoryStore({ client, agentId }) })`. Other domains (workflows, scores, ...) are not
 * kept here; compose with `MastraCompositeStore` for those.
 */
export class AgentMemoryStore extends MastraCompositeStore {
  readonly memory: AgentMemoryMemoryStorage;

  constructor(options: AgentMemoryStoreOptions) {
    super({ id: options.id ?? "agent-memory", name: "AgentMemoryStore" });
    this.memory = new AgentMemoryMemoryStorage(options);
    this.stores = { memory: this.memory };
  }
}
