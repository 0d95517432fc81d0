// src/schema.d.ts from infra/openapi.json, by openapi-typescript.
//   node scripts/gen.mjs          write it (npm run gen)
//   node scripts/gen.mjs --check  fail when the checked-in file differs from what the
//                                 document makes now (npm run check-gen): the API changed and
//                                 `npm run gen` was not run, or the file was edited by hand.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const spec = join(root, "..", "..", "infra", "openapi.json");
const checkedIn = join(root, "src", "schema.d.ts");
const cli = join(root, "node_modules", "openapi-typescript", "bin", "cli.js");

function generate(out) {
  // Properties with a default stay optional: the service fills them in when a body leaves
  // them out, so a request need not send them.
  const args = [cli, spec, "--default-non-nullable", "false", "-o", out];
  const run = spawnSync(process.execPath, args, { encoding: "utf8" });
  if (run.status !== 0) {
    console.error(run.stdout, run.stderr);
    console.error("gen: openapi-typescript failed");
    process.exit(1);
  }
}

if (process.argv.includes("--check")) {
  const work = mkdtempSync(join(tmpdir(), "agent-memory-gen-"));
  try {
    const fresh = join(work, "schema.d.ts");
    generate(fresh);
    if (readFileSync(fresh, "utf8") !== readFileSync(checkedIn, "utf8")) {
      console.error(
        "check-gen: src/schema.d.ts is stale: it differs from what infra/openapi.json makes now.\n" +
          "Run `npm run gen` in clients/typescript and commit the result.",
      );
      process.exit(1);
    }
    console.log("check-gen: src/schema.d.ts matches infra/openapi.json");
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
} else {
  generate(checkedIn);
  console.log("gen: wrote src/schema.d.ts");
}
