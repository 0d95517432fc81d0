// dist/ from scratch (tsc, strict): the package (src, with declarations) and the tests.
import { spawnSync } from "node:child_process";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const tsc = join(root, "node_modules", "typescript", "bin", "tsc");
rmSync(join(root, "dist"), { recursive: true, force: true });
for (const project of ["tsconfig.json", "tsconfig.test.json"]) {
  const run = spawnSync(process.execPath, [tsc, "-p", join(root, project)], { stdio: "inherit" });
  if (run.status !== 0) process.exit(run.status ?? 1);
}
