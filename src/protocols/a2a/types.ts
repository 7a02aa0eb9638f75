/**
 * A2A 1.0 wire types: the ProtoJSON shapes of `lf.a2a.v1` (A2A 1.0, JSON conventions and data model).
 *
 * Terminology:
 * - ProtoJSON: lowerCamelCase field names, enums as SCREAMING_SNAKE names, proto3 defaults omitted on
 *   output, oneofs discriminated by which member key is present (no `kind`, no `final` in 1.0).
 * - StreamResponse: the one envelope for every SSE frame and every push-notification body.
 * - Interrupted state: INPUT_REQUIRED / AUTH_REQUIRED; terminal: COMPLETED, FAILED, CANCELED, REJECTED.
 *
 * "A2A 1.0, <topic>" in protocols/ and host/ names the part of the A2A 1.0 specification a rule comes from;
 * docs/a2a-notes.md restates the ones a reader needs.
 *
 * These types describe what we WRITE (strict camelCase). Decoders in `decode.ts` accept the lenient
 * ProtoJSON input forms (snake_case aliases, enum integers) and produce these shapes.
 */

/** A2A protocol version this package speaks (Major.Minor only; A2A 1.0, versioning). */
export const A2A_PROTOCOL_VERSION = '1.0';
export const A2A_VERSION_HEADER = 'A2A-Version';
export const A2A_EXTENSIONS_HEADER = 'A2A-Extensions';
/** REST and push bodies (1.0.1: SHOULD for REST; push POSTs MUST use it). */
export const A2A_CONTENT_TYPE = 'application/a2a+json';
export const AGENT_CARD_PATH = '/.well-known/agent-card.json';

// --- enums --------------------------------------------------------------------------------------

/** Proto enum order matters: index = proto number (decoders accept the int form). */
export const TASK_STATES = [
  'TASK_STATE_UNSPECIFIED',
  'TASK_STATE_SUBMITTED',
  'TASK_STATE_WORKING',
  'TASK_STATE_COMPLETED',
  'TASK_STATE_FAILED',
  'TASK_STATE_CANCELED',
  'TASK_STATE_INPUT_REQUIRED',
  'TASK_STATE_REJECTED',
  'TASK_STATE_AUTH_REQUIRED',
] as const;
export type TaskState = (typeof TASK_STATES)[number];

export const TERMINAL_TASK_STATES: ReadonlySet<TaskState> = new Set([
  'TASK_STATE_COMPLETED',
  'TASK_STATE_FAILED',
  'TASK_STATE_CANCELED',
  'TASK_STATE_REJECTED',
]);
export const INTERRUPTED_TASK_STATES: ReadonlySet<TaskState> = new Set([
  'TASK_STATE_INPUT_REQUIRED',
  'TASK_STATE_AUTH_REQUIRED',
]);

export function isTerminalTaskState(state: string): boolean {
  return TERMINAL_TASK_STATES.has(state as TaskState);
}
export function isInterruptedTaskState(state: string): boolean {
  return INTERRUPTED_TASK_STATES.has(state as TaskState);
}

export const ROLES = ['ROLE_UNSPECIFIED', 'ROLE_USER', 'ROLE_AGENT'] as const;
export type Role = (typeof ROLES)[number];

// --- core data model ----------------------------------------------------------------------------

/** Struct / Value: any JSON. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

/**
 * Part: a oneof `content` of exactly one of `text | raw | url | data`, plus common fields.
 * `raw` is base64 (proto `bytes`). `data` is any JSON value (proto `Value`).
 */
export interface Part {
  text?: string;
  raw?: string;
  url?: string;
  data?: JsonValue;
  metadata?: JsonObject;
  filename?: string;
  mediaType?: string;
}

export interface Message {
  /** Creator-generated. REQUIRED. */
  messageId: string;
  contextId?: string;
  taskId?: string;
  role: Role;
  /** REQUIRED, at least one. */
  parts: Part[];
  metadata?: JsonObject;
  extensions?: string[];
  referenceTaskIds?: string[];
}

export interface TaskStatus {
  state: TaskState;
  message?: Message;
  /** RFC 3339 UTC with `Z`, millisecond precision. */
  timestamp?: string;
}

export interface Artifact {
  /** Unique within the task. REQUIRED. */
  artifactId: string;
  name?: string;
  description?: string;
  /** REQUIRED, at least one. */
  parts: Part[];
  metadata?: JsonObject;
  extensions?: string[];
}

export interface Task {
  id: string;
  contextId: string;
  status: TaskStatus;
  /** Absent in ListTasks results unless `includeArtifacts` (A2A 1.0, ListTasks). */
  artifacts?: Artifact[];
  history?: Message[];
  metadata?: JsonObject;
}

/** No `final` field in 1.0: end of stream is the transport close (A2A 1.0, streaming). */
export interface TaskStatusUpdateEvent {
  taskId: string;
  contextId: string;
  status: TaskStatus;
  metadata?: JsonObject;
}

export interface TaskArtifactUpdateEvent {
  taskId: string;
  contextId: string;
  artifact: Artifact;
  /** Append these parts to the artifact with the same id. Omitted when false. */
  append?: boolean;
  lastChunk?: boolean;
  metadata?: JsonObject;
}

/** oneof `payload`: exactly one member present. Every SSE frame and every push body. */
export type StreamResponse =
  | { task: Task }
  | { message: Message }
  | { statusUpdate: TaskStatusUpdateEvent }
  | { artifactUpdate: TaskArtifactUpdateEvent };

// --- push notifications -------------------------------------------------------------------------

export interface AuthenticationInfo {
  /** IANA HTTP auth scheme, case-insensitive (`Bearer`, `Basic`). REQUIRED. */
  scheme: string;
  /** Never returned by Get/List on our host (A2A#1681). */
  credentials?: string;
}

/** 1.0 flat shape (0.3 nested `pushNotificationConfig` is gone). */
export interface TaskPushNotificationConfig {
  tenant?: string;
  /** Server assigns when empty. */
  id?: string;
  taskId?: string;
  url: string;
  token?: string;
  authentication?: AuthenticationInfo;
}

// --- requests and responses ---------------------------------------------------------------------

export interface SendMessageConfiguration {
  acceptedOutputModes?: string[];
  /** Leave `taskId` empty: the server fills it. */
  taskPushNotificationConfig?: TaskPushNotificationConfig;
  /** Presence matters: unset = server default (all), 0 = none, N = at most N most recent. */
  historyLength?: number;
  /** Default false: blocking until terminal or interrupted (A2A 1.0, execution mode). */
  returnImmediately?: boolean;
}

export interface SendMessageRequest {
  tenant?: string;
  message: Message;
  configuration?: SendMessageConfiguration;
  metadata?: JsonObject;
}

/** JSON-RPC result / REST body of SendMessage: wrapper `{task}` or `{message}`. */
export type SendMessageResponse = { task: Task } | { message: Message };

export interface GetTaskRequest {
  tenant?: string;
  id: string;
  historyLength?: number;
}

export interface CancelTaskRequest {
  tenant?: string;
  id: string;
  metadata?: JsonObject;
}

export interface SubscribeToTaskRequest {
  tenant?: string;
  id: string;
}

export interface ListTasksRequest {
  tenant?: string;
  contextId?: string;
  status?: TaskState;
  /** 1..100, default 50 (0 accepted leniently as "default": clients send it). */
  pageSize?: number;
  pageToken?: string;
  historyLength?: number;
  /** RFC 3339; tasks with status timestamp >= this (proto wording). */
  statusTimestampAfter?: string;
  includeArtifacts?: boolean;
}

/** All members REQUIRED on output; `nextPageToken` is `""` on the last page. */
export interface ListTasksResponse {
  tasks: Task[];
  nextPageToken: string;
  pageSize: number;
  totalSize: number;
}

export interface GetTaskPushNotificationConfigRequest {
  tenant?: string;
  taskId: string;
  id: string;
}

export interface DeleteTaskPushNotificationConfigRequest {
  tenant?: string;
  taskId: string;
  id: string;
}

export interface ListTaskPushNotificationConfigsRequest {
  tenant?: string;
  taskId: string;
  pageSize?: number;
  pageToken?: string;
}

export interface ListTaskPushNotificationConfigsResponse {
  configs: TaskPushNotificationConfig[];
  nextPageToken?: string;
}

export interface GetExtendedAgentCardRequest {
  tenant?: string;
}

// --- agent card ---------------------------------------------------------------------------------

/** `JSONRPC`, `GRPC`, `HTTP+JSON`, or a URI naming a custom binding. */
export type ProtocolBinding = 'JSONRPC' | 'GRPC' | 'HTTP+JSON' | (string & {});

export interface AgentInterface {
  url: string;
  protocolBinding: ProtocolBinding;
  tenant?: string;
  /** Major.Minor, e.g. `1.0`. */
  protocolVersion: string;
}

export interface AgentExtension {
  uri: string;
  description?: string;
  required?: boolean;
  params?: JsonObject;
}

export interface AgentCapabilities {
  streaming?: boolean;
  pushNotifications?: boolean;
  extensions?: AgentExtension[];
  extendedAgentCard?: boolean;
}

export interface AgentProvider {
  url: string;
  organization: string;
}

export interface SecurityRequirement {
  /** scheme name → `{list: [scopes]}` (proto StringList). */
  schemes: Record<string, { list: string[] }>;
}

export interface AgentSkill {
  id: string;
  name: string;
  description: string;
  tags: string[];
  examples?: string[];
  inputModes?: string[];
  outputModes?: string[];
  securityRequirements?: SecurityRequirement[];
}

export interface AgentCardSignature {
  protected: string;
  signature: string;
  header?: JsonObject;
}

export interface APIKeySecurityScheme {
  description?: string;
  /** `query`, `header` or `cookie`. */
  location: string;
  name: string;
}
export interface HTTPAuthSecurityScheme {
  description?: string;
  /** e.g. `Bearer`. */
  scheme: string;
  bearerFormat?: string;
}
export interface OAuthFlows {
  authorizationCode?: JsonObject;
  clientCredentials?: JsonObject;
  deviceCode?: JsonObject;
  /** Deprecated in 1.0. */
  implicit?: JsonObject;
  /** Deprecated in 1.0. */
  password?: JsonObject;
}
export interface OAuth2SecurityScheme {
  description?: string;
  flows: OAuthFlows;
  oauth2MetadataUrl?: string;
}
export interface OpenIdConnectSecurityScheme {
  description?: string;
  openIdConnectUrl: string;
}
export interface MutualTlsSecurityScheme {
  description?: string;
}

/** oneof: exactly one member key present. */
export type SecurityScheme =
  | { apiKeySecurityScheme: APIKeySecurityScheme }
  | { httpAuthSecurityScheme: HTTPAuthSecurityScheme }
  | { oauth2SecurityScheme: OAuth2SecurityScheme }
  | { openIdConnectSecurityScheme: OpenIdConnectSecurityScheme }
  | { mtlsSecurityScheme: MutualTlsSecurityScheme };

export interface AgentCard {
  name: string;
  description: string;
  /** Ordered; the first is preferred. */
  supportedInterfaces: AgentInterface[];
  provider?: AgentProvider;
  version: string;
  documentationUrl?: string;
  capabilities: AgentCapabilities;
  securitySchemes?: Record<string, SecurityScheme>;
  securityRequirements?: SecurityRequirement[];
  defaultInputModes: string[];
  defaultOutputModes: string[];
  skills: AgentSkill[];
  signatures?: AgentCardSignature[];
  iconUrl?: string;
}

// --- JSON-RPC envelope --------------------------------------------------------------------------

export type JsonRpcId = string | number | null;

export interface JsonRpcRequest {
  jsonrpc: '2.0';
  id?: JsonRpcId;
  method: string;
  params?: unknown;
}

export interface JsonRpcErrorObject {
  code: number;
  message: string;
  /** 1.0.1: array of `@type`-tagged details (google.rpc.ErrorInfo SHOULD be among them). */
  data?: unknown;
}

export type JsonRpcResponse =
  | { jsonrpc: '2.0'; id: JsonRpcId; result: unknown }
  | { jsonrpc: '2.0'; id: JsonRpcId; error: JsonRpcErrorObject };

/** JSON-RPC method names (= gRPC rpc names; A2A 1.0, operations). Note the plural `ListTaskPushNotificationConfigs`. */
export const A2A_METHODS = [
  'SendMessage',
  'SendStreamingMessage',
  'GetTask',
  'ListTasks',
  'CancelTask',
  'SubscribeToTask',
  'CreateTaskPushNotificationConfig',
  'GetTaskPushNotificationConfig',
  'ListTaskPushNotificationConfigs',
  'DeleteTaskPushNotificationConfig',
  'GetExtendedAgentCard',
] as const;
export type A2AMethod = (typeof A2A_METHODS)[number];

/** Methods whose response is an SSE stream. */
export const STREAMING_METHODS: ReadonlySet<A2AMethod> = new Set(['SendStreamingMessage', 'SubscribeToTask']);
