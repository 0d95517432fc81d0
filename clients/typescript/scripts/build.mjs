// dist/ from scratch: the package (src, with declarations) and the tests. `build` is shared:
// clients/mastra/scripts/build.mjs builds its package the same way.
import { spawnSync } from "node:child_process";
import { copyFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

/**
 * Build the package at `root` with its own tsc: a clean dist/ (so that tests of deleted files
 * never run from a stale output), then tsconfig.json and tsconfig.test.json, the latter with
 * `testFlags` added.
 */
export function build(root, { testFlags = [] } = {}) {
  const tsc = join(root, "node_modules", "typescript", "bin", "tsc");
  rmSync(join(root, "dist"), { recursive: true, force: true });
  for (const [project, flags] of [
    ["tsconfig.json", []],
    ["tsconfig.test.json", testFlags],
  ]) {
    const run = spawnSync(process.execPath, [tsc, "-p", join(root, project), ...flags], { stdio: "inherit" });
    if (run.status !== 0) process.exit(run.status ?? 1);
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const root = fileURLToPath(new URL("..", import.meta.url));
  // The tests' declarations too: clients/mastra's tests import test/support/service.js from
  // this dist/ (one local-service starter for both packages), typed by its .d.ts.
  build(root, { testFlags: ["--declaration"] });
  // tsc does not copy a hand-written (here: generated) .d.ts; the emitted types.d.ts imports it.
  copyFileSync(join(root, "src", "schema.d.ts"), join(root, "dist", "src", "schema.d.ts"));
}
