/**
 * The real local service (`python -m infra.local.serve`, what `make run` runs) on a free
 * port with a temporary data directory and a random admin token, for the live tests of this
 * package and of clients/mastra (which imports this file's build from dist/test/support/).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, openSync, readFileSync, rmSync, closeSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { AgentMemory } from "../../src/index.js";

/** The checkout's root: the first folder above this file that holds infra/local/serve.py. */
export function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, "infra", "local", "serve.py"))) return dir;
    const parent = dirname(dir);
    if (parent === dir) throw new Error("no infra/local/serve.py above this test");
    dir = parent;
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      const port = typeof address === "object" && address ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

export interface User {
  organizationId: string;
  userId: string;
  token: string;
  client: AgentMemory;
}

export class LocalService {
  private constructor(
    readonly url: string,
    readonly adminToken: string,
    private readonly process: ChildProcess,
    private readonly workdir: string,
    private readonly logFile: string,
  ) {}

  /** Start the service and wait for `GET /healthz` (at most `timeoutMs`). */
  static async start(timeoutMs = 30_000): Promise<LocalService> {
    const root = repoRoot();
    const python = join(root, ".venv", "bin", "python");
    if (!existsSync(python)) throw new Error(`${python} is missing: run \`make\` at the repo root first`);
    const workdir = mkdtempSync(join(tmpdir(), "agent-memory-live-"));
    const logFile = join(workdir, "serve.log");
    const port = await freePort();
    const adminToken = `amk_admin_${randomBytes(20).toString("hex")}`;
    const env: NodeJS.ProcessEnv = { ...process.env };
    // Only the built-in local models: the tests never reach a model provider.
    for (const name of ["AWS_ENDPOINT_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY"]) {
      delete env[name];
    }
    Object.assign(env, {
      PORT: String(port),
      MEMORY_DATA_DIR: join(workdir, "data"),
      MEMORY_ADMIN_TOKEN: adminToken,
      DEFAULT_MODEL: "local/rules",
      // Many calls in a few seconds from one token: no rate limit (retries are tested apart).
      RATE_LIMIT_PER_MINUTE: "0",
      LOG_LEVEL: "WARNING",
      PYTHONPATH: [join(root, "layers", "core"), root].join(":"),
    });
    const log = openSync(logFile, "w");
    const child = spawn(python, ["-m", "infra.local.serve"], {
      cwd: root,
      env,
      stdio: ["ignore", log, log],
      // Its own process group, so that stop() ends it and anything it started.
      detached: true,
    });
    closeSync(log);
    const service = new LocalService(`http://127.0.0.1:${port}`, adminToken, child, workdir, logFile);
    // Should this test process end without stop() (a crash, a cancelled run), the service goes too.
    process.once("exit", () => service.kill("SIGKILL"));
    for (const signal of ["SIGINT", "SIGTERM"] as const) {
      process.once(signal, () => {
        service.kill("SIGKILL");
        process.exit(128 + (signal === "SIGINT" ? 2 : 15));
      });
    }
    try {
      await service.waitHealthy(timeoutMs);
    } catch (error) {
      await service.stop();
      throw error;
    }
    return service;
  }

  output(): string {
    try {
      return readFileSync(this.logFile, "utf8");
    } catch {
      return "";
    }
  }

  private async waitHealthy(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (this.process.exitCode !== null || this.process.signalCode !== null) {
        throw new Error(`the service exited before answering:\n${this.output()}`);
      }
      try {
        const answer = await fetch(`${this.url}/healthz`);
        // A server of someone else's that took the port would not pass the admin check below.
        if (answer.ok && this.process.exitCode === null) {
          const probe = await fetch(`${this.url}/v1/capabilities`, {
            headers: { Authorization: `Bearer ${this.adminToken}` },
          });
          if (probe.ok) return;
        }
      } catch {
        // Not listening yet.
      }
      if (Date.now() > deadline) throw new Error(`no /healthz within ${timeoutMs} ms:\n${this.output()}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  client(token: string, options: Partial<ConstructorParameters<typeof AgentMemory>[0]> = {}): AgentMemory {
    return new AgentMemory({ baseUrl: this.url, token, ...options });
  }

  /** A new organization and a user of it, with a client holding the user's token. */
  async user(role: "member" | "admin" = "admin", organizationId?: string): Promise<User> {
    const admin = this.client(this.adminToken);
    const orgId = organizationId ?? (await admin.admin.createOrganization({ name: "live-test" })).id;
    const created = await admin.admin.createUser({ organizationId: orgId, role });
    return { organizationId: orgId, userId: created.id, token: created.token, client: this.client(created.token) };
  }

  private kill(signal: NodeJS.Signals): void {
    const pid = this.process.pid;
    if (pid === undefined || this.process.exitCode !== null || this.process.signalCode !== null) return;
    try {
      process.kill(-pid, signal);
    } catch {
      // Already gone.
    }
  }

  /** Stop the service (SIGTERM, then SIGKILL after 10 s) and remove its data. */
  async stop(): Promise<void> {
    const exited = new Promise<void>((resolve) => {
      if (this.process.exitCode !== null || this.process.signalCode !== null) resolve();
      else this.process.once("exit", () => resolve());
    });
    this.kill("SIGTERM");
    const timer = setTimeout(() => this.kill("SIGKILL"), 10_000);
    await exited;
    clearTimeout(timer);
    rmSync(this.workdir, { recursive: true, force: true });
  }
}
