import { Agent, request } from 'node:http';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VirtualClock } from '../../src/core/clock.ts';
import type { AgentDefinition } from '../../src/host/agent-api.ts';
import { parseKeys } from '../../src/host/auth.ts';
import type { RunningHost } from '../../src/host/start-host.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import type { Store } from '../../src/store/store.ts';
import { startTestHost } from '../host/in-process.ts';
import { bodyOf, oddValue, rssMiB } from './fuzz-inputs.ts';

/**
 * The agent host under generated and mutated requests on both bindings (JSON-RPC and HTTP+JSON, with
 * and without a `/{tenant}` prefix), over its node:http listener as served in production. Whatever
 * arrives: no 5xx, no internal error (-32603 / INTERNAL), the host keeps answering, memory stays
 * bounded, and a refused request writes nothing to the store.
 */

const RUNS = 10_000;
const SEED = 20261202;
const MAX_BODY = 16 * 1024;
const KEY_A = 'host-key-aaaaaaaa';
const KEY_B = 'host-key-bbbbbbbb';

/** Counts the store's writes: any call that is not a read. */
class WriteCounter {
  writes = 0;
  readonly store: Store;

  constructor(inner: MemoryStore) {
    this.store = new Proxy(inner, {
      get: (target, prop) => {
        const v = Reflect.get(target, prop, target) as unknown;
        if (typeof v !== 'function') return v;
        const fn = (v as (...a: unknown[]) => unknown).bind(target);
        if (typeof prop !== 'string' || /^(get|find|list|count|onChange|close|capabilities)/.test(prop))
          return fn;
        return (...args: unknown[]) => {
          this.writes++;
          return fn(...args);
        };
      },
    });
  }
}

const agent: AgentDefinition = {
  card: { name: 'fuzz', description: 'answers at once', version: '1.0.0' },
  execute: async () => 'done',
};

let host: RunningHost;
let counter: WriteCounter;
const taskIds: string[] = [];
const http = new Agent({ keepAlive: true, maxSockets: 1 });

beforeAll(async () => {
  counter = new WriteCounter(new MemoryStore());
  host = await startTestHost(counter.store, {
    agent,
    auth: 'keys',
    keys: parseKeys(`alice:${KEY_A},bob:${KEY_B}`),
    clock: new VirtualClock(Date.parse('2026-12-01T00:00:00Z')),
    maxBodyBytes: MAX_BODY,
    allowPrivateWebhooks: false,
    resolver: async () => [{ address: '93.184.215.14', family: 4 }],
    pushSender: async () => ({ ok: true, status: 200 }) as never,
  });
  for (const key of [KEY_A, KEY_B, KEY_A]) {
    const res = await send({
      method: 'POST',
      path: '/a2a/jsonrpc',
      headers: { authorization: `Bearer ${key}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: validSend('seed') }),
    });
    taskIds.push((JSON.parse(res.body) as { result: { task: { id: string } } }).result.task.id);
  }
});
afterAll(async () => {
  http.destroy();
  await host?.close();
});

interface Req {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string | Uint8Array;
}

interface Res {
  status: number;
  type: string;
  body: string;
}

/** One request over the keep-alive agent; a stream is read to its first chunk and then dropped. */
function send(r: Req): Promise<Res> {
  const url = new URL(host.url);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        agent: http,
        host: url.hostname,
        port: url.port,
        method: r.method,
        path: r.path,
        headers: { 'content-type': 'application/json', 'a2a-version': '1.0', ...r.headers },
      },
      (res) => {
        const type = res.headers['content-type'] ?? '';
        const chunks: Buffer[] = [];
        if (type.startsWith('text/event-stream')) {
          res.once('data', (c: Buffer) => {
            resolve({ status: res.statusCode!, type, body: c.toString() });
            req.destroy();
          });
          res.once('end', () => resolve({ status: res.statusCode!, type, body: '' }));
          return;
        }
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode!, type, body: Buffer.concat(chunks).toString() }),
        );
      },
    );
    req.on('error', reject);
    req.end(r.body);
  });
}

function validSend(messageId: string): Record<string, unknown> {
  return {
    message: { messageId, role: 'ROLE_USER', parts: [{ text: 'hi' }] },
    configuration: { returnImmediately: true },
  };
}

const keyHeader = fc.constantFrom<Record<string, string>>(
  { authorization: `Bearer ${KEY_A}` },
  { authorization: `Bearer ${KEY_A}` },
  { authorization: `Bearer ${KEY_B}` },
  {},
  { authorization: 'Bearer wrong-key-123456' },
);

function requests(): fc.Arbitrary<Req> {
  const id = fc.oneof(fc.constantFrom(...taskIds), fc.string({ maxLength: 10 }));
  const message = fc.record({
    messageId: fc.string({ maxLength: 10 }),
    role: fc.constantFrom('ROLE_USER', 'ROLE_AGENT', 'user'),
    parts: fc.array(
      fc.oneof(
        fc.record({ text: fc.string({ maxLength: 20 }) }),
        fc.record({ data: fc.jsonValue({ maxDepth: 3 }) }),
        fc.record({ url: fc.webUrl(), mediaType: fc.constantFrom('text/plain', '') }),
        fc.record({ raw: fc.base64String({ maxLength: 12 }) }),
      ),
      { maxLength: 3 },
    ),
    taskId: fc.option(id, { nil: undefined }),
    contextId: fc.option(fc.string({ maxLength: 6 }), { nil: undefined }),
    metadata: fc.option(fc.dictionary(fc.string({ maxLength: 4 }), oddValue, { maxKeys: 2 }), {
      nil: undefined,
    }),
  });
  const params: Record<string, fc.Arbitrary<Record<string, unknown>>> = {
    SendMessage: fc.record({
      message,
      configuration: fc.option(fc.record({ returnImmediately: fc.boolean() }), { nil: undefined }),
    }),
    SendStreamingMessage: fc.record({ message }),
    GetTask: fc.record({ id, historyLength: fc.option(fc.integer({ min: -2, max: 5 }), { nil: undefined }) }),
    ListTasks: fc.record({
      pageSize: fc.option(fc.integer({ min: -1, max: 200 }), { nil: undefined }),
      pageToken: fc.option(fc.string({ maxLength: 8 }), { nil: undefined }),
      status: fc.option(fc.constantFrom('TASK_STATE_COMPLETED', 'bogus'), { nil: undefined }),
    }),
    CancelTask: fc.record({ id }),
    SubscribeToTask: fc.record({ id }),
    CreateTaskPushNotificationConfig: fc.record({
      taskId: id,
      url: fc.oneof(fc.webUrl(), fc.constantFrom('http://127.0.0.1/x', 'http://[::127.0.0.1]/', 'ftp://x')),
      token: fc.option(fc.string({ maxLength: 10 }), { nil: undefined }),
      authentication: fc.option(
        fc.record({ scheme: fc.string({ maxLength: 8 }), credentials: fc.string({ maxLength: 8 }) }),
        { nil: undefined },
      ),
    }),
    GetTaskPushNotificationConfig: fc.record({ taskId: id, id: fc.string({ maxLength: 6 }) }),
    ListTaskPushNotificationConfigs: fc.record({ taskId: id }),
    DeleteTaskPushNotificationConfig: fc.record({ taskId: id, id: fc.string({ maxLength: 6 }) }),
    GetExtendedAgentCard: fc.constant({}),
  };
  const methods = Object.keys(params);
  const rpcEnvelope = fc
    .tuple(
      fc.constantFrom(...methods, 'Nope', ''),
      fc.oneof(fc.integer(), fc.string({ maxLength: 4 }), fc.constant(null)),
    )
    .chain(([method, rpcId]) =>
      (params[method] ?? fc.constant({})).map((p) => ({ jsonrpc: '2.0', id: rpcId, method, params: p })),
    );
  const rpc = fc
    .record({
      headers: keyHeader,
      body: bodyOf(rpcEnvelope, MAX_BODY),
      http: fc.constantFrom('POST', 'POST', 'GET', 'PUT'),
    })
    .map(({ headers, body, http }): Req => ({
      method: http,
      path: '/a2a/jsonrpc',
      headers,
      ...(http === 'GET' ? {} : { body }),
    }));
  const tenant = fc.constantFrom('', '', '/acme', '/%ZZ', '/a%2Fb');
  const restBody = fc
    .record({
      tenant,
      route: fc.constantFrom('message:send', 'message:stream', 'cancel', 'push'),
      id,
      headers: keyHeader,
    })
    .chain(({ tenant, route, id, headers }) => {
      const valid: fc.Arbitrary<Record<string, unknown>> =
        route === 'message:send' || route === 'message:stream'
          ? params.SendMessage!
          : route === 'push'
            ? params.CreateTaskPushNotificationConfig!
            : fc.record({ metadata: fc.option(oddValue, { nil: undefined }) });
      const path =
        route === 'cancel'
          ? `/tasks/${encodeURIComponent(id)}:cancel`
          : route === 'push'
            ? `/tasks/${encodeURIComponent(id)}/pushNotificationConfigs`
            : `/${route}`;
      return bodyOf(valid, MAX_BODY).map((body): Req => ({
        method: 'POST',
        path: `/a2a/rest${tenant}${path}`,
        headers,
        body,
      }));
    });
  const restGet = fc
    .record({
      tenant,
      headers: keyHeader,
      method: fc.constantFrom('GET', 'GET', 'DELETE', 'POST', 'PATCH'),
      path: fc.oneof(
        fc.constantFrom('/tasks', '/extendedAgentCard', '/nope', '/tasks/a/b/c/d'),
        id.map((i) => `/tasks/${encodeURIComponent(i)}`),
        id.map((i) => `/tasks/${encodeURIComponent(i)}:subscribe`),
        id.map((i) => `/tasks/${encodeURIComponent(i)}/pushNotificationConfigs`),
        id.map((i) => `/tasks/${encodeURIComponent(i)}/pushNotificationConfigs/${encodeURIComponent(i)}`),
      ),
      query: fc.dictionary(
        fc.constantFrom(
          'pageSize',
          'pageToken',
          'status',
          'historyLength',
          'contextId',
          'A2A-Version',
          'statusTimestampAfter',
        ),
        fc.oneof(fc.string({ maxLength: 8 }), fc.constantFrom('-1', '0', '1e999', '2026-01-01T00:00:00Z')),
        { maxKeys: 3 },
      ),
    })
    .map(({ tenant, headers, method, path, query }): Req => {
      const q = new URLSearchParams(query).toString();
      return { method, path: `/a2a/rest${tenant}${path}${q ? `?${q}` : ''}`, headers };
    });
  const other = fc
    .constantFrom('/.well-known/agent-card.json', '/healthz', '/nope', '/a2a', '/a2a/rest')
    .map((path): Req => ({ method: 'GET', path, headers: {} }));
  return fc.oneof(
    { weight: 5, arbitrary: rpc },
    { weight: 3, arbitrary: restBody },
    { weight: 2, arbitrary: restGet },
    { weight: 1, arbitrary: other },
  );
}

/** Waits until the store has seen no write for a few turns of the event loop (no timers: the clock is virtual). */
async function quiet(): Promise<void> {
  let last = -1;
  let still = 0;
  while (still < 3) {
    await new Promise((r) => setImmediate(r));
    if (counter.writes === last) still++;
    else {
      still = 0;
      last = counter.writes;
    }
  }
}

function refused(r: Req, res: Res): boolean {
  if (res.status >= 400) return true;
  if (!r.path.startsWith('/a2a/jsonrpc') || !res.type.startsWith('application/json')) return false;
  return (JSON.parse(res.body) as { error?: unknown }).error !== undefined;
}

function internal(res: Res): boolean {
  if (res.body.includes('"code":-32603') || res.body.includes('"INTERNAL"')) return true;
  return false;
}

describe('host fuzz', () => {
  it(`${RUNS} generated and mutated requests on both bindings: no 5xx, no internal error, refused requests write nothing`, async () => {
    const rssStart = rssMiB();
    let sent = 0;
    const statuses = new Map<number, number>();
    await quiet();
    await fc.assert(
      fc.asyncProperty(requests(), async (r) => {
        const before = counter.writes;
        const res = await send(r);
        sent++;
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        const what = `${r.method} ${r.path} → ${res.status} ${res.body.slice(0, 200)}`;
        expect(res.status, what).toBeLessThan(500);
        expect(internal(res), what).toBe(false);
        if (refused(r, res)) expect(counter.writes, what).toBe(before);
        await quiet();
        if (sent % 1000 === 0) {
          expect((await send({ method: 'GET', path: '/healthz', headers: {} })).status).toBe(200);
          expect(rssMiB() - rssStart).toBeLessThan(300);
        }
      }),
      { seed: SEED, numRuns: RUNS, endOnFailure: true },
    );
    expect(sent).toBeGreaterThanOrEqual(RUNS);
    expect((await send({ method: 'GET', path: '/healthz', headers: {} })).status).toBe(200);
    expect(statuses.get(200) ?? 0).toBeGreaterThan(0);
    expect(statuses.get(413) ?? 0).toBeGreaterThan(0);
    expect(statuses.get(401) ?? 0).toBeGreaterThan(0);
  }, 120_000);
});
