/**
 * The client against the real local service (`python -m infra.local.serve`), started by this
 * file on a free port with its own data directory, and stopped at the end however it went.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";

import {
  AgentMemory,
  AgentMemoryError,
  ChatConflict,
  NotFound,
  SessionConflict,
  ThreadConflict,
  Unauthorized,
  ValidationError,
  VersionConflict,
  type Event,
  type FetchLike,
} from "../src/index.js";
import { LocalService, repoRoot, type User } from "./support/service.js";

let service: LocalService;
let alice: User;

before(async () => {
  service = await LocalService.start();
  alice = await service.user("admin");
});

after(async () => {
  await service?.stop();
});

/** Call `read` until `done` holds for its answer (learning runs in the background). */
async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean, what: string): Promise<T> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) assert.fail(`${what}: still ${JSON.stringify(value)} after 15 s`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

async function rejection(promise: Promise<unknown>): Promise<AgentMemoryError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof AgentMemoryError, `not an AgentMemoryError: ${String(error)}`);
    return error;
  }
  assert.fail("the call did not throw");
}

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const all: T[] = [];
  for await (const item of items) all.push(item);
  return all;
}

/** A client of alice's token that records the URL of every request it sends. */
function recording(token: string): { client: AgentMemory; urls: string[] } {
  const urls: string[] = [];
  const fetch: FetchLike = (input, init) => {
    urls.push(input);
    return globalThis.fetch(input, init);
  };
  return { client: service.client(token, { fetch }), urls };
}

describe("identity", () => {
  test("health, me, capabilities, tokens", async () => {
    const { client, userId, organizationId } = alice;
    assert.deepEqual(await client.health(), { status: "ok" });
    const me = await client.me();
    assert.deepEqual([me.id, me.organizationId, me.role], [userId, organizationId, "admin"]);
    const capabilities = await client.capabilities();
    assert.ok(capabilities.models.allowed.includes("local/rules"));
    const tokens = await client.myTokens();
    assert.equal(tokens.length, 1);
    const settings = await client.organizations.getSettings(organizationId);
    assert.equal(settings.memory.use, true);
    const patched = await client.organizations.patchSettings(organizationId, { botMemoryModel: "local/rules" });
    assert.equal(patched.botMemoryModel, "local/rules");
  });

  test("a token issued by the admin works, and a revoked one is Unauthorized", async () => {
    const admin = service.client(service.adminToken);
    const bob = await service.user("member", alice.organizationId);
    const issued = await admin.admin.issueToken(bob.userId);
    const rotated = service.client(issued.token);
    assert.equal((await rotated.me()).id, bob.userId);
    await admin.admin.revokeToken(issued.tokenPrefix);
    const error = await rejection(rotated.me());
    assert.ok(error instanceof Unauthorized);
    assert.equal(error.status, 401);
  });
});

describe("service keys and an organization's people", () => {
  test("a service key acts for a person with Act-As; people are listed, added and removed", async () => {
    const admin = await service.user("admin");
    const orgId = admin.organizationId;
    const key = await admin.client.organizations.serviceKeys.create(orgId, { name: "backend" });
    assert.deepEqual(
      (await admin.client.organizations.serviceKeys.list(orgId)).map((k) => k.id),
      [key.id],
    );
    const backend = service.client(key.key);
    const ana = await backend.organizations.users.add(orgId, { id: "ana", name: "Ana" });
    assert.equal(ana.id, "ana");
    await backend.organizations.users.add(orgId, { id: "ben" });
    const people = await collect(backend.organizations.users.iterate(orgId, { pageSize: 1 }));
    assert.deepEqual(
      people.map((person) => person.id).sort(),
      ["ana", "ben", admin.userId].sort(),
    );

    const asAna = backend.actingFor("ana");
    assert.equal((await asAna.me()).id, "ana");
    const agent = await asAna.agents.create({ name: "Ana's agent" });
    assert.equal(agent.owner, "ana");
    const nobody = await rejection(backend.actingFor("nobody").me());
    assert.ok(nobody instanceof NotFound);
    assert.deepEqual(nobody.path, ["Act-As"]);

    const erased = await admin.client.organizations.users.delete(orgId, "ana");
    assert.equal(erased.agents, 1);
    await admin.client.organizations.serviceKeys.revoke(orgId, key.id);
    assert.ok((await rejection(backend.organizations.users.list(orgId))) instanceof Unauthorized);
  });

  test("an org admin renames a person; the admin token lists and deletes an organization", async () => {
    const admin = await service.user("admin");
    const orgId = admin.organizationId;
    const member = await service.user("member", orgId);
    const renamed = await admin.client.organizations.users.rename(orgId, member.userId, "Ben Ito");
    assert.equal(renamed.name, "Ben Ito");
    const operator = service.client(service.adminToken).admin;
    const listed = await collect(operator.iterateOrganizations({ pageSize: 1 }));
    assert.deepEqual(
      listed.filter((org) => org.id === orgId).map((org) => [org.users, org.deleting]),
      [[2, false]],
    );
    const deleted = await operator.deleteOrganization(orgId);
    assert.deepEqual([deleted.organizations, deleted.users, deleted.tokens], [1, 2, 2]);
    assert.ok((await rejection(member.client.me())) instanceof Unauthorized);
    assert.ok((await rejection(operator.deleteOrganization(orgId))) instanceof NotFound);
  });
});

describe("sessions", () => {
  test("a session with items and turns, and its memory text", async () => {
    const { client } = alice;
    const agent = await client.agents.create({ name: "Trip planner" });
    assert.equal((await client.agents.get(agent.id)).name, "Trip planner");
    const session = await client.sessions.create({ agentId: agent.id });
    assert.equal(session.model, "local/rules");
    const answer = await client.sessions.postTurn(session.id, {
      items: [{ role: "user", content: "Remember that my budget is 1500 EUR" }],
    });
    assert.equal(answer.turn.learning, "started");
    assert.equal(answer.turn.itemIds.length, 1);
    await client.sessions.postTurn(session.id, {
      items: [
        { role: "user", content: "We fly on Friday." },
        { role: "assistant", content: "Noted." },
      ],
    });
    const items = await client.sessions.items.list(session.id);
    assert.deepEqual(
      items.data.map((item) => item.content),
      ["Remember that my budget is 1500 EUR", "We fly on Friday.", "Noted."],
    );
    const text = await eventually(
      () => client.sessions.memory.text(session.id),
      (memory) => memory.keys.includes("budget"),
      "the session's memory text",
    );
    assert.match(text.text, /The user's budget is 1500 EUR\./);
    const memory = await client.sessions.memory.get(session.id);
    assert.equal(memory.entries["budget"]?.content, "The user's budget is 1500 EUR.");
    assert.ok((await client.sessions.learning(session.id)).length >= 1);

    const fork = await client.sessions.fork(session.id);
    assert.equal(fork.parentId, session.id);
    assert.equal(fork.head, (await client.sessions.get(session.id)).head);
  });

  test("memory commands: optimistic update, and SessionConflict when stale", async () => {
    const { client } = alice;
    const agent = await client.agents.create({ name: "Notes" });
    const session = await client.sessions.create({ agentId: agent.id, model: null });
    const updated = await client.sessions.memory.update(session.id, () => ({
      _tag: "Remember",
      key: "seat",
      content: "Prefers the window seat.",
      kind: "preference",
    }));
    assert.ok(updated.revision > session.revision);
    assert.equal((await client.sessions.memory.get(session.id)).entries["seat"]?.content, "Prefers the window seat.");
    const stale = await rejection(
      client.sessions.memory.command(session.id, {
        expected: session.head,
        revision: session.revision,
        command: { _tag: "Forget", key: "seat" },
      }),
    );
    assert.ok(stale instanceof SessionConflict);
    assert.equal(stale.code, "SessionConflict");
    // Promotion is for subagent sessions only.
    assert.ok((await rejection(client.sessions.promote(session.id))) instanceof SessionConflict);
  });

  test("agent memory: remember, the version check, log and text", async () => {
    const { client } = alice;
    const agent = await client.agents.create({ name: "Librarian" });
    const first = await client.agents.memory.get(agent.id);
    const changed = await client.agents.memory.command(agent.id, {
      expected: first.version,
      command: { _tag: "Remember", key: "tone", content: "Answer briefly.", kind: "preference" },
    });
    assert.equal(changed.entries["tone"]?.content, "Answer briefly.");
    const stale = await rejection(
      client.agents.memory.command(agent.id, {
        expected: first.version,
        command: { _tag: "Forget", key: "tone" },
      }),
    );
    assert.ok(stale instanceof VersionConflict);
    const forgotten = await client.agents.memory.update(agent.id, () => ({ _tag: "Forget", key: "tone" }));
    assert.equal(forgotten.entries["tone"]?.status, "retracted");
    const log = await client.agents.memory.log(agent.id);
    assert.deepEqual(
      log.map((change) => change.by),
      ["person", "person"],
    );
    assert.equal((await client.agents.memory.text(agent.id)).keys.length, 0);
    assert.ok(Array.isArray(await client.agents.learning(agent.id)));
  });
});

describe("paging", () => {
  test("sessions.iterate follows starting_after over several pages", async () => {
    const agent = await alice.client.agents.create({ name: "Many sessions" });
    const created: string[] = [];
    for (let i = 0; i < 5; i++) created.push((await alice.client.sessions.create({ agentId: agent.id })).id);
    const { client, urls } = recording(alice.token);
    const seen: string[] = [];
    for await (const session of client.sessions.iterate({ agentId: agent.id, pageSize: 2 })) seen.push(session.id);
    assert.deepEqual([...seen].sort(), [...created].sort());
    assert.equal(new Set(seen).size, 5, "no session twice");
    assert.equal(urls.length, 3, "pages of 2, 2 and 1");
    assert.match(urls[1]!, new RegExp(`starting_after=${seen[1]}`));
  });

  test("agentMemories.iterate over several pages, newest first", async () => {
    const bob = await service.user();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push((await bob.client.agentMemories.create({ category: "fact", content: `Fact number ${i}.` })).id);
    }
    const seen = await collect(bob.client.agentMemories.iterate({ pageSize: 2 }));
    assert.deepEqual(
      seen.map((memory) => memory.id),
      [...ids].reverse(),
    );
  });

  test("threads.iterate, and the events feed with a cursor", async () => {
    const carol = await service.user();
    const agent = await carol.client.agents.create({ name: "Threads" });
    const threads: string[] = [];
    for (let i = 0; i < 3; i++) threads.push((await carol.client.threads.create({ agentId: agent.id })).id);
    const listed = await collect(carol.client.threads.iterate({ agentId: agent.id, pageSize: 2 }));
    assert.deepEqual(
      listed.map((thread) => thread.id),
      [...threads].reverse(),
    );

    const { client, urls } = recording(carol.token);
    const feed = client.events.iterate({ limit: 2 });
    const events: Event[] = await collect(feed);
    const created = events.filter((event) => event.type === "thread.created").map((event) => event.object["threadId"]);
    assert.deepEqual(created, threads);
    assert.ok(urls.length >= 3, "more than one page, then the empty one");
    assert.ok(feed.cursor, "the feed keeps its cursor");
    await carol.client.threads.create({ agentId: agent.id });
    const more = await collect(client.events.iterate({ after: feed.cursor, limit: 2 }));
    assert.deepEqual(
      more.map((event) => event.type),
      ["thread.created"],
    );
  });
});

describe("threads", () => {
  test("memory options, a thread's messages, context, working memory and recall", async () => {
    const { client } = alice;
    const agent = await client.agents.create({ name: "Assistant" });
    const draft = await client.agents.patchDraft(agent.id, {
      options: { lastMessages: 10, workingMemory: true, observationalMemory: { retrieval: true } },
    });
    assert.equal((draft.effective.memory["options"] as { lastMessages: number }).lastMessages, 10);
    const version = await client.agents.publish(agent.id);
    assert.equal(await client.agents.activate(agent.id, version.number), version.number);
    const versions = await client.agents.versions(agent.id);
    assert.equal(versions.active, version.number);

    const thread = await client.threads.create({ agentId: agent.id });
    const ids = await client.threads.messages.save(thread.id, [
      { role: "user", content: "My name is Ana and my cat is called Miso." },
      { role: "assistant", content: "Hi Ana!", item: { type: "message", id: "sdk-1" } },
    ]);
    assert.equal(ids.length, 2);
    const messages = await client.threads.messages.list(thread.id);
    assert.deepEqual(
      messages.map((message) => message["content"]),
      ["My name is Ana and my cat is called Miso.", "Hi Ana!"],
    );
    assert.deepEqual(messages[1]?.["item"], { type: "message", id: "sdk-1" });

    const context = await client.threads.context(thread.id, "What is my cat called?");
    assert.equal(context.messages.length, 2);
    assert.deepEqual(
      context.tools.map((tool) => tool.name).sort(),
      ["recall", "updateWorkingMemory"],
    );
    assert.match(context.system, /working_memory/);

    const written = await client.threads.workingMemory.put(thread.id, "# User\n- Name: Ana");
    assert.equal(written.format, "markdown");
    assert.equal((await client.threads.workingMemory.get(thread.id)).content, "# User\n- Name: Ana");

    const recalled = await client.threads.recall(thread.id, { query: "cat" });
    assert.equal(recalled[0]?.["content"], "My name is Ana and my cat is called Miso.");
    const observations = await client.threads.observations(thread.id);
    assert.equal(typeof observations.log, "string");
    const titled = await eventually(
      () => client.threads.get(thread.id),
      (t) => t.title !== null,
      "the thread's title",
    );
    assert.ok(titled.title);
    assert.ok((await client.threads.learning(thread.id)).length >= 1);

    const popped = await client.threads.messages.popLast(thread.id);
    assert.equal(popped?.["content"], "Hi Ana!");
    await client.threads.messages.clear(thread.id);
    assert.deepEqual(await client.threads.messages.list(thread.id), []);
  });

  test("recall without retrieval is a ThreadConflict", async () => {
    const { client } = alice;
    const agent = await client.agents.create({ name: "No retrieval" });
    const thread = await client.threads.create({ agentId: agent.id });
    const error = await rejection(client.threads.recall(thread.id, { query: "anything" }));
    assert.ok(error instanceof ThreadConflict);
    assert.equal(error.status, 409);
  });
});

describe("agent memories", () => {
  test("create, get, update, list, recall, delete", async () => {
    const dave = await service.user();
    const { client } = dave;
    const express = await client.agentMemories.create({
      category: "preference",
      content: "Always wants express shipping.",
      importance: 0.9,
    });
    assert.equal(express.object, "agent_memory");
    const lyon = await client.agentMemories.create({ category: "fact", content: "Lives in Lyon.", importance: 0.2 });
    const updated = await client.agentMemories.update(lyon.id, { importance: 0.5 });
    assert.equal(updated.importance, 0.5);
    assert.equal((await client.agentMemories.get(express.id)).content, "Always wants express shipping.");
    const facts = await client.agentMemories.list({ category: "fact" });
    assert.deepEqual(
      facts.data.map((memory) => memory.id),
      [lyon.id],
    );
    const recalled = await client.agentMemories.recall({ limit: 5 });
    assert.deepEqual(
      recalled.data.map((memory) => memory.id),
      [express.id, lyon.id],
      "highest importance first",
    );
    const deleted = await client.agentMemories.delete(lyon.id);
    assert.equal(deleted.deleted, true);
    assert.ok((await rejection(client.agentMemories.get(lyon.id))) instanceof NotFound);
  });
});

describe("bots", () => {
  test("a bot with a chat, a turn, confide and complete; its memory", async () => {
    const { client } = alice;
    const bot = await client.bots.create({ name: "Concierge" });
    assert.equal((await client.bots.get(bot.id)).linked, false);
    const chat = await client.chats.create({ botId: bot.id });
    const started = await client.chats.turns.start(chat.id, { input: "I am vegetarian." });
    assert.equal(started.turn.status, "open");
    assert.equal(started.input, "I am vegetarian.");
    const confided = await client.chats.turns.confide(chat.id, started.turn.id, "I forgot it.");
    assert.equal(typeof confided.answer, "string");
    assert.ok(confided.answer.length > 0);
    const completed = await client.chats.turns.complete(chat.id, started.turn.id, {
      items: [{ role: "assistant", content: "Noted, no meat." }],
    });
    assert.equal(completed.turn.status, "completed");
    assert.equal((await client.chats.turns.get(chat.id, started.turn.id)).status, "completed");
    const items = await client.chats.items.list(chat.id);
    assert.deepEqual(
      items.map((item) => item["content"]),
      ["I am vegetarian.", "Noted, no meat."],
    );
    assert.equal((await client.chats.confessions(chat.id))[0]?.text, "I forgot it.");
    assert.ok(Array.isArray(await client.chats.enrichments(chat.id)));
    // Confide after the turn completed.
    assert.ok((await rejection(client.chats.turns.confide(chat.id, started.turn.id, "late"))) instanceof ChatConflict);

    const learned = await eventually(
      () => client.bots.memory.get(bot.id),
      (memory) => memory.entries.some((entry) => /vegetarian/.test(String(entry["content"]))),
      "the memory bot's entries",
    );
    assert.ok(learned.version >= 1);
    const remembered = await client.bots.memory.remember(bot.id, { content: "Likes jazz.", tags: ["music"] });
    const entry = remembered["entry"] as { id: string };
    const music = await client.bots.memory.get(bot.id, { tags: ["music"] });
    assert.deepEqual(
      music.entries.map((e) => e["content"]),
      ["Likes jazz."],
    );
    const context = await client.bots.memory.context(bot.id, { chatId: chat.id });
    assert.equal(context.hasEntries, true);
    assert.match(context.text, /Likes jazz\./);
    await client.bots.memory.forget(bot.id, entry.id);
    assert.ok((await client.bots.memory.log(bot.id)).length >= 2);
    const settings = await client.bots.settings.update(bot.id, () => ({ instructions: "Keep it short." }));
    assert.equal(settings.instructions, "Keep it short.");
    assert.ok(Array.isArray(await client.bots.learning(bot.id)));
    assert.equal(await client.bots.memory.purge(bot.id, `chat:${chat.id}`) >= 0, true);
  });

  test("a review chat has no confide: ChatConflict", async () => {
    const { client } = alice;
    const bot = await client.bots.create({ name: "Reviewer" });
    const chat = await client.chats.create({ botId: bot.id, kind: "review" });
    const turn = await client.chats.turns.start(chat.id, { input: "Check this." });
    const error = await rejection(client.chats.turns.confide(chat.id, turn.turn.id, "oops"));
    assert.ok(error instanceof ChatConflict);
    assert.equal(error.code, "ChatConflict");
  });

  test("a channel and its members", async () => {
    const { client, organizationId } = alice;
    const bob = await service.user("member", organizationId);
    const channel = await client.channels.create({ name: "team", members: [] });
    assert.deepEqual(channel.members, [alice.userId]);
    const changed = await client.channels.changeMembers(channel.id, { add: [bob.userId] });
    assert.deepEqual([...changed.members].sort(), [alice.userId, bob.userId].sort());
  });
});

describe("errors and access", () => {
  test("an unknown object is NotFound with code and message", async () => {
    const error = await rejection(alice.client.sessions.get("s_doesnotexist"));
    assert.ok(error instanceof NotFound);
    assert.deepEqual([error.status, error.code], [404, "NotFound"]);
    assert.match(error.message, /not found/);
  });

  test("a bad body is a ValidationError whose path names the field", async () => {
    const agent = await alice.client.agents.create({ name: "Strict" });
    const error = await rejection(alice.client.sessions.create({ agentId: agent.id, kind: "bogus" as never }));
    assert.ok(error instanceof ValidationError);
    assert.equal(error.status, 400);
    assert.deepEqual(error.path, ["kind"]);
    const nested = await rejection(
      alice.client.agents.patchDraft(agent.id, { options: { semanticRecall: { topK: 99 } } }),
    );
    assert.ok(nested instanceof ValidationError);
    assert.deepEqual(nested.path, ["memory", "options", "semanticRecall", "topK"]);
  });

  test("another user's objects are refused", async () => {
    const agent = await alice.client.agents.create({ name: "Private" });
    const session = await alice.client.sessions.create({ agentId: agent.id });
    const thread = await alice.client.threads.create({ agentId: agent.id });
    // Another organization: its objects do not exist for this caller.
    const mallory = await service.user();
    assert.ok((await rejection(mallory.client.sessions.get(session.id))) instanceof NotFound);
    assert.ok((await rejection(mallory.client.agents.get(agent.id))) instanceof NotFound);
    // Same organization: a thread belongs to its user alone.
    const bob = await service.user("member", alice.organizationId);
    const refused = await rejection(bob.client.threads.workingMemory.get(thread.id));
    assert.ok(refused instanceof NotFound, `got ${refused.code}`);
    // Naming another user as a thread's resource is Forbidden.
    const forbidden = await rejection(alice.client.threads.create({ agentId: agent.id, resourceId: bob.userId }));
    assert.equal(forbidden.status, 403);
  });

  test("an unknown token is Unauthorized", async () => {
    const error = await rejection(service.client("amk_nobody_0000000000000000").me());
    assert.ok(error instanceof Unauthorized);
  });
});

describe("README", () => {
  const folder = join(repoRoot(), "clients", "typescript");

  test("its quickstart is examples/quickstart.ts, and it runs", async () => {
    const readme = readFileSync(join(folder, "README.md"), "utf8");
    const section = readme.slice(readme.indexOf("## Quickstart"));
    const block = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
    assert.equal(block, readFileSync(join(folder, "examples", "quickstart.ts"), "utf8"));

    const erin = await service.user();
    const { stdout } = await promisify(execFile)(process.execPath, [join(folder, "dist", "examples", "quickstart.js")], {
      env: { ...process.env, AGENT_MEMORY_URL: service.url, AGENT_MEMORY_TOKEN: erin.token },
      timeout: 30_000,
    });
    assert.match(stdout, /^user: Remember that my budget is 1500 EUR$/m);
    assert.match(stdout, /budget: The user's budget is 1500 EUR\./);
    assert.match(stdout, /^tools: updateWorkingMemory, recall$/m);
    assert.match(stdout, /^recalled: My cat is called Miso\.$/m);
    assert.match(stdout, /^404 NotFound: session not found$/m);
  });
});
