import { TaskplaneError, isTaskplaneError, unreadableAnswer } from '../../core/errors.ts';
import { McpError } from '../../protocols/mcp/errors.ts';
import { decodeInputRequests } from '../../protocols/mcp/input.ts';
import {
  decodeInitializeResult,
  decodeLegacyCreateTaskResult,
  decodeLegacyTaskResult,
  legacyServerSupportsToolTasks,
} from '../../protocols/mcp/legacy.ts';
import { decodeToolCallAnswer } from '../../protocols/mcp/decode-result.ts';
import {
  LEGACY_PROTOCOL_VERSION,
  type Implementation,
  type JsonObject,
  type JsonValue,
  type LegacyTask,
} from '../../protocols/mcp/types.ts';
import type { RemoteInputRequest, RemoteSnapshot, StartRequest } from '../connector.ts';
import {
  McpRpcError,
  rpcCall,
  rpcSend,
  type CallOptions,
  type RpcOptions,
  type ServerRequest,
} from './rpc.ts';
import { asJsonObject, inputRequestsOf, legacySnapshot } from './task-snapshot.ts';

/**
 * The 2025-11-25 side of the MCP connector (mcp-connector.ts): the installed base of
 * `@modelcontextprotocol/sdk` 1.x servers with the experimental tasks. `initialize` opens a session;
 * `tools/call` takes the `task` param where the tool's `tools/list` entry allows one; a terminal task's
 * outcome is read with `tasks/result`; input is the elicitation requests the server sends on the
 * `tasks/result` stream, answered with JSON-RPC responses; `tasks/cancel` answers with the task.
 *
 * The session and the pending elicitations are held in memory only (docs/plane.md, "MCP targets").
 */

/** The protocol in use with a server, once negotiated. */
export interface Era {
  modern: boolean;
  version: string;
  /** The server takes tasks: the extension advertised (modern), `tasks.requests.tools.call` (legacy). */
  tasks: boolean;
  session: string | null;
}

/** A peer answer that fails our decoders is the peer's fault, never a verdict on the job. */
export function decoded<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof McpError) throw unreadableAnswer(err.message, err);
    throw err;
  }
}

/** `initialize` and `notifications/initialized`: the 2025-11-25 session and what the server takes. */
export async function legacyInitialize(
  rpc: RpcOptions,
  clientInfo: Implementation,
  signal: AbortSignal,
): Promise<Era> {
  const { result, sessionId } = await rpcCall(
    rpc,
    'initialize',
    {
      protocolVersion: LEGACY_PROTOCOL_VERSION,
      capabilities: { elicitation: {} },
      clientInfo: clientInfo as unknown as JsonObject,
    },
    { protocolVersion: LEGACY_PROTOCOL_VERSION, modern: false },
    signal,
  );
  const init = decoded(() => decodeInitializeResult(result));
  const era: Era = {
    modern: false,
    version: init.protocolVersion,
    tasks: legacyServerSupportsToolTasks(init.capabilities),
    session: sessionId,
  };
  await rpcSend(
    rpc,
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    { protocolVersion: era.version, modern: false, sessionId: era.session },
    signal,
  );
  return era;
}

/** What the 2025-11-25 path uses of the connector. */
export interface LegacyPort {
  /** One call in the session (a session the server forgot is opened again, once). */
  call(
    method: string,
    params: JsonObject,
    signal: AbortSignal,
    extra?: Pick<CallOptions, 'onServerRequest'>,
  ): Promise<{ result: JsonValue | undefined; era: Era }>;
  /** Keeps the server's latest poll guidance. */
  notePoll(ms: number | undefined): void;
  /** The snapshot of a tool call answered at once, kept for a read right after the start. */
  immediate(request: StartRequest, result: JsonObject): RemoteSnapshot;
  now(): number;
}

export class LegacyTasks {
  /** Elicitation requests the server sent us for a task, by task id then key. */
  private readonly input = new Map<string, Map<string, ServerRequest>>();
  /** Each tool's `execution.taskSupport`, from tools/list. */
  private tools: Map<string, string> | null = null;

  constructor(
    private readonly rpc: RpcOptions,
    private readonly port: LegacyPort,
    /** The `task.ttl` asked for; none lets the server decide. */
    private readonly ttlMs: number | undefined,
  ) {}

  /** Forgets what tools/list said (a fresh negotiation reads it again). */
  forgetTools(): void {
    this.tools = null;
  }

  async start(
    request: StartRequest,
    name: string,
    args: JsonObject,
    era: Era,
    signal: AbortSignal,
  ): Promise<RemoteSnapshot> {
    const params: JsonObject = { name, arguments: args };
    if (era.tasks && (await this.taskSupport(name, signal)) !== 'forbidden')
      params.task = this.ttlMs !== undefined ? { ttl: this.ttlMs } : {};
    const { result } = await this.port.call('tools/call', params, signal);
    const r = asJsonObject(result);
    if (r.task !== undefined) {
      const created = decoded(() => decodeLegacyCreateTaskResult(r));
      this.port.notePoll(created.task.pollInterval);
      return legacySnapshot(created.task, request.contextId, this.port.now());
    }
    return this.port.immediate(request, decoded(() => decodeToolCallAnswer(r, false)).result as never);
  }

  /**
   * A tool says in `tools/list` whether it may run as a task (`execution.taskSupport`, `forbidden` by
   * default); asking for a task where it may not is a protocol error. Read once.
   */
  private async taskSupport(name: string, signal: AbortSignal): Promise<string> {
    if (!this.tools) {
      const support = new Map<string, string>();
      let cursor: string | undefined;
      do {
        const { result } = await this.port.call('tools/list', cursor ? { cursor } : {}, signal);
        const r = asJsonObject(result);
        for (const t of Array.isArray(r.tools) ? r.tools : []) {
          const tool = asJsonObject(t);
          const ts = asJsonObject(tool.execution).taskSupport;
          if (typeof tool.name === 'string')
            support.set(tool.name, typeof ts === 'string' ? ts : 'forbidden');
        }
        cursor = typeof r.nextCursor === 'string' && r.nextCursor ? r.nextCursor : undefined;
      } while (cursor);
      this.tools = support;
    }
    return this.tools.get(name) ?? 'forbidden';
  }

  async get(taskId: string, signal: AbortSignal): Promise<RemoteSnapshot> {
    const { result } = await this.port.call('tasks/get', { taskId }, signal);
    const task = decoded(() => decodeLegacyTaskResult(result));
    this.port.notePoll(task.pollInterval);
    const now = this.port.now();
    if (task.status === 'completed' || task.status === 'failed')
      return legacySnapshot(task, null, now, await this.payload(taskId, signal));
    if (task.status === 'input_required')
      return legacySnapshot(task, null, now, undefined, await this.requests(task, signal));
    this.input.delete(taskId);
    return legacySnapshot(task, null, now);
  }

  /** tasks/result of a terminal task: the tool's result, or the JSON-RPC error it ended with. */
  private async payload(
    taskId: string,
    signal: AbortSignal,
  ): Promise<{ result?: JsonObject; error?: { code: number; message: string } }> {
    try {
      const { result } = await this.port.call('tasks/result', { taskId }, signal);
      return { result: asJsonObject(result) };
    } catch (err) {
      if (err instanceof McpRpcError && err.code !== 'not_found') return { error: err.rpc };
      throw err;
    }
  }

  /**
   * Input: the server sends its elicitation requests on the `tasks/result` stream. Read until the first
   * one, keep it (by its JSON-RPC id, the key answers name), and leave the server waiting for our
   * response, which `answer` posts.
   */
  private async requests(task: LegacyTask, signal: AbortSignal): Promise<RemoteInputRequest[]> {
    const known = this.input.get(task.taskId) ?? new Map<string, ServerRequest>();
    if (known.size === 0) {
      const seen: ServerRequest[] = [];
      const read = new AbortController();
      await this.port
        .call('tasks/result', { taskId: task.taskId }, AbortSignal.any([signal, read.signal]), {
          onServerRequest: (req) => {
            seen.push(req);
            return true;
          },
        })
        .catch((err: unknown) => {
          if (!read.signal.aborted && seen.length === 0) throw err;
        });
      read.abort();
      for (const req of seen) known.set(String(req.id), req);
      this.input.set(task.taskId, known);
    }
    const requests: JsonObject = {};
    for (const [key, req] of known)
      if (
        req.method === 'elicitation/create' ||
        req.method === 'sampling/createMessage' ||
        req.method === 'roots/list'
      )
        requests[key] = { method: req.method, params: stripMeta(req.params) };
    return inputRequestsOf(decoded(() => decodeInputRequests(requests, 'inputRequests')));
  }

  /** The keys still waiting for our response, for a refusal that names them. */
  outstanding(taskId: string): string[] {
    return [...(this.input.get(taskId)?.keys() ?? [])];
  }

  /**
   * Our JSON-RPC response to the server's request `key`, posted in the session; then the task as it
   * stands. Undefined when the key is not one the server is waiting on.
   */
  async answer(
    taskId: string,
    key: string,
    response: JsonObject,
    era: Era,
    signal: AbortSignal,
  ): Promise<RemoteSnapshot | undefined> {
    const pending = this.input.get(taskId)?.get(key);
    if (!pending) return undefined;
    await rpcSend(
      this.rpc,
      { jsonrpc: '2.0', id: pending.id, result: response },
      { protocolVersion: era.version, modern: false, sessionId: era.session },
      signal,
    );
    this.input.get(taskId)?.delete(key);
    return this.get(taskId, signal);
  }

  async cancel(taskId: string, signal: AbortSignal): Promise<RemoteSnapshot> {
    try {
      const { result } = await this.port.call('tasks/cancel', { taskId }, signal);
      const task = decoded(() => decodeLegacyTaskResult(result));
      return legacySnapshot(task, null, this.port.now());
    } catch (err) {
      // 2025-11-25 answers -32602 for a task already terminal: read what it ended as.
      if (isTaskplaneError(err) && err.code === 'not_found')
        throw new TaskplaneError('failed_precondition', err.message, { retryable: false, cause: err });
      throw err;
    }
  }
}

function stripMeta(params: JsonObject): JsonObject {
  const { _meta: _ignored, ...rest } = params;
  return rest;
}
