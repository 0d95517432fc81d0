/**
 * A Mastra (`@mastra/core` 1.x) storage adapter for the memory domain, kept in the
 * agent-memory service's threads.
 *
 * - A Mastra thread is a service thread of one agent (`POST /v1/threads`). Its title is the
 *   service thread's title; Mastra's own fields live in the service thread's metadata,
 *   `{"mastra": {"id", "resourceId", "metadata", "createdAt", "updatedAt"}}`, since the service
 *   picks thread ids. A thread is found by its Mastra id in the person's thread list, and its
 *   service id is kept in this process, so later lookups are one `GET /v1/threads/{id}` that
 *   also sees what other processes changed. `updateThread` is a PATCH, `deleteThread` a DELETE.
 * - A Mastra resource (its working memory and metadata) is one message-less service thread of
 *   the person, `{"mastraResource": {...}}` in its metadata: the service's own resource working
 *   memory belongs to the agent's options (its scope, schema and observer) and holds one text a
 *   person, and agent memories are read by the whole organization, so neither can hold it.
 * - A Mastra message is a service message: `content` holds its text (what the service's own
 *   title, observer, embedding and context work read), `item` holds the whole Mastra message
 *   (`MastraDBMessage`, with Mastra's own id), returned exactly as sent.
 * - Messages cannot be changed in place: an update or deletion of messages, or a save of an
 *   id the thread already holds, clears the thread's messages and writes them again.
 */
import type { AgentMemory, Message, Thread } from "@agent-memory/client";
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
/** The service thread metadata's key holding a Mastra thread's fields. */
const THREAD_KEY = "mastra";
/** The service thread metadata's key holding a Mastra resource's record. */
const RESOURCE_KEY = "mastraResource";
/** The title of a resource's record thread, for whoever lists the person's threads. */
const RESOURCE_TITLE = "Mastra resource record";
/** The longest title the service keeps (in characters). */
const MAX_TITLE = 500;

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
  /** The Mastra store's id (default `agent-memory`). */
  id?: string;
}

/** A Mastra thread's fields in its service thread's metadata (`metadata.mastra`). */
interface ThreadSide {
  id: string;
  resourceId: string;
  metadata?: Record<string, unknown>;
  /** Only a title the service cannot hold (empty, or longer than it keeps). */
  title?: string;
  createdAt: string;
  updatedAt: string;
}

/** A Mastra thread as read from its service thread. */
interface ThreadRecord {
  id: string;
  serviceThreadId: string;
  resourceId: string;
  title?: string;
  metadata?: Record<string, unknown>;
  createdAt: string;
  updatedAt: string;
  side: ThreadSide;
}

/** A Mastra resource's record in its service thread's metadata (`metadata.mastraResource`). */
interface ResourceSide {
  id: string;
  workingMemory?: string;
  metadata?: Record<string, unknown>;
  createdAt: string;
  updatedAt: string;
}

interface ResourceRecord extends ResourceSide {
  serviceThreadId: string;
}

/** What a write changes of a thread; a field left out is left as it is. */
interface ThreadChange {
  title?: string;
  metadata?: Record<string, unknown>;
  updatedAt: string;
}

/** A stored Mastra message, as kept in a service message's `item`. */
interface StoredMessage {
  [MARK]: "message";
  message: Omit<MastraDBMessage, "createdAt"> & { createdAt: string };
}

/** A person of the service: the key the adapter knows them by, and a client acting for them. */
interface Person {
  key: string;
  client: AgentMemory;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isNotFound(error: unknown): boolean {
  return isObject(error) && error["status"] === 404;
}

function iso(value: Date | string | number | undefined): string {
  return (value === undefined ? new Date() : new Date(value)).toISOString();
}

/**
 * Where a Mastra title goes: the service keeps 1 to 500 characters; any other title is kept
 * whole on Mastra's side (and a long one cut to 500 for the service's own lists).
 */
function splitTitle(title: string): { service?: string; side?: string } {
  const characters = [...title];
  if (characters.length >= 1 && characters.length <= MAX_TITLE) return { service: title };
  if (characters.length === 0) return { side: title };
  return { service: characters.slice(0, MAX_TITLE).join(""), side: title };
}

function threadRecordOf(thread: Thread): ThreadRecord | null {
  const side = thread.metadata?.[THREAD_KEY];
  if (!isObject(side) || typeof side["id"] !== "string" || typeof side["resourceId"] !== "string") return null;
  const fields = side as unknown as ThreadSide;
  const record: ThreadRecord = {
    id: fields.id,
    serviceThreadId: thread.id,
    resourceId: fields.resourceId,
    createdAt: fields.createdAt,
    updatedAt: fields.updatedAt,
    side: fields,
  };
  const title = fields.title ?? thread.title;
  if (title !== undefined && title !== null) record.title = title;
  if (fields.metadata !== undefined) record.metadata = fields.metadata;
  return record;
}

function resourceRecordOf(thread: Thread): ResourceRecord | null {
  const side = thread.metadata?.[RESOURCE_KEY];
  if (!isObject(side) || typeof side["id"] !== "string") return null;
  return { ...(side as unknown as ResourceSide), serviceThreadId: thread.id };
}

function threadSideOf(fields: Omit<ThreadSide, "title">, title: string | undefined): Record<string, unknown> {
  const side: ThreadSide = {
    id: fields.id,
    resourceId: fields.resourceId,
    createdAt: fields.createdAt,
    updatedAt: fields.updatedAt,
  };
  if (fields.metadata !== undefined) side.metadata = fields.metadata;
  if (title !== undefined) side.title = title;
  return { [THREAD_KEY]: side };
}

function resourceSideOf(record: ResourceSide): Record<string, unknown> {
  const side: ResourceSide = { id: record.id, createdAt: record.createdAt, updatedAt: record.updatedAt };
  if (record.workingMemory !== undefined) side.workingMemory = record.workingMemory;
  if (record.metadata !== undefined) side.metadata = record.metadata;
  return { [RESOURCE_KEY]: side };
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

function resourceOf(record: ResourceSide): StorageResourceType {
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
  private readonly people = new Map<string, Person>();
  /** Mastra thread id -> resource id, for lookups Mastra makes without a resource. */
  private readonly resourceOfThread = new Map<string, string>();
  /** (person, Mastra thread id) -> service thread id: the service picks ids, Mastra's live in metadata. */
  private readonly threadIds = new Map<string, string>();
  /** (person, Mastra resource id) -> the service thread holding the resource's record. */
  private readonly resourceThreadIds = new Map<string, string>();
  /** The writes of one thread or resource record in this process, one after the other. */
  private readonly queues = new Map<string, Promise<unknown>>();

  constructor(options: AgentMemoryStoreOptions) {
    super();
    this.client = options.client;
    this.agentId = options.agentId;
    this.actAsResource = options.actAsResource ?? false;
    this.resolveResource = options.resolveResource;
  }

  // ---- people, and finding Mastra's threads and resources among their service threads ----

  private person(resourceId: string | undefined): Person {
    const key = this.actAsResource ? resourceId : "";
    if (key === undefined) {
      throw new UnsupportedByService("with actAsResource, a call needs a resourceId (or a thread this process has seen)");
    }
    let person = this.people.get(key);
    if (!person) {
      person = { key, client: this.actAsResource ? this.client.actingFor(key) : this.client };
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

  private static key(person: Person, id: string): string {
    return `${person.key}\u0000${id}`;
  }

  /**
   * Run `work` after the writes queued under `key` in this process: a read-modify-write of a
   * thread's metadata (PATCH replaces it whole) never undoes another one made here at once.
   */
  private serialized<T>(key: string, work: () => Promise<T>): Promise<T> {
    const run = (this.queues.get(key) ?? Promise.resolve()).then(work, work);
    const tail = run.then(
      () => undefined,
      () => undefined,
    );
    this.queues.set(key, tail);
    void tail.then(() => {
      if (this.queues.get(key) === tail) this.queues.delete(key);
    });
    return run;
  }

  /** Every Mastra thread and resource record among the person's service threads of the agent. */
  private async scan(person: Person): Promise<{ threads: ThreadRecord[]; resources: ResourceRecord[] }> {
    const listed: Thread[] = [];
    for await (const thread of person.client.threads.iterate({ agentId: this.agentId })) listed.push(thread);
    const threads = new Map<string, ThreadRecord>();
    const resources = new Map<string, ResourceRecord>();
    // Newest first: read from the oldest, so that of two service threads that two processes
    // made for one Mastra id at once, every process uses the same one (the first made).
    for (const thread of listed.reverse()) {
      const record = threadRecordOf(thread);
      if (record && !threads.has(record.id)) {
        threads.set(record.id, record);
        this.threadIds.set(AgentMemoryMemoryStorage.key(person, record.id), record.serviceThreadId);
        continue;
      }
      const resource = resourceRecordOf(thread);
      if (resource && !resources.has(resource.id)) {
        resources.set(resource.id, resource);
        this.resourceThreadIds.set(AgentMemoryMemoryStorage.key(person, resource.id), resource.serviceThreadId);
      }
    }
    return { threads: [...threads.values()], resources: [...resources.values()] };
  }

  /** The person's Mastra thread `threadId`: by the service id known here, else through their list. */
  private async findThread(person: Person, threadId: string): Promise<ThreadRecord | null> {
    const key = AgentMemoryMemoryStorage.key(person, threadId);
    const known = this.threadIds.get(key);
    if (known !== undefined) {
      try {
        const record = threadRecordOf(await person.client.threads.get(known));
        if (record && record.id === threadId) return record;
      } catch (error) {
        // Deleted by another process: look again through the list.
        if (!isNotFound(error)) throw error;
      }
      this.threadIds.delete(key);
    }
    const { threads } = await this.scan(person);
    return threads.find((record) => record.id === threadId) ?? null;
  }

  private async findResource(person: Person, resourceId: string): Promise<ResourceRecord | null> {
    const key = AgentMemoryMemoryStorage.key(person, resourceId);
    const known = this.resourceThreadIds.get(key);
    if (known !== undefined) {
      try {
        const record = resourceRecordOf(await person.client.threads.get(known));
        if (record && record.id === resourceId) return record;
      } catch (error) {
        if (!isNotFound(error)) throw error;
      }
      this.resourceThreadIds.delete(key);
    }
    const { resources } = await this.scan(person);
    return resources.find((record) => record.id === resourceId) ?? null;
  }

  /** The thread's record, searching the people this process knows when no resource is given. */
  private async locate(threadId: string, resourceId?: string): Promise<{ person: Person; record: ThreadRecord } | null> {
    const people = resourceId !== undefined ? [this.person(resourceId)] : await this.candidates(threadId);
    for (const person of people) {
      const record = await this.findThread(person, threadId);
      if (record && (resourceId === undefined || record.resourceId === resourceId)) {
        this.resourceOfThread.set(threadId, record.resourceId);
        return { person, record };
      }
    }
    return null;
  }

  private async require(threadId: string): Promise<{ person: Person; record: ThreadRecord }> {
    const found = await this.locate(threadId);
    if (!found) throw new Error(`thread ${threadId} not found`);
    return found;
  }

  /** PATCH the service thread with `change`: the title when one is given, the metadata whole. */
  private async patch(person: Person, current: ThreadRecord, change: ThreadChange): Promise<ThreadRecord> {
    const body: { title?: string; metadata: Record<string, unknown> } = { metadata: {} };
    let sideTitle = current.side.title;
    if (change.title !== undefined) {
      const split = splitTitle(change.title);
      if (split.service !== undefined) body.title = split.service;
      sideTitle = split.side;
    }
    const metadata = change.metadata !== undefined ? change.metadata : current.metadata;
    body.metadata = threadSideOf(
      {
        id: current.id,
        resourceId: current.resourceId,
        createdAt: current.createdAt,
        updatedAt: change.updatedAt,
        ...(metadata === undefined ? {} : { metadata }),
      },
      sideTitle,
    );
    const record = threadRecordOf(await person.client.threads.update(current.serviceThreadId, body));
    if (!record) throw new Error(`thread ${current.id}: the service answered without its metadata`);
    return record;
  }

  /** Change a thread as it is now in the service (read afresh), one change at a time here. */
  private change(
    person: Person,
    threadId: string,
    change: (current: ThreadRecord) => ThreadChange,
  ): Promise<ThreadRecord | null> {
    return this.serialized(`thread\u0000${AgentMemoryMemoryStorage.key(person, threadId)}`, async () => {
      const current = await this.findThread(person, threadId);
      return current ? this.patch(person, current, change(current)) : null;
    });
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

  private async append(person: Person, record: ThreadRecord, messages: MastraDBMessage[]): Promise<void> {
    for (let start = 0; start < messages.length; start += 100) {
      await this.saveChecked(
        person,
        record.serviceThreadId,
        messages.slice(start, start + 100).map((message) => ({
          role: serviceRole(message.role),
          content: textOf(message),
          item: toStored(message) as unknown as Record<string, unknown>,
        })),
      );
    }
  }

  private async rewrite(person: Person, record: ThreadRecord, messages: MastraDBMessage[]): Promise<void> {
    await person.client.threads.messages.clear(record.serviceThreadId);
    await this.append(person, record, [...messages].sort((a, b) => time(a.createdAt) - time(b.createdAt)));
  }

  /** A thread whose messages changed is updated now (Mastra lists threads by `updatedAt`). */
  private async touch(person: Person, record: ThreadRecord): Promise<void> {
    await this.change(person, record.id, () => ({ updatedAt: new Date().toISOString() }));
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

  /**
   * Deletes every Mastra thread and resource record of the agent's threads in the people this
   * adapter reaches: the token's person, or (with `actAsResource`) the resources seen here.
   */
  override async dangerouslyClearAll(): Promise<void> {
    for (const person of await this.candidates()) {
      const { threads, resources } = await this.scan(person);
      for (const serviceThreadId of [...threads, ...resources].map((record) => record.serviceThreadId)) {
        try {
          await person.client.threads.delete(serviceThreadId);
        } catch (error) {
          if (!isNotFound(error)) throw error;
        }
      }
    }
    this.threadIds.clear();
    this.resourceThreadIds.clear();
    this.resourceOfThread.clear();
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
    const record = await this.serialized(`thread\u0000${AgentMemoryMemoryStorage.key(person, thread.id)}`, async () => {
      const existing = await this.findThread(person, thread.id);
      if (existing && existing.resourceId !== thread.resourceId) {
        throw new Error(`thread ${thread.id} belongs to another resource`);
      }
      const updatedAt = iso(thread.updatedAt);
      if (existing) {
        // Saving a thread that exists (Mastra's upsert) keeps its creation time, and the
        // title and metadata the new one leaves out.
        const change: ThreadChange = { updatedAt };
        if (thread.title !== undefined) change.title = thread.title;
        if (thread.metadata !== undefined) change.metadata = thread.metadata;
        return this.patch(person, existing, change);
      }
      const split = thread.title === undefined ? {} : splitTitle(thread.title);
      const created = await person.client.threads.create({
        agentId: this.agentId,
        ...(split.service === undefined ? {} : { title: split.service }),
        metadata: threadSideOf(
          {
            id: thread.id,
            resourceId: thread.resourceId,
            createdAt: iso(thread.createdAt),
            updatedAt,
            ...(thread.metadata === undefined ? {} : { metadata: thread.metadata }),
          },
          split.side,
        ),
      });
      const made = threadRecordOf(created);
      if (!made) throw new Error(`thread ${thread.id}: the service answered without its metadata`);
      this.threadIds.set(AgentMemoryMemoryStorage.key(person, thread.id), created.id);
      return made;
    });
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
    const { person } = await this.require(id);
    const record = await this.change(person, id, (current) => {
      const change: ThreadChange = { updatedAt: new Date().toISOString() };
      if (title !== undefined) change.title = title;
      // As Mastra's own stores do: the metadata given is merged over what the thread holds.
      if (metadata !== undefined) change.metadata = { ...(current.metadata ?? {}), ...metadata };
      return change;
    });
    if (!record) throw new Error(`thread ${id} not found`);
    return threadOf(record);
  }

  override async deleteThread({ threadId }: { threadId: string }): Promise<void> {
    const found = await this.locate(threadId);
    if (!found) return;
    const { person, record } = found;
    await this.serialized(`thread\u0000${AgentMemoryMemoryStorage.key(person, threadId)}`, async () => {
      try {
        // The service deletes the thread with its messages, working memory and recall vectors.
        await person.client.threads.delete(record.serviceThreadId);
      } catch (error) {
        if (!isNotFound(error)) throw error;
      }
    });
    this.threadIds.delete(AgentMemoryMemoryStorage.key(person, threadId));
    this.resourceOfThread.delete(threadId);
  }

  override async listThreads(args: StorageListThreadsInput): Promise<StorageListThreadsOutput> {
    const resourceId = args.filter?.resourceId;
    const people = this.actAsResource ? (resourceId !== undefined ? [this.person(resourceId)] : await this.candidates()) : [this.person(undefined)];
    let threads: ThreadRecord[] = [];
    for (const person of people) threads.push(...(await this.scan(person)).threads);
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
    const messages: MastraDBMessage[] = [];
    for (const record of (await this.scan(person)).threads) {
      if (record.resourceId !== args.resourceId) continue;
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
      for (const record of (await this.scan(person)).threads) {
        if (record.id === threadId) continue;
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
      for (const record of (await this.scan(person)).threads) {
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
      const { person, record } = found;
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
        await this.append(person, record, stamped);
      }
      await this.touch(person, record);
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
      for (const record of (await this.scan(person)).threads) {
        if (pending.size === 0) break;
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

  // ---- resources: one message-less service thread each, the record in its metadata ------

  override async getResourceById({ resourceId }: { resourceId: string }): Promise<StorageResourceType | null> {
    const record = await this.findResource(this.person(resourceId), resourceId);
    return record ? resourceOf(record) : null;
  }

  /** Write a resource's record: a PATCH of its thread, or a new thread for a new resource. */
  private writeResource(
    person: Person,
    resourceId: string,
    make: (current: ResourceRecord | null) => ResourceSide,
  ): Promise<ResourceSide> {
    return this.serialized(`resource\u0000${AgentMemoryMemoryStorage.key(person, resourceId)}`, async () => {
      const current = await this.findResource(person, resourceId);
      const record = make(current);
      const metadata = resourceSideOf(record);
      if (current) {
        await person.client.threads.update(current.serviceThreadId, { metadata });
      } else {
        const created = await person.client.threads.create({ agentId: this.agentId, title: RESOURCE_TITLE, metadata });
        this.resourceThreadIds.set(AgentMemoryMemoryStorage.key(person, resourceId), created.id);
      }
      return record;
    });
  }

  override async saveResource({ resource }: { resource: StorageResourceType }): Promise<StorageResourceType> {
    const record = await this.writeResource(this.person(resource.id), resource.id, () => {
      const side: ResourceSide = { id: resource.id, createdAt: iso(resource.createdAt), updatedAt: iso(resource.updatedAt) };
      if (resource.workingMemory !== undefined) side.workingMemory = resource.workingMemory;
      if (resource.metadata !== undefined) side.metadata = resource.metadata;
      return side;
    });
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
    const record = await this.writeResource(this.person(resourceId), resourceId, (current) => {
      const now = new Date().toISOString();
      const side: ResourceSide = current
        ? { id: current.id, createdAt: current.createdAt, updatedAt: now }
        : { id: resourceId, createdAt: now, updatedAt: now };
      const kept = workingMemory ?? current?.workingMemory;
      if (kept !== undefined) side.workingMemory = kept;
      if (metadata !== undefined || current?.metadata !== undefined) side.metadata = { ...(current?.metadata ?? {}), ...(metadata ?? {}) };
      return side;
    });
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
