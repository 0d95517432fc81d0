/**
 * The retry rule, error decoding and request encoding, against a scripted local server
 * (what the real service cannot be made to do on demand: 429s, 503s, lost connections).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import {
  AgentMemory,
  AgentMemoryError,
  ChatConflict,
  Conflict,
  ConnectionError,
  NotFound,
  SessionConflict,
  Throttled,
  Unavailable,
  ValidationError,
  VersionConflict,
  parseRetryAfter,
  type ClientOptions,
} from "../src/index.js";
import { FakeService, apiError } from "./support/fake.js";

const SESSION = {
  session: {
    id: "s_1",
    agentId: "ag_1",
    owner: "u_1",
    kind: "chat",
    model: null,
    head: "v-1",
    revision: 0,
    parentId: null,
  },
};

let fake: FakeService;

before(async () => {
  fake = await FakeService.start();
});

after(async () => {
  await fake.stop();
});

function client(options: Partial<ClientOptions> = {}): AgentMemory {
  // A short backoff keeps the tests quick; Retry-After is still honoured as sent.
  return new AgentMemory({ baseUrl: fake.url, token: "tok_test", backoffMs: 10, ...options });
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  assert.fail("the call did not throw");
}

describe("retries", () => {
  test("a 429 waits what Retry-After says, then retries", async () => {
    fake.script(
      { status: 429, body: apiError("Throttled", "slow down"), headers: { "Retry-After": "1" } },
      { status: 200, body: SESSION },
    );
    const session = await client().sessions.get("s_1");
    assert.equal(session.id, "s_1");
    assert.equal(fake.requests.length, 2);
    const [first, second] = fake.requests;
    assert.ok(second!.at - first!.at >= 950, `retried after ${second!.at - first!.at} ms, not 1 s`);
  });

  test("a 429 is retried for a POST too (the service did not carry it out)", async () => {
    fake.script(
      { status: 429, body: apiError("Throttled", "slow down"), headers: { "Retry-After": "0" } },
      { status: 201, body: SESSION },
    );
    const session = await client().sessions.create({ agentId: "ag_1" });
    assert.equal(session.id, "s_1");
    assert.equal(fake.requests.length, 2);
    assert.equal(fake.requests[1]!.body, fake.requests[0]!.body, "the same body resent");
  });

  test("a 503 to a GET is retried", async () => {
    fake.script({ status: 503, body: apiError("Unavailable", "try again") }, { status: 200, body: SESSION });
    const session = await client().sessions.get("s_1");
    assert.equal(session.id, "s_1");
    assert.deepEqual(
      fake.requests.map((r) => r.method),
      ["GET", "GET"],
    );
  });

  test("a 503 to a POST is not resent: the error is thrown", async () => {
    fake.script({ status: 503, body: apiError("Unavailable", "a dependency failed") }, { status: 201, body: SESSION });
    const error = await rejection(client().sessions.create({ agentId: "ag_1" }));
    assert.ok(error instanceof Unavailable);
    assert.equal(error.status, 503);
    assert.equal(error.message, "a dependency failed");
    assert.equal(fake.requests.length, 1);
  });

  test("a POST the API marks idempotent (erasure) is retried after a 503", async () => {
    const erased = { organizationId: "org_1", userId: "u_2" };
    fake.script({ status: 503, body: apiError("Unavailable", "later") }, { status: 200, body: erased });
    const answer = await client().organizations.eraseUser("org_1", "u_2");
    assert.equal(answer.userId, "u_2");
    assert.equal(fake.requests.length, 2);
  });

  test("retries stop after maxRetries (default 2): three attempts, then the error", async () => {
    const unavailable = { status: 503, body: apiError("Unavailable", "down") } as const;
    fake.script(unavailable, unavailable, unavailable, { status: 200, body: SESSION });
    const error = await rejection(client().sessions.get("s_1"));
    assert.ok(error instanceof Unavailable);
    assert.equal(fake.requests.length, 3);
  });

  test("maxRetries 0 disables retrying; Throttled carries retryAfter", async () => {
    fake.script(
      { status: 429, body: apiError("Throttled", "over the limit"), headers: { "Retry-After": "7" } },
      { status: 200, body: SESSION },
    );
    const error = await rejection(client({ maxRetries: 0 }).sessions.get("s_1"));
    assert.ok(error instanceof Throttled);
    assert.equal(error.code, "Throttled");
    assert.equal(error.retryAfter, 7);
    assert.equal(fake.requests.length, 1);
  });

  test("a Retry-After longer than maxWaitMs is not waited for", async () => {
    fake.script(
      { status: 429, body: apiError("Throttled", "come back in a minute"), headers: { "Retry-After": "60" } },
      { status: 200, body: SESSION },
    );
    const started = Date.now();
    const error = await rejection(client({ maxWaitMs: 5_000 }).sessions.get("s_1"));
    assert.ok(error instanceof Throttled);
    assert.equal(error.retryAfter, 60);
    assert.equal(fake.requests.length, 1);
    assert.ok(Date.now() - started < 2_000);
  });

  test("a lost connection is retried for a GET", async () => {
    fake.script({ drop: true }, { status: 200, body: SESSION });
    const session = await client().sessions.get("s_1");
    assert.equal(session.id, "s_1");
    assert.equal(fake.requests.length, 2);
  });

  test("a lost connection on a POST is a ConnectionError, not resent", async () => {
    fake.script({ drop: true }, { status: 201, body: SESSION });
    const error = await rejection(client().sessions.create({ agentId: "ag_1" }));
    assert.ok(error instanceof ConnectionError);
    assert.equal(error.status, 0);
    assert.match(error.message, /^POST \/v1\/sessions: /);
    assert.equal(fake.requests.length, 1);
  });

  test("an attempt past timeoutMs is abandoned", async () => {
    fake.script({ hang: true });
    const error = await rejection(client({ timeoutMs: 200, maxRetries: 0 }).sessions.get("s_1"));
    assert.ok(error instanceof ConnectionError);
    assert.match(error.message, /no answer within 200 ms/);
  });

  test("the caller's abort ends the call at once, without retries", async () => {
    fake.script({ hang: true }, { status: 200, body: SESSION });
    const controller = new AbortController();
    const call = client().request("GET", "/v1/sessions/s_1", { signal: controller.signal });
    setTimeout(() => controller.abort(new Error("stop")), 100);
    const error = await rejection(call);
    assert.ok(error instanceof Error && error.message === "stop");
    assert.equal(fake.requests.length, 1);
  });
});

describe("errors", () => {
  test("each _tag gives its class, with status, code, message and path", async () => {
    fake.script({ status: 400, body: apiError("ValidationError", "bad kind", ["command", "kind"]) });
    const error = await rejection(client().sessions.get("s_1"));
    assert.ok(error instanceof ValidationError && error instanceof AgentMemoryError);
    assert.equal(error.name, "ValidationError");
    assert.deepEqual(
      [error.status, error.code, error.message, error.path],
      [400, "ValidationError", "bad kind", ["command", "kind"]],
    );
  });

  test("409 tags are Conflict subclasses", async () => {
    fake.script(
      { status: 409, body: apiError("SessionConflict", "stale") },
      { status: 409, body: apiError("ChatConflict", "review chat") },
    );
    const stale = await rejection(client().sessions.get("s_1"));
    assert.ok(stale instanceof SessionConflict && stale instanceof Conflict);
    const chat = await rejection(client().sessions.get("s_1"));
    assert.ok(chat instanceof ChatConflict && !(chat instanceof SessionConflict));
  });

  test("an unknown tag falls back to the base class and keeps its name", async () => {
    fake.script({ status: 409, body: apiError("LearningConflict", "busy", ["x"]) });
    const error = await rejection(client().sessions.get("s_1"));
    assert.ok(error instanceof AgentMemoryError);
    assert.equal(error.constructor, AgentMemoryError);
    assert.equal(error.code, "LearningConflict");
    assert.equal(error.message, "busy");
    assert.deepEqual(error.path, ["x"]);
  });

  test("a non-JSON error body still gives a clear error", async () => {
    fake.script({ status: 502, text: "<html><body>Bad Gateway</body></html>" });
    const error = await rejection(client({ maxRetries: 0 }).sessions.get("s_1"));
    assert.ok(error instanceof AgentMemoryError);
    assert.equal(error.status, 502);
    assert.match(error.message, /HTTP 502 .*Bad Gateway/);
    assert.equal(error.body, "<html><body>Bad Gateway</body></html>");
  });

  test("without the API's body, the status names the class", async () => {
    fake.script({ status: 404, text: "no such route" });
    const error = await rejection(client().sessions.get("s_1"));
    assert.ok(error instanceof NotFound);
    assert.match(error.message, /no such route/);
  });

  test("a success answer that is not JSON is an error, not a crash", async () => {
    fake.script({ status: 200, text: "<html>portal login</html>" });
    const error = await rejection(client().sessions.get("s_1"));
    assert.ok(error instanceof AgentMemoryError);
    assert.match(error.message, /not JSON/);
  });
});

describe("optimistic updates", () => {
  const MEMORY = { entries: {}, overrides: {}, processed: [], settings: { use: true, generate: true } };
  const NEWER = { session: { ...SESSION.session, head: "v-2", revision: 1 } };

  test("on SessionConflict, update reads the session again and rebuilds the command", async () => {
    fake.script(
      { status: 200, body: SESSION },
      { status: 200, body: MEMORY },
      { status: 409, body: apiError("SessionConflict", "the session changed since you read it") },
      { status: 200, body: NEWER },
      { status: 200, body: MEMORY },
      { status: 200, body: { session: { ...NEWER.session, revision: 2 } } },
    );
    const built: string[] = [];
    const session = await client().sessions.memory.update("s_1", (current) => {
      built.push(current.head);
      return { _tag: "Forget", key: "budget" };
    });
    assert.equal(session.revision, 2);
    assert.deepEqual(built, ["v-1", "v-2"]);
    const commands = fake.requests.filter((r) => r.method === "POST").map((r) => JSON.parse(r.body));
    assert.deepEqual(
      commands.map((c) => [c.expected, c.revision]),
      [
        ["v-1", 0],
        ["v-2", 1],
      ],
    );
  });

  test("update gives up after `attempts`, and does not retry other errors", async () => {
    const stale = { status: 409, body: apiError("VersionConflict", "stale") } as const;
    const memory = { status: 200, body: { entries: {}, version: 4 } } as const;
    fake.script(memory, stale, memory, stale);
    const build = () => ({ _tag: "Forget", key: "tone" }) as const;
    const error = await rejection(client().agents.memory.update("ag_1", build, { attempts: 2 }));
    assert.ok(error instanceof VersionConflict);
    assert.equal(fake.requests.length, 4);

    fake.script(memory, { status: 404, body: apiError("NotFound", "agent not found") });
    assert.ok((await rejection(client().agents.memory.update("ag_1", build))) instanceof NotFound);
    assert.equal(fake.requests.length, 2);
  });

  test("build returning null applies nothing", async () => {
    fake.script({ status: 200, body: { version: 3, instructions: null, concurrency: null, budget: null, spentMicros: 0 } });
    const settings = await client().bots.settings.update("b_1", () => null);
    assert.equal(settings.version, 3);
    assert.equal(fake.requests.length, 1);
  });
});

describe("requests", () => {
  test("bearer token, JSON body, escaped path, query without the unset", async () => {
    fake.script(
      { status: 200, body: { data: [], has_more: false, object: "list" } },
      { status: 200, body: { entries: [], version: 3 } },
      { status: 204 },
    );
    const c = client({ headers: { "X-Trace": "t1" } });
    await c.agentMemories.list({ limit: 5, category: "fact", entity: undefined });
    await c.bots.memory.get("bot/1", { tags: ["food", "for:bot"] });
    await c.revokeMyToken("amk_ab");
    const [list, memory, revoke] = fake.requests;
    assert.equal(list!.headers.authorization, "Bearer tok_test");
    assert.equal(list!.headers["x-trace"], "t1");
    assert.equal(list!.url, "/v1/agent_memories?limit=5&category=fact");
    assert.equal(memory!.url, "/v1/bots/bot%2F1/memory?tags=food%2Cfor%3Abot");
    assert.deepEqual([revoke!.method, revoke!.url], ["DELETE", "/v1/me/tokens/amk_ab"]);
  });

  test("a body is sent as JSON, fields left out are not sent, null is", async () => {
    fake.script({ status: 201, body: SESSION });
    await client().sessions.create({ agentId: "ag_1", model: null });
    const [sent] = fake.requests;
    assert.equal(sent!.headers["content-type"], "application/json");
    assert.deepEqual(JSON.parse(sent!.body), { agentId: "ag_1", model: null });
  });

  test("actingFor sends Act-As with the same token; the original client does not", async () => {
    fake.script({ status: 200, body: SESSION }, { status: 200, body: SESSION });
    const backend = client({ token: "key_backend" });
    await backend.actingFor("ana").sessions.get("s_1");
    await backend.sessions.get("s_1");
    const [acting, plain] = fake.requests;
    assert.equal(acting!.headers["act-as"], "ana");
    assert.equal(acting!.headers.authorization, "Bearer key_backend");
    assert.equal(plain!.headers["act-as"], undefined);
  });

  test("a custom fetch is used", async () => {
    const seen: string[] = [];
    const c = new AgentMemory({
      baseUrl: "http://example.invalid/",
      token: "t",
      fetch: async (input) => {
        seen.push(input);
        return new Response(JSON.stringify({ status: "ok" }), { status: 200 });
      },
    });
    assert.deepEqual(await c.health(), { status: "ok" });
    assert.deepEqual(seen, ["http://example.invalid/healthz"]);
  });

  test("Retry-After as seconds or as an HTTP date", () => {
    const now = Date.parse("2026-01-01T00:00:00Z");
    assert.equal(parseRetryAfter("3", now), 3);
    assert.equal(parseRetryAfter("Thu, 01 Jan 2026 00:00:05 GMT", now), 5);
    assert.equal(parseRetryAfter(null, now), null);
    assert.equal(parseRetryAfter("soon", now), null);
  });
});

describe("a streamed export", () => {
  test("is read a line at a time after a 429, and an error answer throws", async () => {
    const text = '{"format":"agent-memory-export","version":1}\n{"type":"session","id":"s_1"}\n{"type":"end","lines":2}\n';
    fake.script(
      { status: 429, body: apiError("Throttled", "slow down"), headers: { "Retry-After": "0" } },
      { status: 200, text },
      { status: 403, body: apiError("Forbidden", "the operator reads no content") },
    );
    const lines: Record<string, unknown>[] = [];
    for await (const line of client().export()) lines.push(line);
    assert.deepEqual(lines.map((line) => line["type"] ?? line["format"]), ["agent-memory-export", "session", "end"]);
    assert.equal(fake.requests.at(-1)!.url, "/v1/me/export");
    const error = await rejection((async () => {
      for await (const _line of client().export()) assert.fail("an error answer has no lines");
    })());
    assert.ok(error instanceof AgentMemoryError && error.status === 403);
  });
});
