import type {
  AgentCard,
  CancelTaskRequest,
  DeleteTaskPushNotificationConfigRequest,
  GetTaskPushNotificationConfigRequest,
  GetTaskRequest,
  ListTaskPushNotificationConfigsRequest,
  ListTaskPushNotificationConfigsResponse,
  ListTasksRequest,
  ListTasksResponse,
  SendMessageRequest,
  SendMessageResponse,
  StreamResponse,
  SubscribeToTaskRequest,
  Task,
  TaskPushNotificationConfig,
} from './types.ts';

/**
 * The seam between the wire bindings (JSON-RPC, HTTP+JSON) and whatever serves A2A behind them. The
 * bindings decode, authenticate, check the version and encode; the handler owns behaviour. Handlers
 * throw A2AError for anything a client should see; anything else becomes InternalError at the edge.
 */
export interface CallContext {
  /** The authenticated caller; every operation is scoped to it (A2A 1.0, security). */
  owner: string;
  /** REST `/{tenant}` prefix or the request's `tenant` field. */
  tenant?: string;
  /** `A2A-Extensions` the client declared. */
  extensions: string[];
  /** SSE `Last-Event-ID` on a reconnecting SubscribeToTask (our declared extension). */
  lastEventId?: string;
  /** The A2A version of the request when not 1.0 (`0.3`): push configs it registers get that version's bodies. */
  protocolVersion?: string;
  /** Fires when the client goes away. */
  signal: AbortSignal;
}

/**
 * One stream frame: `id` is the SSE event id (the store's event sequence number). Streams yield frames
 * in batches (those ready together), which the bindings write as one chunk.
 */
export interface StreamItem {
  id: string;
  payload: StreamResponse;
}

export interface A2ARequestHandler {
  /** The public card served at `/.well-known/agent-card.json`. */
  agentCard(): AgentCard;
  sendMessage(req: SendMessageRequest, ctx: CallContext): Promise<SendMessageResponse>;
  /** Rejects before the stream starts for pre-stream errors (sent as a plain JSON error). */
  sendStreamingMessage(req: SendMessageRequest, ctx: CallContext): Promise<AsyncIterable<StreamItem[]>>;
  getTask(req: GetTaskRequest, ctx: CallContext): Promise<Task>;
  listTasks(req: ListTasksRequest, ctx: CallContext): Promise<ListTasksResponse>;
  cancelTask(req: CancelTaskRequest, ctx: CallContext): Promise<Task>;
  subscribeToTask(req: SubscribeToTaskRequest, ctx: CallContext): Promise<AsyncIterable<StreamItem[]>>;
  createTaskPushNotificationConfig(
    req: TaskPushNotificationConfig & { taskId: string },
    ctx: CallContext,
  ): Promise<TaskPushNotificationConfig>;
  getTaskPushNotificationConfig(
    req: GetTaskPushNotificationConfigRequest,
    ctx: CallContext,
  ): Promise<TaskPushNotificationConfig>;
  listTaskPushNotificationConfigs(
    req: ListTaskPushNotificationConfigsRequest,
    ctx: CallContext,
  ): Promise<ListTaskPushNotificationConfigsResponse>;
  deleteTaskPushNotificationConfig(
    req: DeleteTaskPushNotificationConfigRequest,
    ctx: CallContext,
  ): Promise<void>;
  getExtendedAgentCard(req: { tenant?: string }, ctx: CallContext): Promise<AgentCard>;
}

/**
 * Read access to request headers: web `Headers` has it, and so does the node:http fast path's view of
 * `IncomingMessage.headers` (no `Headers` object is built there).
 */
export interface HeaderReader {
  get(name: string): string | null;
}

/** Resolves the caller from the request headers; throws A2AError UnauthenticatedError. */
export type Authenticate = (headers: HeaderReader) => Promise<string> | string;
