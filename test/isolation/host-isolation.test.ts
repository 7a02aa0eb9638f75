import { createHash } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { defineAgent } from '../../src/host/agent-api.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import { startTestHost, type Wire } from '../host/in-process.ts';
import { A2A_ERRORS } from '../../src/protocols/a2a/errors.ts';
import { A2A_SERVICE, a2aPackageDefinition, fromWire, toWire } from '../../src/protocols/a2a/grpc/codec.ts';
import { STATUS_DETAILS_KEY, decodeStatusDetails } from '../../src/protocols/a2a/grpc/status-details.ts';

/**
 * Random interleavings of four callers' A2A operations on one host, over all three bindings (JSON-RPC,
 * HTTP+JSON, gRPC): no caller ever
 * sees, answers, cancels, subscribes to or configures pushes on another's task. The callers are two owners
 * in two tenants, including the pair a joined `owner@tenant` string confused: owner `alice` in tenant `x`
 * and owner `alice@x` with none. A model records who made what; every answer is checked against it.
 */

const digest = (key: string) => createHash('sha256').update(key).digest('hex');
const KEYS = ['alice-key-0123456789', 'joined-key-0123456789', 'bob-key-0123456789ab'];

interface Actor {
  name: string;
  key: string;
  tenant: string;
}
const ACTORS: Actor[] = [
  { name: 'alice', key: KEYS[0]!, tenant: '' },
  { name: 'alice in x', key: KEYS[0]!, tenant: 'x' },
  { name: 'alice@x', key: KEYS[1]!, tenant: '' },
  { name: 'bob in x', key: KEYS[2]!, tenant: 'x' },
];

const KINDS = [
  'send',
  'answer',
  'answerStream',
  'get',
  'list',
  'cancel',
  'subscribe',
  'pushCreate',
  'pushGet',
  'pushList',
  'pushDelete',
] as const;
type Kind = (typeof KINDS)[number];

interface Op {
  actor: number;
  kind: Kind;
  /** Which known task (modulo how many there are). */
  target: number;
  rest: boolean;
  /** JSON-RPC calls of this op go over gRPC instead (same methods, same request shapes). */
  grpc: boolean;
  message: number;
  config: number;
}

const opArb: fc.Arbitrary<Op> = fc.record({
  actor: fc.nat({ max: ACTORS.length - 1 }),
  // Push configs weigh more: the final check needs tasks with configs to push to.
  kind: fc.constantFrom(...KINDS, 'pushCreate', 'pushCreate'),
  target: fc.nat({ max: 50 }),
  rest: fc.boolean(),
  grpc: fc.boolean(),
  message: fc.nat({ max: 2 }),
  config: fc.nat({ max: 1 }),
});

/** Who made what, as the callers' answers must reflect it. */
class Model {
  readonly tasks: Array<{ id: string; actor: number }> = [];
  readonly byMessage = new Map<string, string>();
  /** `taskId/configId` → actor. */
  readonly configs = new Map<string, number>();
  /**
   * Tasks their owner has addressed by id with success (docs/host.md, "Idempotent sends"): resending
   * the message that created one is a new message, with a new task.
   */
  readonly acked = new Set<string>();

  owned(actor: number): string[] {
    return this.tasks.filter((t) => t.actor === actor).map((t) => t.id);
  }

  configsOf(taskId: string): string[] {
    return [...this.configs.keys()]
      .filter((k) => k.startsWith(`${taskId}/`))
      .map((k) => k.slice(taskId.length + 1));
  }
}

/** Request and response message of each method, for the gRPC calls. */
const GRPC_TYPES: Record<string, [string, string]> = {
  SendMessage: ['SendMessageRequest', 'SendMessageResponse'],
  SendStreamingMessage: ['SendMessageRequest', 'StreamResponse'],
  GetTask: ['GetTaskRequest', 'Task'],
  ListTasks: ['ListTasksRequest', 'ListTasksResponse'],
  CancelTask: ['CancelTaskRequest', 'Task'],
  SubscribeToTask: ['SubscribeToTaskRequest', 'StreamResponse'],
  CreateTaskPushNotificationConfig: ['TaskPushNotificationConfig', 'TaskPushNotificationConfig'],
  GetTaskPushNotificationConfig: ['GetTaskPushNotificationConfigRequest', 'TaskPushNotificationConfig'],
  ListTaskPushNotificationConfigs: [
    'ListTaskPushNotificationConfigsRequest',
    'ListTaskPushNotificationConfigsResponse',
  ],
  DeleteTaskPushNotificationConfig: ['DeleteTaskPushNotificationConfigRequest', 'Empty'],
};
const GrpcClient = grpc.makeGenericClientConstructor(
  a2aPackageDefinition()[A2A_SERVICE] as grpc.ServiceDefinition,
  'A2AService',
);

/** A gRPC failure as the JSON-RPC error it stands for (by its ErrorInfo reason). */
function rpcErrorOf(err: grpc.ServiceError): { code: number } {
  const bin = err.metadata?.get(STATUS_DETAILS_KEY)[0];
  const reason = Buffer.isBuffer(bin) ? decodeStatusDetails(bin).reason : undefined;
  const spec = Object.values(A2A_ERRORS).find((e) => e.reason === reason);
  return { code: spec?.code ?? -32603 };
}

/**
 * A caller's gRPC view with the same answers as `client`'s JSON-RPC one: `{result}` in ProtoJSON, or
 * `{error: {code}}` with the JSON-RPC code of the A2A error.
 */
function grpcCaller(target: string, actor: Actor) {
  const stub = new GrpcClient(target, grpc.credentials.createInsecure()) as unknown as grpc.Client &
    Record<string, Wire>;
  const metadata = () => {
    const md = new grpc.Metadata();
    md.set('a2a-version', '1.0');
    md.set('authorization', `Bearer ${actor.key}`);
    return md;
  };
  const request = (method: string, params: Record<string, unknown>) =>
    toWire(
      `lf.a2a.v1.${GRPC_TYPES[method]![0]}`,
      actor.tenant ? { ...params, tenant: actor.tenant } : params,
    );
  const response = (method: string, res: object) =>
    GRPC_TYPES[method]![1] === 'Empty' ? {} : fromWire(`lf.a2a.v1.${GRPC_TYPES[method]![1]}`, res);
  return {
    rpc(
      method: string,
      params: Record<string, unknown>,
    ): Promise<{ result?: Wire; error?: { code: number } }> {
      return new Promise((resolve) =>
        stub[method](request(method, params), metadata(), (err: grpc.ServiceError | null, res: object) =>
          resolve(err ? { error: rpcErrorOf(err) } : { result: response(method, res) }),
        ),
      );
    },
    stream(
      method: string,
      params: Record<string, unknown>,
    ): Promise<{ error?: { code: number }; first?: Wire }> {
      return new Promise((resolve) => {
        const call = stub[method](request(method, params), metadata()) as grpc.ClientReadableStream<object>;
        call.once('data', (frame: object) => {
          resolve({ first: { result: response(method, frame) } });
          call.cancel();
        });
        call.on('error', (err: grpc.ServiceError) => resolve({ error: rpcErrorOf(err) }));
        call.on('end', () => resolve({}));
      });
    },
    close: () => stub.close(),
  };
}

/** A caller's view of the host: JSON-RPC with a `tenant` field, or HTTP+JSON under `/{tenant}`. */
function client(url: string, actor: Actor) {
  const headers = { 'A2A-Version': '1.0', authorization: `Bearer ${actor.key}` };
  const withTenant = (params: Record<string, unknown>) =>
    actor.tenant ? { ...params, tenant: actor.tenant } : params;
  const restBase = `${url}/a2a/rest${actor.tenant ? `/${actor.tenant}` : ''}`;
  return {
    async rpc(
      method: string,
      params: Record<string, unknown>,
    ): Promise<{ result?: Wire; error?: { code: number } }> {
      const res = await fetch(`${url}/a2a/jsonrpc`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: withTenant(params) }),
      });
      return (await res.json()) as { result?: Wire; error?: { code: number } };
    },
    /** HTTP+JSON: `notFound` when the answer is the binding's TaskNotFound (404). */
    async rest(method: string, path: string): Promise<{ notFound: boolean; ok: boolean; body: Wire }> {
      const res = await fetch(`${restBase}${path}`, { method, headers });
      const body = (await res.json()) as Wire;
      return { notFound: res.status === 404, ok: res.ok, body };
    },
    /** A streaming JSON-RPC method: its first frame, or the error answered before the stream. */
    async stream(
      method: 'SubscribeToTask' | 'SendStreamingMessage',
      params: Record<string, unknown>,
    ): Promise<{ error?: { code: number }; first?: Wire }> {
      const abort = new AbortController();
      const res = await fetch(`${url}/a2a/jsonrpc`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json', accept: 'text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: withTenant(params) }),
        signal: abort.signal,
      });
      try {
        if (!(res.headers.get('content-type') ?? '').includes('text/event-stream'))
          return (await res.json()) as { error: { code: number } };
        const reader = res.body!.getReader();
        const decoder = new TextDecoder();
        let text = '';
        while (!text.includes('\n\n')) {
          const { value, done } = await reader.read();
          if (done) break;
          text += decoder.decode(value, { stream: true });
        }
        const data = /^data: ?(.*)$/m.exec(text)?.[1];
        return { first: data === undefined ? undefined : (JSON.parse(data) as Wire) };
      } finally {
        abort.abort();
      }
    },
  };
}

const TASK_NOT_FOUND = -32001;

describe('host isolation (property)', () => {
  it('random interleavings of two owners in two tenants never cross scopes, on every binding', async () => {
    const keys = new Map([
      [digest(KEYS[0]!), 'alice'],
      [digest(KEYS[1]!), 'alice@x'],
      [digest(KEYS[2]!), 'bob'],
    ]);
    // Every task waits for input, so it stays open for cancel, subscribe and answers until one comes.
    const agent = defineAgent({
      card: { name: 'asker', description: 'asks once', version: '1' },
      async execute(ctx) {
        const answer = await ctx.askInput('more?');
        return `got ${answer.text}`;
      },
    });
    // Pushes go to this receiver under a path per caller: each delivery must be about that caller's task.
    const received: Array<{ path: string; taskId: string | undefined }> = [];
    let arrived: (() => void) | undefined;
    let pushes = 0;
    const receiver = createServer((req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (chunk: string) => (body += chunk));
      req.on('end', () => {
        const event = JSON.parse(body) as Wire;
        const taskId = (event.task?.id ?? event.statusUpdate?.taskId ?? event.artifactUpdate?.taskId) as
          string | undefined;
        received.push({ path: req.url ?? '', taskId });
        res.writeHead(200).end();
        arrived?.();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
    let crossScope = 0;
    try {
      await fc.assert(
        fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 24, size: 'max' }), async (ops) => {
          const store = new MemoryStore();
          const host = await startTestHost(store, { auth: 'keys', keys, agent, grpcPort: 0 });
          const model = new Model();
          const grpcCallers = new Map<number, ReturnType<typeof grpcCaller>>();
          received.length = 0;
          let answers = 0;
          try {
            for (const op of ops) {
              const actor = ACTORS[op.actor]!;
              const http = client(host.url, actor);
              let g = op.grpc ? grpcCallers.get(op.actor) : undefined;
              if (op.grpc && !g) grpcCallers.set(op.actor, (g = grpcCaller(host.grpcUrl!, actor)));
              const c = g ? { ...http, rpc: g.rpc, stream: g.stream } : http;
              const known = model.tasks.length > 0 ? model.tasks[op.target % model.tasks.length]! : undefined;
              if (op.kind === 'send' || !known) {
                const messageId = `m-${op.message}`;
                const sent = await c.rpc('SendMessage', {
                  message: { messageId, role: 'ROLE_USER', parts: [{ text: 'go' }] },
                  configuration: { returnImmediately: true },
                });
                const id = sent.result.task.id as string;
                const before = model.byMessage.get(`${op.actor}/${messageId}`);
                if (before !== undefined && !model.acked.has(before)) expect(id).toBe(before);
                else {
                  // A new task: never one that another caller (or this one) already holds.
                  expect(model.tasks.map((t) => t.id)).not.toContain(id);
                  model.tasks.push({ id, actor: op.actor });
                  model.byMessage.set(`${op.actor}/${messageId}`, id);
                }
                continue;
              }
              const mine = known.actor === op.actor;
              if (!mine) crossScope++;
              const id = known.id;
              const configId = `c-${op.config}`;
              switch (op.kind) {
                case 'answer': {
                  const r = await c.rpc('SendMessage', {
                    message: {
                      messageId: `answer-${answers++}`,
                      taskId: id,
                      role: 'ROLE_USER',
                      parts: [{ text: 'yes' }],
                    },
                    configuration: { returnImmediately: true },
                  });
                  if (mine) expect(r.error?.code).not.toBe(TASK_NOT_FOUND);
                  else expect(r.error?.code).toBe(TASK_NOT_FOUND);
                  if (mine && !r.error) model.acked.add(id);
                  break;
                }
                case 'answerStream': {
                  const r = await c.stream('SendStreamingMessage', {
                    message: {
                      messageId: `answer-${answers++}`,
                      taskId: id,
                      role: 'ROLE_USER',
                      parts: [{ text: 'yes' }],
                    },
                  });
                  if (!mine) expect(r.error?.code).toBe(TASK_NOT_FOUND);
                  else if (r.error) expect(r.error.code).not.toBe(TASK_NOT_FOUND);
                  else expect(r.first.result.task?.id ?? r.first.result.statusUpdate?.taskId).toBe(id);
                  if (mine && !r.error) model.acked.add(id);
                  break;
                }
                case 'get': {
                  if (op.rest) {
                    const r = await c.rest('GET', `/tasks/${id}`);
                    expect(mine ? r.body.id : r.notFound).toBe(mine ? id : true);
                  } else {
                    const r = await c.rpc('GetTask', { id });
                    if (mine) expect(r.result.id).toBe(id);
                    else expect(r.error?.code).toBe(TASK_NOT_FOUND);
                  }
                  if (mine) model.acked.add(id);
                  break;
                }
                case 'list': {
                  const tasks = op.rest
                    ? ((await c.rest('GET', '/tasks?pageSize=100')).body.tasks as Wire[])
                    : // proto3 leaves an empty list out on gRPC.
                      (((await c.rpc('ListTasks', { pageSize: 100 })).result.tasks ?? []) as Wire[]);
                  expect(tasks.map((t: { id: string }) => t.id).sort()).toEqual(model.owned(op.actor).sort());
                  break;
                }
                case 'cancel': {
                  if (op.rest) {
                    const r = await c.rest('POST', `/tasks/${id}:cancel`);
                    expect(r.notFound).toBe(!mine);
                    if (mine && r.ok) model.acked.add(id);
                  } else {
                    const r = await c.rpc('CancelTask', { id });
                    if (mine) expect(r.error?.code).not.toBe(TASK_NOT_FOUND);
                    else expect(r.error?.code).toBe(TASK_NOT_FOUND);
                    if (mine && !r.error) model.acked.add(id);
                  }
                  break;
                }
                case 'subscribe': {
                  const r = await c.stream('SubscribeToTask', { id });
                  if (!mine) expect(r.error?.code).toBe(TASK_NOT_FOUND);
                  else if (r.error) expect(r.error.code).not.toBe(TASK_NOT_FOUND);
                  else expect(r.first.result.task.id).toBe(id);
                  if (mine && !r.error) model.acked.add(id);
                  break;
                }
                case 'pushCreate': {
                  const r = await c.rpc('CreateTaskPushNotificationConfig', {
                    taskId: id,
                    id: configId,
                    url: `${receiverUrl}/caller-${op.actor}/${configId}`,
                    token: `token-of-${op.actor}`,
                  });
                  if (mine) {
                    expect(r.result).toMatchObject({ taskId: id, id: configId });
                    model.configs.set(`${id}/${configId}`, op.actor);
                    model.acked.add(id);
                  } else expect(r.error?.code).toBe(TASK_NOT_FOUND);
                  break;
                }
                case 'pushGet': {
                  const r = await c.rpc('GetTaskPushNotificationConfig', { taskId: id, id: configId });
                  if (mine && model.configs.has(`${id}/${configId}`)) {
                    expect(r.result).toMatchObject({
                      taskId: id,
                      id: configId,
                      token: `token-of-${op.actor}`,
                    });
                  } else expect(r.error?.code).toBe(TASK_NOT_FOUND);
                  if (mine && !r.error) model.acked.add(id);
                  break;
                }
                case 'pushList': {
                  const r = await c.rpc('ListTaskPushNotificationConfigs', { taskId: id });
                  if (mine) {
                    const ids = ((r.result.configs ?? []) as Array<{ id: string }>).map((x) => x.id).sort();
                    expect(ids).toEqual(model.configsOf(id).sort());
                    model.acked.add(id);
                  } else expect(r.error?.code).toBe(TASK_NOT_FOUND);
                  break;
                }
                case 'pushDelete': {
                  const r = await c.rpc('DeleteTaskPushNotificationConfig', { taskId: id, id: configId });
                  if (mine) {
                    expect(r.error).toBeUndefined();
                    model.configs.delete(`${id}/${configId}`);
                    model.acked.add(id);
                  } else expect(r.error?.code).toBe(TASK_NOT_FOUND);
                  break;
                }
              }
            }
            // Nothing another caller did changed what each owner holds.
            for (const [i, actor] of ACTORS.entries()) {
              const c = client(host.url, actor);
              const listed = (await c.rpc('ListTasks', { pageSize: 100 })).result.tasks as Array<{
                id: string;
              }>;
              expect(listed.map((t) => t.id).sort()).toEqual(model.owned(i).sort());
              for (const id of model.owned(i)) {
                const configs = (await c.rpc('ListTaskPushNotificationConfigs', { taskId: id })).result
                  .configs as Array<{
                  id: string;
                  token?: string;
                }>;
                expect(configs.map((x) => x.id).sort()).toEqual(model.configsOf(id).sort());
                for (const x of configs) expect(x.token).toBe(`token-of-${i}`);
              }
            }
            // Each owner answers its tasks that have push configs: the changes that follow are pushed to
            // exactly those configs. Wait (woken by each arrival) until each such config got one.
            const due: string[] = [];
            for (const { id, actor } of model.tasks) {
              const configs = model.configsOf(id);
              if (configs.length === 0) continue;
              const r = await client(host.url, ACTORS[actor]!).rpc('SendMessage', {
                message: {
                  messageId: `final-${id}`,
                  taskId: id,
                  role: 'ROLE_USER',
                  parts: [{ text: 'done' }],
                },
                configuration: { returnImmediately: true },
              });
              if (!r.error) for (const configId of configs) due.push(`/caller-${actor}/${configId} ${id}`);
            }
            const missing = () => due.filter((d) => !received.some((p) => `${p.path} ${p.taskId}` === d));
            while (missing().length > 0) {
              await new Promise<void>((resolve, reject) => {
                const bound = setTimeout(
                  () => reject(new Error(`pushes never arrived: ${missing().join(', ')}`)),
                  20_000,
                );
                arrived = () => {
                  clearTimeout(bound);
                  arrived = undefined;
                  resolve();
                };
              });
            }
            // Every push went to the caller whose task it was about.
            for (const push of received) {
              const task = model.tasks.find((t) => t.id === push.taskId);
              expect(push.path.startsWith(`/caller-${task?.actor}/`)).toBe(true);
            }
            pushes += received.length;
          } finally {
            for (const g of grpcCallers.values()) g.close();
            await host.close();
          }
        }),
        { seed: 0x5c09e5, numRuns: 30 },
      );
    } finally {
      receiver.closeAllConnections();
      await new Promise<void>((resolve) => receiver.close(() => resolve()));
    }
    // The runs did aim at other callers' tasks, not only at their own, and pushes were delivered.
    expect(crossScope).toBeGreaterThan(100);
    expect(pushes).toBeGreaterThan(5);
  });
});
