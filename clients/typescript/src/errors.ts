/**
 * The API's errors as exceptions: one class per `_tag` of API.md "Errors", as in the Python
 * client (clients/python/agent_memory_client/errors.py).
 */

export type ErrorPath = (string | number)[];

export interface ErrorInit {
  status: number;
  message: string;
  code?: string;
  path?: ErrorPath;
  /** Seconds, from the answer's `Retry-After` header. */
  retryAfter?: number | null;
  /** The answer's body as received (parsed JSON, or text when it was not JSON). */
  body?: unknown;
  cause?: unknown;
}

/**
 * Any error the service answered: its HTTP `status`, `code` (the body's `_tag`), `message`
 * and `path` (the offending field, e.g. `["command", "kind"]`). A tag this client does not
 * know keeps its name in `code` on this base class.
 */
export class AgentMemoryError extends Error {
  /** The `_tag` this class stands for. */
  static readonly tag: string = "Error";

  readonly status: number;
  readonly code: string;
  readonly path: ErrorPath;
  readonly retryAfter: number | null;
  readonly body: unknown;

  constructor(init: ErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    const tag = (new.target as typeof AgentMemoryError).tag;
    this.name = new.target.name;
    this.status = init.status;
    this.code = init.code ?? tag;
    this.path = init.path ?? [];
    this.retryAfter = init.retryAfter ?? null;
    this.body = init.body;
  }
}

export class ValidationError extends AgentMemoryError {
  static override readonly tag: string = "ValidationError";
}

export class Unauthorized extends AgentMemoryError {
  static override readonly tag: string = "Unauthorized";
}

export class Forbidden extends AgentMemoryError {
  static override readonly tag: string = "Forbidden";
}

export class NotFound extends AgentMemoryError {
  static override readonly tag: string = "NotFound";
}

/** Any 409; the subclasses name which. */
export class Conflict extends AgentMemoryError {
  static override readonly tag: string = "Conflict";
}

export class SessionConflict extends Conflict {
  static override readonly tag: string = "SessionConflict";
}

export class VersionConflict extends Conflict {
  static override readonly tag: string = "VersionConflict";
}

export class ChatConflict extends Conflict {
  static override readonly tag: string = "ChatConflict";
}

export class EntryConflict extends Conflict {
  static override readonly tag: string = "EntryConflict";
}

export class ThreadConflict extends Conflict {
  static override readonly tag: string = "ThreadConflict";
}

export class TooLarge extends AgentMemoryError {
  static override readonly tag: string = "TooLarge";
}

export class Throttled extends AgentMemoryError {
  static override readonly tag: string = "Throttled";
}

export class Unavailable extends AgentMemoryError {
  static override readonly tag: string = "Unavailable";
}

/**
 * No answer at all: the connection failed or the attempt timed out (`status` 0). The
 * request may or may not have been carried out.
 */
export class ConnectionError extends AgentMemoryError {
  static override readonly tag: string = "ConnectionError";
}

type ErrorClass = new (init: ErrorInit) => AgentMemoryError;

const BY_TAG: ReadonlyMap<string, ErrorClass> = new Map(
  [
    ValidationError,
    Unauthorized,
    Forbidden,
    NotFound,
    Conflict,
    SessionConflict,
    VersionConflict,
    ChatConflict,
    EntryConflict,
    ThreadConflict,
    TooLarge,
    Throttled,
    Unavailable,
  ].map((cls) => [cls.tag, cls] as const),
);

// For answers without the API's error body (a proxy's or a load balancer's, say).
const BY_STATUS: ReadonlyMap<number, ErrorClass> = new Map<number, ErrorClass>([
  [400, ValidationError],
  [401, Unauthorized],
  [403, Forbidden],
  [404, NotFound],
  [409, Conflict],
  [413, TooLarge],
  [429, Throttled],
  [503, Unavailable],
]);

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * The exception for an error answer. With the API's body `{"error": {"_tag", "message",
 * "path"}}`: the class of that tag (the base class for a tag this client does not know).
 * Without it (not JSON, or JSON of another shape): the class of the status, with a message
 * that quotes the start of the body.
 */
export function errorFromAnswer(
  status: number,
  text: string,
  retryAfter: number | null = null,
): AgentMemoryError {
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // Not JSON: handled below with the text itself.
  }
  const error = isObject(body) ? body["error"] : undefined;
  if (isObject(error) && typeof error["_tag"] === "string" && error["_tag"] !== "") {
    const tag = error["_tag"];
    const message = typeof error["message"] === "string" ? error["message"] : "";
    const rawPath = Array.isArray(error["path"]) ? error["path"] : [];
    const path = rawPath.filter(
      (part): part is string | number => typeof part === "string" || typeof part === "number",
    );
    const cls = BY_TAG.get(tag) ?? AgentMemoryError;
    return new cls({ status, message: message || `HTTP ${status} ${tag}`, code: tag, path, retryAfter, body });
  }
  const cls = BY_STATUS.get(status) ?? AgentMemoryError;
  const excerpt = text.trim().replace(/\s+/g, " ").slice(0, 200);
  const message = excerpt
    ? `HTTP ${status} without the API's error body: ${excerpt}`
    : `HTTP ${status} with an empty body`;
  return new cls({ status, message, retryAfter, body });
}
