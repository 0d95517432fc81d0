/**
 * A tiny scripted HTTP server on loopback: each request gets the next scripted reply, and
 * every request is recorded, so a test can count what the client sent.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface Recorded {
  method: string;
  url: string;
  headers: IncomingMessage["headers"];
  body: string;
  at: number;
}

export type Reply =
  | { status: number; body?: unknown; text?: string; headers?: Record<string, string> }
  /** Close the connection without an answer (a lost connection, for the client). */
  | { drop: true }
  /** Never answer (a hung service). */
  | { hang: true };

export class FakeService {
  readonly requests: Recorded[] = [];
  private readonly replies: Reply[] = [];
  private readonly hung: ServerResponse[] = [];

  private constructor(private readonly server: Server) {}

  static async start(): Promise<FakeService> {
    let fake: FakeService | undefined;
    const server = createServer((request, response) => {
      void fake?.handle(request, response);
    });
    fake = new FakeService(server);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return fake;
  }

  get url(): string {
    const { port } = this.server.address() as AddressInfo;
    return `http://127.0.0.1:${port}`;
  }

  /** Queue replies, answered in order; once they run out, every request gets a 500. */
  script(...replies: Reply[]): this {
    this.requests.length = 0;
    this.replies.splice(0, this.replies.length, ...replies);
    return this;
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    let body = "";
    for await (const chunk of request) body += String(chunk);
    this.requests.push({
      method: request.method ?? "",
      url: request.url ?? "",
      headers: request.headers,
      body,
      at: Date.now(),
    });
    const reply = this.replies.shift() ?? { status: 500, text: "the test scripted no reply" };
    if ("drop" in reply) {
      request.socket.destroy();
      return;
    }
    if ("hang" in reply) {
      this.hung.push(response);
      return;
    }
    const text = reply.text ?? (reply.body === undefined ? "" : JSON.stringify(reply.body));
    const type = reply.text === undefined ? "application/json" : "text/html";
    response.writeHead(reply.status, { "content-type": type, ...reply.headers });
    response.end(text);
  }

  async stop(): Promise<void> {
    for (const response of this.hung) response.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** The API's error body. */
export function apiError(tag: string, message: string, path: (string | number)[] = []): unknown {
  return { error: { _tag: tag, message, path } };
}
