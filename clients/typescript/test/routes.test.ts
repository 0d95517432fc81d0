/**
 * Every operation of infra/openapi.json has a method in src/client.ts, and the client calls
 * no route the document lacks (tsc already refuses a path or method that `paths` lacks; this
 * catches a route added to the API without a client method).
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

import { repoRoot } from "./support/service.js";

const METHODS = ["get", "post", "put", "patch", "delete"];

test("the client calls every route of infra/openapi.json, and only those", () => {
  const root = repoRoot();
  const spec = JSON.parse(readFileSync(join(root, "infra", "openapi.json"), "utf8")) as {
    paths: Record<string, Record<string, unknown>>;
  };
  const documented = new Set<string>();
  for (const [path, item] of Object.entries(spec.paths)) {
    for (const method of METHODS) if (method in item) documented.add(`${method.toUpperCase()} ${path}`);
  }
  const source = readFileSync(join(root, "clients", "typescript", "src", "client.ts"), "utf8");
  const called = new Set<string>();
  for (const match of source.matchAll(/\.(?:call|lines)\(\s*"(\w+)",\s*"([^"]+)"/g)) {
    called.add(`${match[1]!.toUpperCase()} ${match[2]}`);
  }
  assert.deepEqual([...documented].filter((route) => !called.has(route)).sort(), [], "routes without a method");
  assert.deepEqual([...called].filter((route) => !documented.has(route)).sort(), [], "methods without a route");
  assert.ok(documented.size >= 80, `only ${documented.size} operations read: is the regex stale?`);
});
