/**
 * One call to the service: URL and body encoding, the bearer token, the retry rule, and the
 * typed error of an error answer. Uses only the platform's `fetch`, so it runs on Node 20+,
 * Deno, Bun and edge runtimes alike.
 */
import { AgentMemoryError, ConnectionError, errorFromAnswer } from "./errors.js";
import type { Answer, HttpMethod, Path, PathParams, Query, RequestBody } from "./types.js";

export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

export interface ClientOptions {
  /** The service's URL, e.g. `http://127.0.0.1:8080`. */
  baseUrl: string;
  /** A user's token (or the admin token for `client.admin`). */
  token: string;
  /** The `fetch` to use; default the platform's. */
  fetch?: FetchLike;
  /** Retries after the first attempt; 0 disables retrying. Default 2. */
  maxRetries?: number;
  /** The first backoff, doubled each retry (with jitter). Default 500 ms. */
  backoffMs?: number;
  /**
   * The longest wait before a retry. A `Retry-After` longer than this is not waited for:
   * the `Throttled` error is thrown at once, its `retryAfter` saying when to come back.
   * Default 30 000 ms.
   */
  maxWaitMs?: number;
  /** Each attempt's time limit (answer body included); 0: none. Default 30 000 ms. */
  timeoutMs?: number;
  /** Extra headers sent with every request. */
  headers?: Record<string, string>;
  /** With a service key: the person of its organization every request acts for (`Act-As`). */
  actAs?: string;
}

export interface RequestOptions {
  query?: Record<string, QueryValue | QueryValue[] | null | undefined>;
  body?: unknown;
  /**
   * May the request be sent again after a 5xx or a lost connection? Default: true for GET,
   * PUT and DELETE, false otherwise (a POST or PATCH might have been carried out).
   */
  idempotent?: boolean;
  signal?: AbortSignal;
}

type QueryValue = string | number | boolean;

/** What a typed call takes: the route's own path parameters, query and body types. */
export interface CallArgs<P extends Path, M extends HttpMethod> {
  path?: PathParams<P, M>;
  query?: Query<P, M>;
  body?: RequestBody<P, M>;
  idempotent?: boolean;
  signal?: AbortSignal;
}

const IDEMPOTENT_METHODS = new Set(["GET", "HEAD", "PUT", "DELETE"]);

/** `Retry-After` in seconds (a number of seconds, or an HTTP date); null when absent or unreadable. */
export function parseRetryAfter(value: string | null, now: number = Date.now()): number | null {
  if (value === null || value.trim() === "") return null;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds);
  const when = Date.parse(value);
  if (Number.isNaN(when)) return null;
  return Math.max(0, (when - now) / 1000);
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** `template` with each `{name}` replaced by its value, escaped as one path segment. */
export function fillPath(template: string, values: Record<string, string | number> = {}): string {
  return template.replace(/\{([^}]+)\}/g, (_whole, name: string) => {
    const value = values[name];
    if (value === undefined) throw new TypeError(`${template}: no value for {${name}}`);
    return encodeURIComponent(String(value));
  });
}

function queryString(query: RequestOptions["query"]): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query ?? {})) {
    if (value === undefined || value === null) continue;
    // The API reads lists in a query (bot memory `tags`) comma-separated.
    params.set(name, Array.isArray(value) ? value.join(",") : String(value));
  }
  const text = params.toString();
  return text ? `?${text}` : "";
}

type Attempt =
  | { ok: true; status: number; headers: Headers; text: string }
  | { ok: false; error: unknown; timedOut: boolean };

export class Transport {
  readonly baseUrl: string;
  readonly maxRetries: number;
  readonly backoffMs: number;
  readonly maxWaitMs: number;
  readonly timeoutMs: number;
  private readonly headers: Record<string, string>;
  private readonly fetchImpl: FetchLike;

  constructor(options: ClientOptions) {
    if (!options.baseUrl) throw new TypeError("AgentMemory: baseUrl is required");
    if (!options.token) throw new TypeError("AgentMemory: token is required");
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.maxRetries = Math.max(0, Math.floor(options.maxRetries ?? 2));
    this.backoffMs = options.backoffMs ?? 500;
    this.maxWaitMs = options.maxWaitMs ?? 30_000;
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.headers = {
      ...options.headers,
      Accept: "application/json",
      Authorization: `Bearer ${options.token}`,
    };
    if (options.actAs !== undefined) this.headers["Act-As"] = options.actAs;
    // Called through a closure: some runtimes refuse a `fetch` detached from globalThis.
    this.fetchImpl = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  }

  /** A typed call of one route of infra/openapi.json. */
  call<P extends Path, M extends HttpMethod>(
    method: M,
    path: P,
    args: CallArgs<P, M> = {},
  ): Promise<Answer<P, M>> {
    const url = fillPath(path, (args.path ?? {}) as Record<string, string | number>);
    return this.request(method.toUpperCase(), url, {
      query: args.query as RequestOptions["query"],
      body: args.body,
      idempotent: args.idempotent,
      signal: args.signal,
    }) as Promise<Answer<P, M>>;
  }

  /**
   * One request with the retry rule: a 429 is retried for every method (the service did not
   * carry it out), after `Retry-After` when given; a 5xx or a lost connection only when the
   * request is idempotent. Answers the parsed JSON (undefined for an empty body); throws an
   * `AgentMemoryError` subclass for an error answer.
   */
  async request(method: string, path: string, options: RequestOptions = {}): Promise<unknown> {
    const url = `${this.baseUrl}${path}${queryString(options.query)}`;
    const idempotent = options.idempotent ?? IDEMPOTENT_METHODS.has(method);
    const headers: Record<string, string> = { ...this.headers };
    let body: string | undefined;
    if (options.body !== undefined) {
      headers["Content-Type"] = "application/json";
      body = JSON.stringify(options.body);
    }
    for (let attempt = 0; ; attempt++) {
      const outcome = await this.attempt(url, { method, headers, body }, options.signal);
      const retriesLeft = attempt < this.maxRetries;
      if (!outcome.ok) {
        // The caller's own abort is final; anything else is a connection that failed.
        if (options.signal?.aborted) throw options.signal.reason;
        if (idempotent && retriesLeft) {
          await sleep(this.backoff(attempt), options.signal);
          continue;
        }
        const why = outcome.timedOut
          ? `no answer within ${this.timeoutMs} ms`
          : describe(outcome.error);
        throw new ConnectionError({
          status: 0,
          message: `${method} ${path}: ${why}`,
          cause: outcome.error,
        });
      }
      const { status, headers: answerHeaders, text } = outcome;
      if (status < 400) return parseAnswer(status, text, method, path);
      const retryAfter = parseRetryAfter(answerHeaders.get("retry-after"));
      const retriable = status === 429 || (status >= 500 && idempotent);
      if (retriable && retriesLeft) {
        const wait = retryAfter === null ? this.backoff(attempt) : retryAfter * 1000;
        if (wait <= this.maxWaitMs) {
          await sleep(wait, options.signal);
          continue;
        }
      }
      throw errorFromAnswer(status, text, retryAfter);
    }
  }

  /**
   * A route that answers one JSON object a line (`application/x-ndjson`), read as it
   * streams: each line is parsed when it arrives, the whole answer is never held. An error
   * answer throws as `request` does; a 429 is retried the same way, before any line.
   */
  async *lines<P extends Path>(
    method: HttpMethod,
    path: P,
    signal?: AbortSignal,
  ): AsyncGenerator<Record<string, unknown>> {
    const url = `${this.baseUrl}${path}`;
    const headers = { ...this.headers, Accept: "application/x-ndjson" };
    for (let attempt = 0; ; attempt++) {
      const response = await this.fetchImpl(url, { method: method.toUpperCase(), headers, signal });
      if (response.status >= 400) {
        const text = await response.text();
        const retryAfter = parseRetryAfter(response.headers.get("retry-after"));
        const wait = retryAfter === null ? this.backoff(attempt) : retryAfter * 1000;
        if (response.status === 429 && attempt < this.maxRetries && wait <= this.maxWaitMs) {
          await sleep(wait, signal);
          continue;
        }
        throw errorFromAnswer(response.status, text, retryAfter);
      }
      if (response.body === null) return;
      const decoder = new TextDecoder();
      let pending = "";
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        pending += decoder.decode(chunk, { stream: true });
        for (let end = pending.indexOf("\n"); end >= 0; end = pending.indexOf("\n")) {
          const line = pending.slice(0, end);
          pending = pending.slice(end + 1);
          if (line.trim()) yield JSON.parse(line) as Record<string, unknown>;
        }
      }
      pending += decoder.decode();
      if (pending.trim()) yield JSON.parse(pending) as Record<string, unknown>;
      return;
    }
  }

  /** Exponential backoff with jitter: spreads clients that were turned away together. */
  private backoff(attempt: number): number {
    const delay = this.backoffMs * 2 ** attempt * (0.5 + Math.random() / 2);
    return Math.min(delay, this.maxWaitMs);
  }

  private async attempt(url: string, init: RequestInit, signal?: AbortSignal): Promise<Attempt> {
    const controller = new AbortController();
    let timedOut = false;
    const timer =
      this.timeoutMs > 0
        ? setTimeout(() => {
            timedOut = true;
            controller.abort();
          }, this.timeoutMs)
        : undefined;
    const forward = () => controller.abort(signal?.reason);
    if (signal?.aborted) forward();
    signal?.addEventListener("abort", forward, { once: true });
    try {
      const response = await this.fetchImpl(url, { ...init, signal: controller.signal });
      // The body is read inside the time limit too: a stalled body counts as no answer.
      const text = await response.text();
      return { ok: true, status: response.status, headers: response.headers, text };
    } catch (error) {
      return { ok: false, error, timedOut };
    } finally {
      if (timer !== undefined) clearTimeout(timer);
      signal?.removeEventListener("abort", forward);
    }
  }
}

function parseAnswer(status: number, text: string, method: string, path: string): unknown {
  if (text === "") return undefined;
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new AgentMemoryError({
      status,
      message: `${method} ${path}: the answer (HTTP ${status}) is not JSON: ${text.slice(0, 200)}`,
      body: text,
      cause: error,
    });
  }
}

function describe(error: unknown): string {
  if (error instanceof Error) {
    const cause = (error as { cause?: unknown }).cause;
    const detail = cause instanceof Error ? `: ${cause.message}` : "";
    return `${error.message}${detail}`;
  }
  return String(error);
}
