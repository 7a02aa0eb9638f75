import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { checkHeaders } from '../../src/protocols/mcp/headers.ts';
import { decodeMessage, parseBody } from '../../src/protocols/mcp/decode.ts';
import {
  ackResult,
  callToolResult,
  createTaskResult,
  discoverResult,
  getTaskResult,
  inputRequiredResult,
  resultResponse,
  subscriptionAcknowledged,
  taskNotification,
} from '../../src/protocols/mcp/encode.ts';
import {
  McpError,
  errorResponse,
  invalidParams,
  methodNotFound,
  taskNotFound,
} from '../../src/protocols/mcp/errors.ts';
import { declaresTasks } from '../../src/protocols/mcp/era.ts';
import type { DetailedTask, InputRequests, JsonObject, JsonRpcId } from '../../src/protocols/mcp/types.ts';

/**
 * A small 2026-07-28 MCP server with the tasks extension, built on the wire layer's encoders
 * (src/protocols/mcp/), for the plane's connector tests. It exposes the conformance harness's fixture
 * tools (docs/mcp-conformance.md), so the same tests can be pointed at `taskplane host`'s /mcp, and
 * adds faults only this peer can inject: a dropped connection, a slow answer, a task it forgets
 * (-32602), a ttl in the past, and a task that completes when asked to cancel.
 *
 * It checks every request's routing headers with `checkHeaders`, so a client that sends the wrong
 * `Mcp-Method`/`Mcp-Name` gets -32020 here as it would from a strict server.
 */

interface PeerTask {
  task: DetailedTask;
  /** What answering every input key produces. */
  onInput?: (answers: JsonObject) => DetailedTask['status'];
  answers: JsonObject;
  /** For `slow_compute`: cancel ends it `cancelled` unless `completeOnCancel`. */
  tool: string;
}

export interface McpFaults {
  /** The next request of this method has its connection destroyed after it was read. */
  dropNext(method: string, when?: 'before' | 'after'): void;
  /** Requests of this method wait this long before answering. */
  delay(method: string, ms: number): void;
  /** The server forgets the task: tasks/* answer -32602. */
  forget(taskId: string): void;
  /** Ends a `slow_compute` task now. */
  finish(taskId: string, text?: string): void;
  /** The next task is created with this ttlMs and createdAt this far in the past. */
  nextTaskAge(ttlMs: number, ageMs: number): void;
  /** `tasks/cancel` is acknowledged but the work completes anyway. */
  completeOnCancel: boolean;
  /** Every request received, in order. */
  readonly received: Array<{ method: string; params: JsonObject }>;
  /** Task ids created, in order. */
  readonly created: string[];
  /** `subscriptions/listen` streams opened so far. */
  readonly listens: number;
  /** Cuts every open `subscriptions/listen` stream. */
  dropListens(): void;
}

export interface ModernMcpPeer {
  url: string;
  /** Absent when the server under test is not this peer (the fault tests are then skipped). */
  faults?: McpFaults;
  close(): Promise<void>;
}

const POLL_MS = 50;

export async function startModernMcpPeer(
  options: {
    pollIntervalMs?: number;
    tasks?: boolean;
    /** Serve `subscriptions/listen` with `notifications/tasks`; false answers it -32601. @default true */
    listen?: boolean;
  } = {},
): Promise<ModernMcpPeer> {
  const listeners = new Set<{ ids: Set<string>; res: ServerResponse; sub: string }>();
  let listens = 0;
  const tasks = new Map<string, PeerTask>();
  const received: McpFaults['received'] = [];
  const created: string[] = [];
  const drops = new Map<string, 'before' | 'after'>();
  const delays = new Map<string, number>();
  let age: { ttlMs: number; ageMs: number } | null = null;
  const poll = options.pollIntervalMs ?? POLL_MS;

  const faults: McpFaults = {
    dropNext: (m, when = 'after') => void drops.set(m, when),
    delay: (m, ms) => void delays.set(m, ms),
    forget: (id) => void tasks.delete(id),
    finish(id, text = 'done') {
      const t = tasks.get(id);
      if (t && t.task.status === 'working')
        set(t, {
          status: 'completed',
          result: callToolResult([{ type: 'text', text }]) as unknown as JsonObject,
        });
    },
    nextTaskAge: (ttlMs, ageMs) => void (age = { ttlMs, ageMs }),
    completeOnCancel: false,
    received,
    created,
    get listens() {
      return listens;
    },
    dropListens() {
      for (const l of listeners) l.res.socket?.destroy();
      listeners.clear();
    },
  };

  function notify(task: DetailedTask): void {
    for (const l of listeners)
      if (l.ids.has(task.taskId)) l.res.write(`data: ${JSON.stringify(taskNotification(task, l.sub))}\n\n`);
  }

  function set(t: PeerTask, change: Partial<DetailedTask> & { status: DetailedTask['status'] }): void {
    const base = { ...t.task } as Record<string, unknown>;
    delete base.inputRequests;
    delete base.result;
    delete base.error;
    t.task = {
      ...base,
      ...change,
      lastUpdatedAt: new Date(Math.max(Date.now(), Date.parse(t.task.lastUpdatedAt) + 1)).toISOString(),
    } as DetailedTask;
    notify(t.task);
  }

  function newTask(
    tool: string,
    status: DetailedTask['status'] = 'working',
    extra: Partial<DetailedTask> = {},
  ): PeerTask {
    const now = Date.now();
    const createdAt = new Date(now - (age?.ageMs ?? 0)).toISOString();
    const t: PeerTask = {
      tool,
      answers: {},
      task: {
        taskId: randomBytes(16).toString('base64url'),
        status,
        createdAt,
        lastUpdatedAt: new Date(now).toISOString(),
        ttlMs: age?.ttlMs ?? 600_000,
        pollIntervalMs: poll,
        ...extra,
      } as DetailedTask,
    };
    age = null;
    tasks.set(t.task.taskId, t);
    created.push(t.task.taskId);
    return t;
  }

  const elicit = (message: string, props: JsonObject): JsonObject => ({
    message,
    requestedSchema: { type: 'object', properties: props },
  });

  function toolsCall(params: JsonObject, tasksDeclared: boolean): object {
    const name = params.name as string;
    const args = (params.arguments ?? {}) as JsonObject;
    if (name === 'greet')
      return callToolResult([{ type: 'text', text: `Hello, ${String(args.name ?? 'world')}!` }]);
    if (!tasksDeclared)
      throw new McpError('MissingRequiredClientCapability', 'Missing required client capability');
    if (name === 'slow_compute') {
      const t = newTask(name);
      const seconds = typeof args.seconds === 'number' ? args.seconds : 60;
      setTimeout(
        () => faults.finish(t.task.taskId, `computed ${String(args.label ?? '')}`),
        seconds * 1000,
      ).unref();
      return createTaskResult(t.task);
    }
    if (name === 'failing_job') {
      const t = newTask(name);
      setTimeout(() => {
        if (t.task.status === 'working')
          set(t, {
            status: 'completed',
            result: callToolResult([{ type: 'text', text: 'the job failed' }], {
              isError: true,
            }) as unknown as JsonObject,
          });
      }, 100).unref();
      return createTaskResult(t.task);
    }
    if (name === 'protocol_error_job') {
      const t = newTask(name);
      setTimeout(() => {
        if (t.task.status === 'working')
          set(t, {
            status: 'failed',
            error: { code: -32603, message: 'backend exploded' },
            statusMessage: 'backend exploded',
          });
      }, 100).unref();
      return createTaskResult(t.task);
    }
    if (name === 'confirm_delete' || name === 'multi_input') {
      const t = newTask(name);
      const requests: InputRequests =
        name === 'confirm_delete'
          ? {
              confirm: {
                method: 'elicitation/create',
                params: elicit(`Delete ${String(args.filename ?? 'file')}?`, {
                  confirm: { type: 'boolean' },
                }),
              },
            }
          : {
              color: {
                method: 'elicitation/create',
                params: elicit('Which colour?', { color: { type: 'string' } }),
              },
              size: {
                method: 'elicitation/create',
                params: elicit('Which size?', { size: { type: 'integer' } }),
              },
            };
      const answer = createTaskResult(t.task);
      set(t, { status: 'input_required', inputRequests: requests });
      return answer;
    }
    if (name === 'test_tool_with_task') {
      const responses = params.inputResponses as JsonObject | undefined;
      const answer = responses?.user_name as { content?: { name?: string } } | undefined;
      if (!answer?.content?.name)
        return inputRequiredResult(
          {
            user_name: {
              method: 'elicitation/create',
              params: elicit('Your name?', { name: { type: 'string' } }),
            },
          },
          'round-1-state',
        );
      if (params.requestState !== 'round-1-state')
        throw invalidParams('params.requestState', 'expected the state of round 1');
      const t = newTask(name);
      setTimeout(
        () =>
          set(t, {
            status: 'completed',
            result: callToolResult([
              { type: 'text', text: `Hello, ${answer.content!.name}!` },
            ]) as unknown as JsonObject,
          }),
        50,
      ).unref();
      return createTaskResult(t.task);
    }
    throw invalidParams('params.name', `unknown tool ${name}`);
  }

  function taskFor(params: JsonObject): PeerTask {
    const t = tasks.get(String(params.taskId));
    if (!t) throw taskNotFound();
    return t;
  }

  function handle(method: string, params: JsonObject): object {
    const declared = (() => {
      const meta = params._meta as JsonObject | undefined;
      const caps = meta?.['io.modelcontextprotocol/clientCapabilities'] as JsonObject | undefined;
      return caps ? declaresTasks(caps) : false;
    })();
    switch (method) {
      case 'server/discover':
        return discoverResult({
          serverInfo: { name: 'modern-peer', version: '1' },
          tasks: options.tasks !== false,
        });
      case 'tools/call':
        return toolsCall(params, declared && options.tasks !== false);
      case 'tasks/get':
        return getTaskResult(taskFor(params).task);
      case 'tasks/update': {
        const t = taskFor(params);
        if (t.task.status === 'input_required') {
          const pending = { ...t.task.inputRequests };
          for (const [k, v] of Object.entries((params.inputResponses ?? {}) as JsonObject)) {
            if (!(k in pending)) continue;
            delete pending[k];
            t.answers[k] = v;
          }
          if (Object.keys(pending).length > 0) set(t, { status: 'input_required', inputRequests: pending });
          else
            set(t, {
              status: 'completed',
              result: callToolResult([
                { type: 'text', text: `answers ${JSON.stringify(t.answers)}` },
              ]) as unknown as JsonObject,
            });
        }
        return ackResult();
      }
      case 'tasks/cancel': {
        const t = taskFor(params);
        if (t.task.status === 'working' || t.task.status === 'input_required') {
          if (faults.completeOnCancel)
            set(t, {
              status: 'completed',
              result: callToolResult([{ type: 'text', text: 'finished first' }]) as unknown as JsonObject,
            });
          else set(t, { status: 'cancelled', statusMessage: 'cancelled by request' });
        }
        return ackResult();
      }
      default:
        throw methodNotFound(method);
    }
  }

  const send = (res: ServerResponse, status: number, body: object) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };

  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        let id: JsonRpcId | null = null;
        try {
          const body = parseBody(Buffer.concat(chunks).toString('utf8'));
          const msg = decodeMessage(body);
          if (msg.kind === 'notification') {
            res.writeHead(202).end();
            return;
          }
          id = msg.id;
          const params = (msg.params ?? {}) as JsonObject;
          received.push({ method: msg.method, params });
          const headers = checkHeaders(req.headers, body);
          if (!headers.ok) throw headers.error;
          const drop = drops.get(msg.method);
          if (drop === 'before') {
            drops.delete(msg.method);
            req.socket.destroy();
            return;
          }
          if (msg.method === 'subscriptions/listen' && options.listen !== false) {
            listens++;
            const n = (params.notifications ?? {}) as JsonObject;
            const ids = (Array.isArray(n.taskIds) ? n.taskIds : []).filter(
              (x): x is string => typeof x === 'string' && tasks.has(x),
            );
            const l = { ids: new Set(ids), res, sub: `sub-${listens}` };
            res.writeHead(200, { 'content-type': 'text/event-stream' });
            res.write(`data: ${JSON.stringify(subscriptionAcknowledged(l.sub, ids))}\n\n`);
            listeners.add(l);
            req.socket.on('close', () => listeners.delete(l));
            return;
          }
          const wait = delays.get(msg.method);
          if (wait) await new Promise((r) => setTimeout(r, wait));
          const result = handle(msg.method, params);
          if (drop === 'after') {
            drops.delete(msg.method);
            req.socket.destroy();
            return;
          }
          send(res, 200, resultResponse(id, result));
        } catch (err) {
          if (err instanceof McpError) send(res, err.httpStatus, errorResponse(id, err));
          else send(res, 500, errorResponse(id, new McpError('InternalError', 'Internal error')));
        }
      })();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    faults,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
