// Make ../typescript (@agent-memory/client, a `file:` dependency) usable: install its dev
// dependencies when it has none and build it when its dist/ is missing or older than its
// src/ or test/support/ (this package's tests use its local-service starter from there). An
// up-to-date build is left alone, so a test run of that package in the same checkout is not
// disturbed by its dist/ being removed and rebuilt under it.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const client = fileURLToPath(new URL("../../typescript", import.meta.url));
const npm = process.platform === "win32" ? "npm.cmd" : "npm";

function run(args) {
  console.log(`> npm ${args.join(" ")}  (in ${client})`);
  const result = spawnSync(npm, args, { cwd: client, stdio: "inherit" });
  if (result.status !== 0) process.exit(result.status ?? 1);
}

function newest(dir) {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    latest = Math.max(latest, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
  }
  return latest;
}

if (!existsSync(join(client, "node_modules", "typescript", "bin", "tsc"))) {
  run(["ci", "--no-audit", "--no-fund"]);
}
const outputs = ["src/index.js", "src/index.d.ts", "test/support/service.js", "test/support/service.d.ts"].map((path) =>
  join(client, "dist", path),
);
const sources = Math.max(newest(join(client, "src")), newest(join(client, "test", "support")));
if (outputs.some((path) => !existsSync(path) || statSync(path).mtimeMs < sources)) {
  run(["run", "build"]);
}
