import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { defineAgent } from '../../src/host/agent-api.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import { startTestHost, type Wire } from '../host/in-process.ts';

/**
 * Random interleavings of four callers' A2A operations on one host, over both bindings: no caller ever
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
  message: number;
  config: number;
}

const opArb: fc.Arbitrary<Op> = fc.record({
  actor: fc.nat({ max: ACTORS.length - 1 }),
  // Push configs weigh more: the final check needs tasks with configs to push to.
  kind: fc.constantFrom(...KINDS, 'pushCreate', 'pushCreate'),
  target: fc.nat({ max: 50 }),
  rest: fc.boolean(),
  message: fc.nat({ max: 2 }),
  config: fc.nat({ max: 1 }),
});

/** Who made what, as the callers' answers must reflect it. */
class Model {
  readonly tasks: Array<{ id: string; actor: number }> = [];
  readonly byMessage = new Map<string, string>();
  /** `taskId/configId` → actor. */
  readonly configs = new Map<string, number>();

  owned(actor: number): string[] {
    return this.tasks.filter((t) => t.actor === actor).map((t) => t.id);
  }

  configsOf(taskId: string): string[] {
    return [...this.configs.keys()]
      .filter((k) => k.startsWith(`${taskId}/`))
      .map((k) => k.slice(taskId.length + 1));
  }
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
  it('random interleavings of two owners in two tenants never cross scopes, on either binding', async () => {
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
          const host = await startTestHost(store, { auth: 'keys', keys, agent });
          const model = new Model();
          received.length = 0;
          let answers = 0;
          try {
            for (const op of ops) {
              const actor = ACTORS[op.actor]!;
              const c = client(host.url, actor);
              const known = model.tasks.length > 0 ? model.tasks[op.target % model.tasks.length]! : undefined;
              if (op.kind === 'send' || !known) {
                const messageId = `m-${op.message}`;
                const sent = await c.rpc('SendMessage', {
                  message: { messageId, role: 'ROLE_USER', parts: [{ text: 'go' }] },
                  configuration: { returnImmediately: true },
                });
                const id = sent.result.task.id as string;
                const before = model.byMessage.get(`${op.actor}/${messageId}`);
                if (before !== undefined) expect(id).toBe(before);
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
                  break;
                }
                case 'list': {
                  const tasks = op.rest
                    ? ((await c.rest('GET', '/tasks?pageSize=100')).body.tasks as Wire[])
                    : ((await c.rpc('ListTasks', { pageSize: 100 })).result.tasks as Wire[]);
                  expect(tasks.map((t: { id: string }) => t.id).sort()).toEqual(model.owned(op.actor).sort());
                  break;
                }
                case 'cancel': {
                  if (op.rest) {
                    const r = await c.rest('POST', `/tasks/${id}:cancel`);
                    expect(r.notFound).toBe(!mine);
                  } else {
                    const r = await c.rpc('CancelTask', { id });
                    if (mine) expect(r.error?.code).not.toBe(TASK_NOT_FOUND);
                    else expect(r.error?.code).toBe(TASK_NOT_FOUND);
                  }
                  break;
                }
                case 'subscribe': {
                  const r = await c.stream('SubscribeToTask', { id });
                  if (!mine) expect(r.error?.code).toBe(TASK_NOT_FOUND);
                  else if (r.error) expect(r.error.code).not.toBe(TASK_NOT_FOUND);
                  else expect(r.first.result.task.id).toBe(id);
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
                  break;
                }
                case 'pushList': {
                  const r = await c.rpc('ListTaskPushNotificationConfigs', { taskId: id });
                  if (mine) {
                    const ids = (r.result.configs as Array<{ id: string }>).map((x) => x.id).sort();
                    expect(ids).toEqual(model.configsOf(id).sort());
                  } else expect(r.error?.code).toBe(TASK_NOT_FOUND);
                  break;
                }
                case 'pushDelete': {
                  const r = await c.rpc('DeleteTaskPushNotificationConfig', { taskId: id, id: configId });
                  if (mine) {
                    expect(r.error).toBeUndefined();
                    model.configs.delete(`${id}/${configId}`);
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
