/**
 * Names for the generated OpenAPI types (src/schema.d.ts, from infra/openapi.json), and the
 * helpers that read a route's body, query and answer types off `paths`.
 */
import type { components, paths } from "./schema.js";

export type { components, paths, operations } from "./schema.js";

export type HttpMethod = "get" | "post" | "put" | "patch" | "delete";
export type Path = keyof paths;

/** The OpenAPI operation of `method` on `path` (never when the route has no such method). */
export type Operation<P extends Path, M extends HttpMethod> = NonNullable<paths[P][M]>;

type Json<T> = T extends { content: { "application/json": infer J } } ? J : never;

/** The JSON body the route takes. */
export type RequestBody<P extends Path, M extends HttpMethod> =
  Operation<P, M> extends { requestBody?: infer B } ? Json<NonNullable<B>> : never;

/** The JSON of the route's success answer (undefined for a 204). */
export type Answer<P extends Path, M extends HttpMethod> =
  Operation<P, M> extends { responses: infer R }
    ? 200 extends keyof R
      ? Json<R[200]>
      : 201 extends keyof R
        ? Json<R[201]>
        : undefined
    : never;

/** The route's query parameters. */
export type Query<P extends Path, M extends HttpMethod> = NonNullable<
  Operation<P, M>["parameters"]["query"]
>;

/** The route's path parameters (`{sessionId}` and the like). */
export type PathParams<P extends Path, M extends HttpMethod> = NonNullable<
  Operation<P, M>["parameters"]["path"]
>;

type Schemas = components["schemas"];

// Objects the service answers.
export type Agent = Schemas["AgentOut"];
export type AgentList = Schemas["AgentList"];
export type DeletedAgent = Schemas["DeletedAgent"];
export type AgentMemoryState = Schemas["AgentMemoryAnswer"];
export type AgentMemoryChange = Schemas["ChangeOut"];
export type Draft = Schemas["DraftOut"];
export type Version = Schemas["VersionOut"];
export type Versions = Schemas["VersionsAnswer"];
export type Session = Schemas["SessionOut"];
export type SessionList = Schemas["SessionList"];
export type DeletedSession = Schemas["DeletedSession"];
export type SessionItem = Schemas["SessionItemOut"];
export type SessionItemList = Schemas["SessionItemList"];
export type SessionMemory = Schemas["SessionMemory"];
export type TurnAnswer = Schemas["TurnAnswer"];
export type MemoryText = Schemas["MemoryText"];
export type Execution = Schemas["Executions"]["executions"][number];
export type AgentMemoryObject = Schemas["AgentMemoryOut"];
export type AgentMemoryList = Schemas["AgentMemoryList"];
export type DeletedAgentMemory = Schemas["DeletedAgentMemory"];
export type Bot = Schemas["BotOut"];
export type BotList = Schemas["BotsAnswer"];
export type Link = Schemas["LinkOut"];
export type BotEntry = Schemas["BotEntryOut"];
export type BotMemory = Schemas["BotMemory"];
export type BotMemoryChange = Schemas["BotMemoryChange"];
export type BotLogChange = Schemas["LogChangeOut"];
export type BotSettings = Schemas["BotSettingsOut"];
export type BotExecution = Schemas["BotExecution"];
export type BotContext = Schemas["ContextText"];
export type SharedEntry = Schemas["SharedEntry"];
export type Channel = Schemas["ChannelOut"];
export type ChannelList = Schemas["ChannelsAnswer"];
export type Chat = Schemas["ChatOut"];
export type ChatList = Schemas["ChatsAnswer"];
export type ChatItem = Schemas["ItemOut"];
export type ChatTurn = Schemas["ChatTurnOut"];
export type TurnStarted = Schemas["TurnStarted"];
export type TurnCompleted = Schemas["TurnCompleted"];
export type ConfideAnswered = Schemas["ConfideAnswered"];
export type Confession = Schemas["ConfessionOut"];
export type Enrichment = Schemas["EnrichmentOut"];
export type Thread = Schemas["ThreadOut"];
export type ThreadList = Schemas["ThreadsAnswer"];
export type Message = Schemas["MessageOut"];
export type ThreadContext = Schemas["ContextAnswer"];
export type WorkingMemory = Schemas["WorkingMemoryOut"];
export type ObservationLog = Schemas["ObservationLog"];
export type RecalledMessage = Schemas["RecalledMessage"];
export type Event = Schemas["EventOut"];
export type EventPage = Schemas["EventsAnswer"];
export type Caller = Schemas["CallerOut"];
export type MyToken = Schemas["MyToken"];
export type IssuedToken = Schemas["IssuedToken"];
export type Capabilities = Schemas["CapabilitiesAnswer"];
export type CreatedOrganization = Schemas["CreatedOrganization"];
export type CreatedUser = Schemas["CreatedUser"];
export type OrganizationSettings = Schemas["OrganizationSettings"];
export type ErasedUser = Schemas["ErasedUser"];
export type ServiceKey = Schemas["ServiceKeyOut"];
export type CreatedServiceKey = Schemas["CreatedServiceKey"];
export type OrganizationUser = Schemas["UserOut"];
export type OrganizationUsers = Schemas["OrgUsers"];
export type ListedOrganization = Schemas["OrganizationOut"];
export type OrganizationList = Schemas["Organizations"];
export type DeletedOrganization = Schemas["DeletedOrganization"];
export type RenameUser = Schemas["RenameUser"];
export type Health = Answer<"/healthz", "get">;

// Bodies the service takes.
export type CreateAgent = Schemas["CreateAgent"];
export type AgentMemoryCommand = Schemas["AgentMemoryCommand"];
export type AgentCommand = AgentMemoryCommand["command"];
export type PatchDraft = Schemas["PatchDraft"];
export type CreateSession = Schemas["CreateSession"];
export type PostTurn = Schemas["PostTurn"];
export type TurnItem = Schemas["TurnItem"];
export type Promote = Schemas["Promote"];
export type SessionMemoryCommand = Schemas["MemoryCommand"];
export type SessionCommand = SessionMemoryCommand["command"];
export type CreateAgentMemory = Schemas["CreateAgentMemory"];
export type UpdateAgentMemory = Schemas["UpdateAgentMemory"];
export type RecallAgentMemories = Schemas["RecallAgentMemories"];
export type CreateBot = Schemas["CreateBot"];
export type CreateLink = Schemas["CreateLink"];
export type BotSettingsPatch = Schemas["BotSettingsPatch"];
export type ContextAsk = Schemas["ContextAsk"];
export type Share = Schemas["Share"];
export type CreateChannel = Schemas["CreateChannel"];
export type ChangeMembers = Schemas["ChangeMembers"];
export type CreateChat = Schemas["CreateChat"];
export type StartTurn = Schemas["StartTurn"];
export type ItemIn = Schemas["ItemIn"];
export type CompleteTurn = Schemas["CompleteTurn"];
export type CreateThread = Schemas["CreateThread"];
export type UpdateThread = Schemas["UpdateThread"];
export type DeletedThread = Schemas["DeletedThread"];
export type MessageIn = Schemas["MessageIn"];
export type ThreadRecall = Schemas["RecallRequest"];
export type WorkingMemoryIn = Schemas["WorkingMemoryIn"];
export type CreateOrganization = Schemas["CreateOrganization"];
export type CreateUser = Schemas["CreateUser"];
export type SettingsPatch = Schemas["SettingsPatch"];
export type CreateServiceKey = Schemas["CreateServiceKey"];
export type AddUser = Schemas["AddUser"];
