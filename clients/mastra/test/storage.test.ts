/**
 * The adapter against the real local service: threads, messages, resources kept apart.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import type { AgentMemory, Thread } from "@agent-memory/client";
import type { MastraDBMessage } from "@mastra/core/memory";
import { Agent } from "@mastra/core/agent";
import { Memory } from "@mastra/memory";

import { AgentMemoryMemoryStorage, AgentMemoryStore } from "../src/index.js";

// One local-service starter for both packages: ../typescript's, from its build (made by
// scripts/prepare-client.mjs before these tests). Typed by its path from here (test/), loaded
// by its path from where this file runs (dist/test/).
type Starter = typeof import("../../typescript/dist/test/support/service.js");
const starter = new URL("../../../typescript/dist/test/support/service.js", import.meta.url);
const { LocalService } = (await import(starter.href)) as Starter;
type LocalService = Awaited<ReturnType<Starter["LocalService"]["start"]>>;

let service: LocalService;
let client: AgentMemory;
let agentId: string;

before(async () => {
  service = await LocalService.start();
  const user = await service.user();
  client = user.client;
  agentId = (await client.agents.create({ name: "mastra-storage" })).id;
});

after(async () => {
  await service?.stop();
});

let clock = Date.parse("2026-01-01T00:00:00Z");
function message(id: string, threadId: string, resourceId: string, text: string, role: "user" | "assistant" = "user"): MastraDBMessage {
  clock += 1000;
  return {
    id,
    threadId,
    resourceId,
    role,
    createdAt: new Date(clock),
    type: "v2",
    content: { format: 2, parts: [{ type: "text", text }], metadata: { n: id } },
  };
}

function thread(id: string, resourceId: string, title?: string, metadata?: Record<string, unknown>) {
  clock += 1000;
  return {
    id,
    resourceId,
    createdAt: new Date(clock),
    updatedAt: new Date(clock),
    ...(title === undefined ? {} : { title }),
    ...(metadata === undefined ? {} : { metadata }),
  };
}

describe("memory domain on the service (one person's token)", () => {
  let store: AgentMemoryMemoryStorage;
  before(() => {
    store = new AgentMemoryStore({ client, agentId }).memory;
  });

  test("save, get and list threads of a resource", async () => {
    const saved = await store.saveThread({ thread: thread("t-1", "res-a", "First", { topic: "cats" }) });
    assert.equal(saved.id, "t-1");
    const got = await store.getThreadById({ threadId: "t-1" });
    assert.ok(got);
    assert.equal(got.title, "First");
    assert.equal(got.resourceId, "res-a");
    assert.deepEqual(got.metadata, { topic: "cats" });
    assert.ok(got.createdAt instanceof Date);
    assert.equal(await store.getThreadById({ threadId: "t-missing" }), null);

    await store.saveThread({ thread: thread("t-2", "res-a", "Second") });
    await store.saveThread({ thread: thread("t-other", "res-b", "Not yours") });
    const listed = await store.listThreads({ filter: { resourceId: "res-a" } });
    assert.deepEqual(
      listed.threads.map((t) => t.id),
      ["t-2", "t-1"],
    );
    assert.equal(listed.total, 2);
    const byMetadata = await store.listThreads({ filter: { resourceId: "res-a", metadata: { topic: "cats" } } });
    assert.deepEqual(byMetadata.threads.map((t) => t.id), ["t-1"]);
    const paged = await store.listThreads({ filter: { resourceId: "res-a" }, perPage: 1, page: 1, orderBy: { field: "createdAt", direction: "ASC" } });
    assert.deepEqual(paged.threads.map((t) => t.id), ["t-2"]);
    assert.equal(paged.hasMore, false);
    // Another resource's thread is not found under this resource.
    assert.equal(await store.getThreadById({ threadId: "t-other", resourceId: "res-a" }), null);
  });

  test("save messages, list them in order, with a limit, by ids; round-trips the format", async () => {
    await store.saveThread({ thread: thread("t-msg", "res-a") });
    const sent = [
      message("m-1", "t-msg", "res-a", "My cat is called Miso."),
      message("m-2", "t-msg", "res-a", "What a lovely name!", "assistant"),
      message("m-3", "t-msg", "res-a", "She is three."),
      message("m-4", "t-msg", "res-a", "Noted.", "assistant"),
    ];
    await store.saveMessages({ messages: sent });
    const all = await store.listMessages({ threadId: "t-msg" });
    assert.deepEqual(all.messages.map((m) => m.id), ["m-1", "m-2", "m-3", "m-4"]);
    assert.deepEqual(all.messages[0], sent[0]);
    assert.ok(all.messages[0]!.createdAt instanceof Date);

    // lastMessages: Mastra asks for the newest N (DESC) and reverses.
    const last = await store.listMessages({ threadId: "t-msg", perPage: 2, orderBy: { field: "createdAt", direction: "DESC" } });
    assert.deepEqual(last.messages.map((m) => m.id), ["m-4", "m-3"]);
    assert.equal(last.total, 4);
    assert.equal(last.hasMore, true);

    const withContext = await store.listMessages({
      threadId: "t-msg",
      perPage: 1,
      orderBy: { field: "createdAt", direction: "DESC" },
      include: [{ id: "m-1", withNextMessages: 1 }],
    });
    assert.deepEqual(withContext.messages.map((m) => m.id), ["m-4", "m-2", "m-1"]);

    const byIds = await store.listMessagesById({ messageIds: ["m-3", "m-1", "m-none"] });
    assert.deepEqual(byIds.messages.map((m) => m.id), ["m-1", "m-3"]);

    // The service holds the text as content and Mastra's message (its id too) as the item.
    const side = await store.serviceThread({ threadId: "t-msg" });
    assert.ok(side);
    const held = await side.client.threads.messages.list(side.serviceThreadId);
    assert.deepEqual(held.map((m) => [m.role, m.content]), [
      ["user", "My cat is called Miso."],
      ["assistant", "What a lovely name!"],
      ["user", "She is three."],
      ["assistant", "Noted."],
    ]);
    assert.equal((held[0]!["item"] as { message: { id: string } }).message.id, "m-1");
    assert.notEqual(held[0]!.id, "m-1");
    // The service's own context for that thread (its lastMessages) sees the same turns.
    const context = await side.client.threads.context(side.serviceThreadId, "What is my cat called?");
    assert.ok(JSON.stringify(context.messages).includes("My cat is called Miso."));
  });

  test("update and delete messages rewrite the thread", async () => {
    await store.saveThread({ thread: thread("t-edit", "res-a") });
    await store.saveMessages({
      messages: [message("e-1", "t-edit", "res-a", "one"), message("e-2", "t-edit", "res-a", "two"), message("e-3", "t-edit", "res-a", "three")],
    });
    const [updated] = await store.updateMessages({
      messages: [{ id: "e-2", content: { format: 2, parts: [{ type: "text", text: "two" }], metadata: { n: "e-2", edited: true } } }],
    });
    assert.equal(updated!.content.metadata?.["edited"], true);
    await store.deleteMessages(["e-1"]);
    const left = await store.listMessages({ threadId: "t-edit" });
    assert.deepEqual(left.messages.map((m) => m.id), ["e-2", "e-3"]);
    assert.equal(left.messages[0]!.content.metadata?.["edited"], true);
    assert.equal(left.messages[0]!.content.metadata?.["n"], "e-2");
    // Saving an id the thread holds replaces it.
    const again = message("e-3", "t-edit", "res-a", "three, again");
    await store.saveMessages({ messages: [again] });
    const after = await store.listMessages({ threadId: "t-edit" });
    assert.equal(after.messages.length, 2);
    assert.deepEqual(after.messages.find((m) => m.id === "e-3")!.content.parts, [{ type: "text", text: "three, again" }]);
  });

  test("update a thread's title and metadata, then delete it", async () => {
    await store.saveThread({ thread: thread("t-up", "res-a", "Old", { a: 1 }) });
    const renamed = await store.updateThread({ id: "t-up", title: "New", metadata: { b: 2 } });
    assert.equal(renamed.title, "New");
    assert.deepEqual(renamed.metadata, { a: 1, b: 2 });
    const onlyMetadata = await store.updateThread({ id: "t-up", metadata: { c: 3 } });
    assert.equal(onlyMetadata.title, "New");
    const got = await store.getThreadById({ threadId: "t-up" });
    assert.equal(got?.title, "New");
    assert.deepEqual(got?.metadata, { a: 1, b: 2, c: 3 });

    // A title written while messages are saved (Mastra's generateTitle runs beside the save) stays.
    await Promise.all([
      store.updateThread({ id: "t-up", title: "Raced" }),
      store.saveMessages({ messages: [message("r-1", "t-up", "res-a", "hello")] }),
    ]);
    assert.equal((await store.getThreadById({ threadId: "t-up" }))?.title, "Raced");

    await store.saveMessages({ messages: [message("d-1", "t-up", "res-a", "bye")] });
    await store.deleteThread({ threadId: "t-up" });
    assert.equal(await store.getThreadById({ threadId: "t-up" }), null);
    assert.ok(!(await store.listThreads({ filter: { resourceId: "res-a" } })).threads.some((t) => t.id === "t-up"));
    assert.deepEqual((await store.listMessagesById({ messageIds: ["d-1"] })).messages, []);
  });

  test("clone a thread, list a resource's messages, refuse to move a thread", async () => {
    const { thread: copy, clonedMessages, messageIdMap } = await store.cloneThread({
      sourceThreadId: "t-msg",
      newThreadId: "t-copy",
      options: { messageLimit: 2 },
    });
    assert.equal(copy.id, "t-copy");
    assert.equal(copy.resourceId, "res-a");
    assert.equal((copy.metadata?.["clone"] as { sourceThreadId: string }).sourceThreadId, "t-msg");
    assert.deepEqual(clonedMessages.map((m) => m.content.parts), [
      [{ type: "text", text: "She is three." }],
      [{ type: "text", text: "Noted." }],
    ]);
    assert.deepEqual(Object.keys(messageIdMap ?? {}), ["m-3", "m-4"]);
    assert.deepEqual(clonedMessages.map((m) => m.id), [messageIdMap!["m-3"], messageIdMap!["m-4"]]);

    await store.saveThread({ thread: thread("t-b1", "res-b") });
    await store.saveMessages({ messages: [message("b-1", "t-b1", "res-b", "b one")] });
    await store.saveMessages({ messages: [message("b-2", "t-other", "res-b", "b two")] });
    const ofB = await store.listMessagesByResourceId({ resourceId: "res-b", perPage: false });
    assert.deepEqual(ofB.messages.map((m) => m.id), ["b-1", "b-2"]);

    await assert.rejects(store.updateThreadResourceId({ threadId: "t-b1", resourceId: "res-a" }), {
      name: "UnsupportedByService",
    });
    assert.equal((await store.updateThreadResourceId({ threadId: "t-b1", resourceId: "res-b" })).id, "t-b1");
  });

  test("a new adapter instance (another process) reads the same threads", async () => {
    const other = new AgentMemoryStore({ client, agentId }).memory;
    const got = await other.getThreadById({ threadId: "t-1" });
    assert.equal(got?.title, "First");
    const messages = await other.listMessages({ threadId: "t-msg" });
    assert.equal(messages.messages.length, 4);
  });

  test("each Mastra thread is one service thread: renamed and deleted in the service itself", async () => {
    const agent = (await client.agents.create({ name: "one-to-one" })).id;
    const mine = new AgentMemoryStore({ client, agentId: agent }).memory;
    const other = new AgentMemoryStore({ client, agentId: agent }).memory;
    await mine.saveThread({ thread: thread("s-1", "res-s", "Planning", { topic: "trip" }) });
    await mine.saveThread({ thread: thread("s-2", "res-s", "Doomed") });
    await mine.saveMessages({ messages: [message("s-m", "s-2", "res-s", "to be deleted")] });
    const side = await mine.serviceThread({ threadId: "s-2" });
    assert.ok(side);

    // Another process renames s-1 and deletes s-2; this one (which knows their service ids) sees both.
    await other.updateThread({ id: "s-1", title: "Trip to Lisbon", metadata: { day: 2 } });
    await other.deleteThread({ threadId: "s-2" });
    assert.equal((await mine.getThreadById({ threadId: "s-1" }))?.title, "Trip to Lisbon");
    assert.equal(await mine.getThreadById({ threadId: "s-2" }), null);

    // The service's own list shows the title, with Mastra's id and metadata in the thread's metadata.
    const listed: Thread[] = [];
    for await (const t of client.threads.iterate({ agentId: agent })) listed.push(t);
    assert.equal(listed.length, 1, "no other service thread: no index");
    assert.equal(listed[0]!.title, "Trip to Lisbon");
    assert.deepEqual((listed[0]!.metadata as { mastra: { id: string; metadata: unknown } }).mastra.id, "s-1");
    assert.deepEqual((listed[0]!.metadata as { mastra: { metadata: unknown } }).mastra.metadata, { topic: "trip", day: 2 });
    // The deleted thread is gone from the service, its messages with it.
    await assert.rejects(client.threads.get(side.serviceThreadId), { status: 404 });
    await assert.rejects(client.threads.messages.list(side.serviceThreadId), { status: 404 });

    // Metadata over the service's 8 KB is refused by the service, and nothing changes.
    await assert.rejects(other.updateThread({ id: "s-1", metadata: { big: "y".repeat(9000) } }), { status: 400 });
    assert.deepEqual((await mine.getThreadById({ threadId: "s-1" }))?.metadata, { topic: "trip", day: 2 });

    // A title the service cannot hold (empty, or over 500 characters) is kept whole for Mastra.
    const long = "x".repeat(600);
    await mine.updateThread({ id: "s-1", title: long });
    assert.equal((await other.getThreadById({ threadId: "s-1" }))?.title, long);
    assert.equal((await client.threads.get(listed[0]!.id)).title, "x".repeat(500));

    // A resource's record is one more thread of the person, apart from Mastra's threads.
    await mine.updateResource({ resourceId: "res-s", workingMemory: "# Notes", metadata: { plan: "pro" } });
    assert.deepEqual((await mine.listThreads({ filter: { resourceId: "res-s" } })).threads.map((t) => t.id), ["s-1"]);
    assert.equal((await other.getResourceById({ resourceId: "res-s" }))?.workingMemory, "# Notes");

    // Clearing everything deletes this adapter's threads and records in the service.
    await mine.dangerouslyClearAll();
    const left: Thread[] = [];
    for await (const t of client.threads.iterate({ agentId: agent })) left.push(t);
    assert.deepEqual(left, []);
    assert.equal(await other.getThreadById({ threadId: "s-1" }), null);
    assert.equal(await other.getResourceById({ resourceId: "res-s" }), null);
  });

  test("resources' working memory and metadata", async () => {
    assert.equal(await store.getResourceById({ resourceId: "res-a" }), null);
    await store.updateResource({ resourceId: "res-a", workingMemory: "# User\n- name: Ana" });
    const resource = await store.getResourceById({ resourceId: "res-a" });
    assert.equal(resource?.workingMemory, "# User\n- name: Ana");
    await store.updateResource({ resourceId: "res-a", metadata: { plan: "pro" } });
    // Another process reads the same record: working memory kept, metadata merged in.
    const again = await new AgentMemoryStore({ client, agentId }).memory.getResourceById({ resourceId: "res-a" });
    assert.equal(again?.workingMemory, "# User\n- name: Ana");
    assert.deepEqual(again?.metadata, { plan: "pro" });
    await store.saveResource({ resource: { id: "res-a", workingMemory: "replaced", createdAt: new Date(), updatedAt: new Date() } });
    const saved = await store.getResourceById({ resourceId: "res-a" });
    assert.equal(saved?.workingMemory, "replaced");
    assert.equal(saved?.metadata, undefined);
  });
});

describe("a service key acting for each resource", () => {
  test("two resources never see each other's threads", async () => {
    const admin = service.client(service.adminToken);
    const orgId = (await admin.admin.createOrganization({ name: "platform" })).id;
    for (const id of ["owner", "ana", "bob"]) await admin.organizations.users.add(orgId, { id });
    const key = (await admin.organizations.serviceKeys.create(orgId, { name: "backend" })).key;
    const backend = service.client(key);
    const agent = await backend.actingFor("owner").agents.create({ name: "shared", members: ["ana", "bob"] });

    const store = new AgentMemoryStore({ client: backend, agentId: agent.id, actAsResource: true }).memory;
    await store.saveThread({ thread: thread("ana-1", "ana", "Ana's") });
    await store.saveThread({ thread: thread("bob-1", "bob", "Bob's") });
    await store.saveMessages({ messages: [message("ana-m", "ana-1", "ana", "secret of ana")] });

    assert.deepEqual((await store.listThreads({ filter: { resourceId: "ana" } })).threads.map((t) => t.id), ["ana-1"]);
    assert.deepEqual((await store.listThreads({ filter: { resourceId: "bob" } })).threads.map((t) => t.id), ["bob-1"]);
    assert.equal(await store.getThreadById({ threadId: "ana-1", resourceId: "bob" }), null);
    assert.deepEqual((await store.listMessages({ threadId: "ana-1", resourceId: "bob" })).messages, []);

    // In the service, each thread is its person's: Bob's person sees none of Ana's.
    const bobThreads: Thread[] = [];
    for await (const t of backend.actingFor("bob").threads.iterate({ agentId: agent.id })) bobThreads.push(t);
    const anaThreads: Thread[] = [];
    for await (const t of backend.actingFor("ana").threads.iterate({ agentId: agent.id })) anaThreads.push(t);
    assert.ok(bobThreads.every((t) => t.resourceId === "bob"));
    assert.ok(anaThreads.every((t) => t.resourceId === "ana"));
    assert.ok(!bobThreads.some((b) => anaThreads.some((a) => a.id === b.id)));
    // A new process knows no resource: a thread id alone finds nothing, unless resolveResource says whose.
    const cold = new AgentMemoryStore({ client: backend, agentId: agent.id, actAsResource: true }).memory;
    assert.equal(await cold.getThreadById({ threadId: "ana-1" }), null);
    const resolving = new AgentMemoryStore({
      client: backend,
      agentId: agent.id,
      actAsResource: true,
      resolveResource: (threadId) => threadId.split("-")[0],
    }).memory;
    assert.equal((await resolving.getThreadById({ threadId: "ana-1" }))?.title, "Ana's");
    assert.deepEqual((await resolving.listMessagesById({ messageIds: ["ana-m"] })).messages.map((m) => m.id), ["ana-m"]);
    for (const t of bobThreads) {
      const texts = (await backend.actingFor("bob").threads.messages.list(t.id)).map((m) => m.content);
      assert.ok(!texts.includes("secret of ana"));
    }
  });
});

describe("Mastra's own Memory on this storage", () => {
  test("lastMessages: saveMessages then recall", async () => {
    const memory = new Memory({
      storage: new AgentMemoryStore({ client, agentId }),
      options: { lastMessages: 3, semanticRecall: false, workingMemory: { enabled: false } },
    });
    const created = await memory.createThread({ resourceId: "res-mem", title: "Mastra thread", metadata: { via: "memory" } });
    const got = await memory.getThreadById({ threadId: created.id });
    assert.equal(got?.title, "Mastra thread");
    const messages = [
      message("mm-1", created.id, "res-mem", "hello"),
      message("mm-2", created.id, "res-mem", "hi there", "assistant"),
      message("mm-3", created.id, "res-mem", "my budget is 1500 EUR"),
      message("mm-4", created.id, "res-mem", "noted", "assistant"),
    ];
    await memory.saveMessages({ messages });
    const recalled = await memory.recall({ threadId: created.id, resourceId: "res-mem" });
    assert.deepEqual(recalled.messages.map((m) => m.id), ["mm-2", "mm-3", "mm-4"]);
    assert.equal(recalled.messages[1]!.content.parts[0]!.type, "text");
    const threads = await memory.listThreads({ filter: { resourceId: "res-mem" } });
    assert.deepEqual(threads.threads.map((t) => t.id), [created.id]);
  });

  test("an Agent with this memory gets the earlier turns (a local fake model, no network)", async () => {
    const prompts: unknown[] = [];
    const usage = { inputTokens: 1, outputTokens: 1, totalTokens: 2 };
    // A LanguageModelV2 by hand: answers "answer <n>" and keeps the prompts it was given.
    const model = {
      specificationVersion: "v2" as const,
      provider: "fake",
      modelId: "fake",
      supportedUrls: {},
      async doGenerate(options: { prompt: unknown }) {
        prompts.push(options.prompt);
        return { content: [{ type: "text" as const, text: `answer ${prompts.length}` }], finishReason: "stop" as const, usage, warnings: [] };
      },
      async doStream(): Promise<never> {
        throw new Error("not used");
      },
    };
    const memory = new Memory({ storage: new AgentMemoryStore({ client, agentId }), options: { lastMessages: 10 } });
    const agent = new Agent({ id: "fake", name: "fake", instructions: "be brief", model, memory });
    const first = await agent.generate("My name is Ana", { memory: { thread: "agent-thread", resource: "res-agent" } });
    assert.equal(first.text, "answer 1");
    const second = await agent.generate("What is my name?", { memory: { thread: "agent-thread", resource: "res-agent" } });
    assert.equal(second.text, "answer 2");
    const prompt = JSON.stringify(prompts[1]);
    assert.ok(prompt.includes("My name is Ana") && prompt.includes("answer 1"), prompt);

    const stored = await memory.recall({ threadId: "agent-thread", resourceId: "res-agent" });
    assert.deepEqual(
      stored.messages.map((m) => [m.role, m.content.parts.filter((p) => p.type === "text").map((p) => (p as { text: string }).text).join("")]),
      [
        ["user", "My name is Ana"],
        ["assistant", "answer 1"],
        ["user", "What is my name?"],
        ["assistant", "answer 2"],
      ],
    );
  });

  test("workingMemory (resource scope) is kept in the resource record", async () => {
    const memory = new Memory({
      storage: new AgentMemoryStore({ client, agentId }),
      options: { lastMessages: 3, workingMemory: { enabled: true, scope: "resource" } },
    });
    const created = await memory.createThread({ resourceId: "res-wm" });
    await memory.updateWorkingMemory({ threadId: created.id, resourceId: "res-wm", workingMemory: "# Notes\n- likes tea" });
    const text = await memory.getWorkingMemory({ threadId: created.id, resourceId: "res-wm" });
    assert.equal(text, "# Notes\n- likes tea");
  });

  test("workingMemory (thread scope) is kept in the thread's metadata", async () => {
    const memory = new Memory({
      storage: new AgentMemoryStore({ client, agentId }),
      options: { lastMessages: 3, workingMemory: { enabled: true, scope: "thread" } },
    });
    const created = await memory.createThread({ resourceId: "res-wm2" });
    await memory.updateWorkingMemory({ threadId: created.id, resourceId: "res-wm2", workingMemory: "# Notes\n- thread only" });
    const text = await memory.getWorkingMemory({ threadId: created.id, resourceId: "res-wm2" });
    assert.equal(text, "# Notes\n- thread only");
  });
});
