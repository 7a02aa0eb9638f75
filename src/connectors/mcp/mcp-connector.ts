import { SystemClock, type Clock } from '../../core/clock.ts';
import { TaskplaneError, isTaskplaneError } from '../../core/errors.ts';
import {
  decodeTaskNotificationParams,
  decodeAckResult,
  decodeDiscoverResult,
  decodeGetTaskResult,
  decodeToolCallAnswer,
} from '../../protocols/mcp/decode-result.ts';
import { requestMeta } from '../../protocols/mcp/encode.ts';
import { advertisesTasks, discoverFallback, eraOf, pickVersion } from '../../protocols/mcp/era.ts';
import {
  MODERN_PROTOCOL_VERSION,
  type Implementation,
  type InputResponses,
  type JsonObject,
  type JsonValue,
} from '../../protocols/mcp/types.ts';
import type {
  Connector,
  ConnectorCapabilities,
  InputAnswer,
  RemoteInputRequest,
  RemoteSnapshot,
  StartRequest,
} from '../connector.ts';
import { inputResponse, mrtrCursor, mrtrFromCursor, staleKey, type Mrtr } from './input-rounds.ts';
import { LegacyTasks, decoded, legacyInitialize, type Era } from './legacy-tasks.ts';
import { McpRpcError, rpcCall, rpcListen, type CallOptions, type RpcOptions } from './rpc.ts';
import { immediateSnapshot, inputRequestsOf, mrtrSnapshot, taskSnapshot } from './task-snapshot.ts';

/**
 * The MCP client connector: a job is one `tools/call`.
 *
 * Era: `server/discover` first (2026-07-28, stateless, the tasks extension declared on every request
 * in `_meta`); a server that does not know it (an unknown method, or a 2025 server refusing a request
 * without a session) is spoken to in 2025-11-25: `initialize`, a session, and the experimental `task`
 * param when the server's `tasks.requests.tools.call` capability says it takes one.
 *
 * Answers: a plain result is the whole outcome (`succeeded`, or `failed` for `isError`); an MRTR
 * `InputRequiredResult` makes the job wait for input that the connector sends back by retrying the
 * call with `inputResponses` and `requestState`; a task is tracked with `tasks/get` (MCP has no list),
 * answered with `tasks/update` by key, and cancelled with `tasks/cancel`.
 *
 * An MRTR round (remote id `mrtr:…`) is held here and in its snapshots' cursor, which the envelope keeps,
 * so an answer after a restart still retries the call. The 2025-11-25 path is legacy-tasks.ts; what it
 * holds (the session, the server's pending elicitations) is in memory only, so lost with the process
 * (docs/plane.md, "MCP targets").
 */
export interface McpConnectorOptions {
  target: string;
  /** The server's Streamable HTTP endpoint (`…/mcp`). */
  url: string;
  /**
   * The tool every job calls, with the job input as its arguments (an object). Without it a job input
   * names the tool: `{ "name": "…", "arguments": { … } }`.
   */
  tool?: string;
  /** Sent on every call (e.g. `{ authorization: 'Bearer …' }`). */
  headers?: Record<string, string>;
  /** Per-call timeout. @default 30000 */
  timeoutMs?: number;
  /** `auto` probes with server/discover; the others skip the probe. @default 'auto' */
  era?: 'auto' | 'modern' | 'legacy';
  /** The `task.ttl` asked for in 2025-11-25 (the modern era lets the server decide). @default none */
  legacyTtlMs?: number;
  /**
   * Follow tasks with `notifications/tasks` over `subscriptions/listen` (2026-07-28) where the server
   * serves it; polling `tasks/get` otherwise. @default true
   */
  notifications?: boolean;
  /** Judges `createdAt + ttlMs`. @default the system clock */
  clock?: Clock;
  fetch?: typeof fetch;
  /** @default { name: 'taskplane', version: '1' } */
  clientInfo?: Implementation;
}

const SYSTEM_CLOCK = new SystemClock();
const TERMINAL = new Set(['succeeded', 'failed', 'cancelled', 'expired', 'lost']);
const MRTR = 'mrtr:';
/** Rounds a server may answer with requestState alone before we call it a loop. */
const MAX_SILENT_ROUNDS = 10;
/** Immediate results kept for a read right after the start (the engine reads a terminal job no more). */
const IMMEDIATE_KEPT = 1000;
const CALL = 'call:';

function invalid(field: string, message: string): TaskplaneError {
  return new TaskplaneError('invalid_argument', `${field}: ${message}`, { field, retryable: false });
}

export class McpConnector implements Connector {
  readonly kind = 'mcp';
  readonly target: string;
  readonly capabilities: ConnectorCapabilities = {
    idempotentStart: false,
    list: false,
    stream: false,
    streamResume: false,
    push: false,
    input: true,
    cancel: true,
    notFound: 'expired',
  };
  private era: Era | null = null;
  private negotiating: Promise<Era> | null = null;
  private readonly rpc: RpcOptions;
  private readonly clock: Clock;
  private readonly mrtr = new Map<string, Mrtr>();
  /** Immediate results, so a `get` right after the start answers what the start said. */
  private readonly immediate = new Map<string, RemoteSnapshot>();
  /** The 2025-11-25 path. */
  private readonly legacy: LegacyTasks;

  constructor(private readonly options: McpConnectorOptions) {
    this.target = options.target;
    this.clock = options.clock ?? SYSTEM_CLOCK;
    this.rpc = {
      url: options.url,
      headers: options.headers ?? {},
      timeoutMs: options.timeoutMs ?? 30_000,
      fetch: options.fetch ?? fetch,
    };
    this.legacy = new LegacyTasks(
      this.rpc,
      {
        call: (method, params, signal, extra) => this.call(method, params, signal, extra),
        notePoll: (ms) => this.notePoll(ms),
        immediate: (request, result) => {
          const id = `${CALL}${request.messageId}`;
          const snap = immediateSnapshot(id, request.contextId, result as never);
          this.remember(id, snap);
          return snap;
        },
        now: () => this.clock.now(),
      },
      options.legacyTtlMs,
    );
  }

  /** The era and version in use, once negotiated. */
  get negotiated(): Readonly<Era> | null {
    return this.era;
  }

  get revision(): string | null {
    return this.era ? `${this.era.version} ${this.options.url}` : null;
  }

  /** The era and version are negotiated: prepare() would ask nothing. */
  prepared(): boolean {
    return this.era !== null;
  }

  async prepare(signal: AbortSignal, opts: { fresh?: boolean } = {}): Promise<void> {
    if (opts.fresh) {
      this.era = null;
      this.legacy.forgetTools();
    }
    await this.ready(signal);
  }

  private async ready(signal: AbortSignal): Promise<Era> {
    if (this.era) return this.era;
    this.negotiating ??= this.negotiate(signal)
      .then((era) => (this.era = era))
      .finally(() => {
        this.negotiating = null;
      });
    return this.negotiating;
  }

  private clientInfo(): Implementation {
    return this.options.clientInfo ?? { name: 'taskplane', version: '1' };
  }

  private async negotiate(signal: AbortSignal): Promise<Era> {
    const mode = this.options.era ?? 'auto';
    if (mode !== 'legacy') {
      try {
        const { result } = await rpcCall(
          this.rpc,
          'server/discover',
          { _meta: requestMeta({ tasks: true, clientInfo: this.clientInfo() }) },
          { protocolVersion: MODERN_PROTOCOL_VERSION, modern: true },
          signal,
        );
        const discover = decoded(() => decodeDiscoverResult(result));
        const version = pickVersion(discover.supportedVersions);
        if (version !== undefined && eraOf(version) === 'modern') {
          const tasks = advertisesTasks(discover.capabilities);
          // Task notifications are tried where tasks are; a refusal turns this off (observe).
          this.capabilities.stream = tasks && this.options.notifications !== false;
          return { modern: true, version, tasks, session: null };
        }
        if (version === undefined)
          throw new TaskplaneError(
            'unsupported',
            `remote: no common MCP version (${discover.supportedVersions.join(', ')})`,
          );
      } catch (err) {
        if (mode === 'modern' || !this.legacyAnswer(err)) throw err;
      }
    }
    return legacyInitialize(this.rpc, this.clientInfo(), signal);
  }

  /** Whether a failed server/discover says "speak 2025-11-25" (protocols/mcp/era.ts discoverFallback). */
  private legacyAnswer(err: unknown): boolean {
    if (!isTaskplaneError(err)) return false;
    const http = typeof err.details?.httpStatus === 'number' ? err.details.httpStatus : 200;
    const rpc = err instanceof McpRpcError ? err.rpc.code : undefined;
    if (err.details?.route === 'not_protocol') return http === 404 || http === 405 || http === 400;
    if (err instanceof McpRpcError) return discoverFallback(http, rpc) === 'legacy';
    return false;
  }

  /** One call in the negotiated era; a 2025 session the server forgot is opened again, once. */
  private async call(
    method: string,
    params: JsonObject,
    signal: AbortSignal,
    extra: Pick<CallOptions, 'onServerRequest'> = {},
  ): Promise<{ result: JsonValue | undefined; era: Era; interrupted: boolean }> {
    let era = await this.ready(signal);
    for (let attempt = 0; ; attempt++) {
      const p = era.modern
        ? { ...params, _meta: requestMeta({ tasks: true, clientInfo: this.clientInfo() }) }
        : params;
      try {
        const r = await rpcCall(
          this.rpc,
          method,
          p,
          { protocolVersion: era.version, modern: era.modern, sessionId: era.session, ...extra },
          signal,
        );
        return { result: r.result, era, interrupted: r.interrupted };
      } catch (err) {
        const sessionGone =
          !era.modern && isTaskplaneError(err) && err.details?.httpStatus === 404 && attempt === 0;
        if (!sessionGone) throw err;
        this.era = null;
        era = await this.ready(signal);
      }
    }
  }

  /** The tool and its arguments a job's input stands for (docs/plane.md, "MCP"). */
  private toolCall(input: unknown): { name: string; args: JsonObject } {
    const obj = input && typeof input === 'object' && !Array.isArray(input) ? (input as JsonObject) : null;
    if (this.options.tool !== undefined) {
      if (input === undefined || input === null) return { name: this.options.tool, args: {} };
      if (!obj) throw invalid('input', `the arguments of tool ${this.options.tool} must be an object`);
      return { name: this.options.tool, args: obj };
    }
    if (!obj || typeof obj.name !== 'string' || obj.name === '')
      throw invalid(
        'input.name',
        'the tool to call (this target has no `tool` setting): {"name": "…", "arguments": {…}}',
      );
    const args = obj.arguments;
    if (args !== undefined && (args === null || typeof args !== 'object' || Array.isArray(args)))
      throw invalid('input.arguments', 'must be an object');
    return { name: obj.name, args: (args ?? {}) as JsonObject };
  }

  async start(request: StartRequest, signal: AbortSignal): Promise<RemoteSnapshot> {
    const { name, args } = this.toolCall(request.input);
    const era = await this.ready(signal);
    if (!era.modern) return this.legacy.start(request, name, args, era, signal);
    return this.toolCallRound(
      `${MRTR}${request.messageId}`,
      request.contextId,
      { name, args, round: 0 },
      signal,
    );
  }

  /**
   * One modern `tools/call` (the first, or an MRTR retry with the answers collected): a result ends the
   * job, an InputRequiredResult opens the next round, a task takes the job over.
   */
  private async toolCallRound(
    mrtrId: string,
    contextId: string | null,
    call: {
      name: string;
      args: JsonObject;
      round: number;
      requestState?: string;
      responses?: InputResponses;
    },
    signal: AbortSignal,
  ): Promise<RemoteSnapshot> {
    const params: JsonObject = { name: call.name, arguments: call.args };
    if (call.responses) params.inputResponses = call.responses;
    if (call.requestState !== undefined) params.requestState = call.requestState;
    const { result } = await this.call('tools/call', params, signal);
    const answer = decoded(() => decodeToolCallAnswer(result, true));
    const replaces = call.round > 0 ? { replacesRemoteId: mrtrId } : {};
    if (answer.kind === 'task') {
      this.mrtr.delete(mrtrId);
      this.notePoll(answer.result.pollIntervalMs);
      return {
        ...taskSnapshot(
          { ...answer.result, status: answer.result.status } as never,
          contextId,
          this.clock.now(),
        ),
        ...replaces,
        ...(call.round > 0 ? { cursor: null } : {}),
      };
    }
    if (answer.kind === 'complete') {
      this.mrtr.delete(mrtrId);
      const id = call.round > 0 ? mrtrId : `${CALL}${mrtrId.slice(MRTR.length)}`;
      const snap = immediateSnapshot(id, contextId, answer.result);
      this.remember(id, snap);
      return snap;
    }
    const requests = answer.result.inputRequests ? inputRequestsOf(answer.result.inputRequests) : [];
    const state: Mrtr = {
      name: call.name,
      args: call.args,
      contextId,
      requests,
      responses: {},
      round: call.round + 1,
      ...(answer.result.requestState !== undefined ? { requestState: answer.result.requestState } : {}),
    };
    if (requests.length === 0) {
      if (state.round > MAX_SILENT_ROUNDS)
        throw new TaskplaneError(
          'remote_error',
          `remote: ${MAX_SILENT_ROUNDS} rounds of requestState without a question`,
        );
      // Only requestState: the server wants the same call again at once, carrying it.
      return this.toolCallRound(mrtrId, contextId, { ...state, responses: {} }, signal);
    }
    this.mrtr.set(mrtrId, state);
    return this.mrtrRound(mrtrId, state);
  }

  /** Keeps an immediate result for a read right after the start; the oldest go first past a bound. */
  private remember(id: string, snap: RemoteSnapshot): void {
    this.immediate.set(id, snap);
    if (this.immediate.size > IMMEDIATE_KEPT) {
      const oldest = this.immediate.keys().next().value;
      if (oldest !== undefined) this.immediate.delete(oldest);
    }
  }

  /** Keeps the server's latest poll guidance, which the engine's poller reads (plane/job-watcher.ts). */
  private notePoll(ms: number | undefined): void {
    if (ms !== undefined && ms > 0) this.capabilities.pollIntervalMs = ms;
  }

  async get(remoteId: string, signal: AbortSignal): Promise<RemoteSnapshot> {
    if (remoteId.startsWith(CALL)) {
      const snap = this.immediate.get(remoteId);
      if (snap) return snap;
      throw new TaskplaneError(
        'failed_precondition',
        `${remoteId}: a tool call answered at once has nothing to read again`,
        { retryable: false },
      );
    }
    if (remoteId.startsWith(MRTR)) {
      const m = this.mrtr.get(remoteId);
      if (m) return this.mrtrRound(remoteId, m);
      const snap = this.immediate.get(remoteId);
      if (snap) return snap;
      throw this.mrtrGone(remoteId);
    }
    const era = await this.ready(signal);
    if (!era.modern) return this.legacy.get(remoteId, signal);
    const { result } = await this.call('tasks/get', { taskId: remoteId }, signal);
    const task = decoded(() => decodeGetTaskResult(result));
    if (task.taskId !== remoteId)
      throw new TaskplaneError('remote_error', 'remote: tasks/get answered another task');
    this.notePoll(task.pollIntervalMs);
    return taskSnapshot(task, null, this.clock.now());
  }

  /** An MRTR round's snapshot, carrying the round's whole state as its cursor (kept on the envelope). */
  private mrtrRound(remoteId: string, m: Mrtr): RemoteSnapshot {
    return { ...mrtrSnapshot(remoteId, m.contextId, m.round, this.outstanding(m)), cursor: mrtrCursor(m) };
  }

  private mrtrGone(remoteId: string): TaskplaneError {
    return new TaskplaneError(
      'unavailable',
      `${remoteId}: this MCP input round was held in the memory of a process that is gone; cancel the job and create it again`,
      { retryable: true, details: { mrtr: true } },
    );
  }

  private outstanding(m: Mrtr): RemoteInputRequest[] {
    return m.requests.filter((r) => m.responses[r.requestId] === undefined);
  }

  /**
   * `notifications/tasks` over `subscriptions/listen` (2026-07-28): the current state from `tasks/get`
   * first (a notification only says what changed after we listened), then every notification for the
   * task until it is terminal. A server that refuses the method does not offer it: `stream` turns off
   * and the engine polls instead (plane/job-watcher.ts re-reads the mechanism after each stream).
   */
  async *observe(
    remoteId: string,
    _cursor: string | null,
    signal: AbortSignal,
  ): AsyncGenerator<RemoteSnapshot> {
    const first = await this.get(remoteId, signal);
    yield first;
    if (remoteId.startsWith(MRTR) || remoteId.startsWith(CALL) || TERMINAL.has(first.state)) return;
    const era = await this.ready(signal);
    if (!era.modern) {
      this.capabilities.stream = false;
      return;
    }
    const params: JsonObject = {
      notifications: { taskIds: [remoteId] },
      _meta: requestMeta({ tasks: true, clientInfo: this.clientInfo() }),
    };
    try {
      for await (const n of rpcListen(
        this.rpc,
        'subscriptions/listen',
        params,
        { protocolVersion: era.version, modern: true },
        signal,
      )) {
        if (n.method !== 'notifications/tasks') continue;
        const task = decoded(() => decodeTaskNotificationParams(n.params));
        if (task.taskId !== remoteId) continue;
        this.notePoll(task.pollIntervalMs);
        const snap = taskSnapshot(task, null, this.clock.now());
        yield snap;
        if (TERMINAL.has(snap.state)) return;
      }
    } catch (err) {
      if (err instanceof McpRpcError) {
        // The server's own refusal: it does not offer task notifications (to us).
        this.capabilities.stream = false;
        throw new TaskplaneError('unavailable', `${err.message} (subscriptions/listen; polling instead)`, {
          retryable: true,
          details: { assumption: 'streaming' },
        });
      }
      throw err;
    }
  }

  async answer(remoteId: string, answer: InputAnswer, signal: AbortSignal): Promise<RemoteSnapshot> {
    const key = answer.requestId;
    const response = inputResponse(key, answer.value);
    if (remoteId.startsWith(MRTR)) {
      // The round lives in this process, or (after a restart) in the cursor the envelope kept.
      const m = this.mrtr.get(remoteId) ?? mrtrFromCursor(answer.cursor);
      if (!m) throw this.mrtrGone(remoteId);
      this.mrtr.set(remoteId, m);
      if (!this.outstanding(m).some((r) => r.requestId === key)) throw staleKey(key, this.outstanding(m));
      m.responses = { ...m.responses, [key]: response };
      // MRTR answers go back together, in the retried call: a partial answer only waits for the rest.
      if (this.outstanding(m).length > 0) return this.mrtrRound(remoteId, m);
      return this.toolCallRound(remoteId, m.contextId, { ...m }, signal);
    }
    const era = await this.ready(signal);
    if (!era.modern) {
      const snap = await this.legacy.answer(remoteId, key, response, era, signal);
      if (!snap)
        throw staleKey(
          key,
          this.legacy.outstanding(remoteId).map((k) => ({ requestId: k, prompt: '' })),
        );
      return snap;
    }
    const { result } = await this.call(
      'tasks/update',
      { taskId: remoteId, inputResponses: { [key]: response } },
      signal,
    );
    decoded(() => decodeAckResult(result));
    return this.get(remoteId, signal);
  }

  async cancel(remoteId: string, signal: AbortSignal): Promise<RemoteSnapshot> {
    if (remoteId.startsWith(CALL) || this.immediate.has(remoteId))
      throw new TaskplaneError('failed_precondition', `${remoteId}: the tool call has already answered`, {
        retryable: false,
      });
    if (remoteId.startsWith(MRTR)) {
      // Nothing runs on the server between MRTR rounds: not retrying the call is the whole cancel.
      const m = this.mrtr.get(remoteId);
      this.mrtr.delete(remoteId);
      return {
        remoteId,
        contextId: m?.contextId ?? null,
        state: 'cancelled',
        nativeState: 'not_retried',
        remoteVersion: (m?.round ?? 0) + 1,
        stateTimestamp: null,
      };
    }
    const era = await this.ready(signal);
    if (!era.modern) return this.legacy.cancel(remoteId, signal);
    const { result } = await this.call('tasks/cancel', { taskId: remoteId }, signal);
    decoded(() => decodeAckResult(result));
    return this.get(remoteId, signal);
  }
}
