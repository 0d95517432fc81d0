export { AgentMemory } from "./client.js";
export type {
  Admin,
  AgentMemories,
  AgentMemoryOfAgent,
  Agents,
  BotMemoryOfBot,
  Bots,
  BotSettingsOfBot,
  Channels,
  ChatItems,
  Chats,
  ChatTurns,
  Events,
  OrganizationPeople,
  Organizations,
  PageOptions,
  RetryOptions,
  SessionItems,
  ServiceKeys,
  SessionMemoryOfSession,
  Sessions,
  ThreadMessages,
  Threads,
  ThreadWorkingMemory,
} from "./client.js";
export {
  AgentMemoryError,
  ChatConflict,
  Conflict,
  ConnectionError,
  EntryConflict,
  errorFromAnswer,
  Forbidden,
  NotFound,
  SessionConflict,
  ThreadConflict,
  Throttled,
  TooLarge,
  Unauthorized,
  Unavailable,
  ValidationError,
  VersionConflict,
} from "./errors.js";
export type { ErrorInit, ErrorPath } from "./errors.js";
export { parseRetryAfter } from "./http.js";
export type { ClientOptions, FetchLike, RequestOptions } from "./http.js";
export { EventFeed } from "./paging.js";
export type { EventFeedOptions } from "./paging.js";
export type * from "./types.js";
