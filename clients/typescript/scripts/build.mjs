// dist/ from scratch: the package (src, with declarations) and the tests.
import { spawnSync } from "node:child_process";
import { copyFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const tsc = join(root, "node_modules", "typescript", "bin", "tsc");

// A clean dist/, so that tests of deleted files never run from a stale output.
rmSync(join(root, "dist"), { recursive: true, force: true });
for (const project of ["tsconfig.json", "tsconfig.test.json"]) {
  const run = spawnSync(process.execPath, [tsc, "-p", join(root, project)], { stdio: "inherit" });
  if (run.status !== 0) process.exit(run.status ?? 1);
}
// tsc does not copy a hand-written (here: generated) .d.ts; the emitted types.d.ts imports it.
copyFileSync(join(root, "src", "schema.d.ts"), join(root, "dist", "src", "schema.d.ts"));
