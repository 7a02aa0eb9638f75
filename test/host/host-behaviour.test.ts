import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { request } from 'node:http';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { VirtualClock } from '../../src/core/clock.ts';
import { defineAgent } from '../../src/host/agent-api.ts';
import { parseKeys } from '../../src/host/auth.ts';
import type { RunningHost } from '../../src/host/start-host.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { call, startTestHost, waitForTask, type Wire } from './in-process.ts';

const hosts: RunningHost[] = [];
afterEach(async () => {
  await Promise.all(hosts.splice(0).map((h) => h.close()));
});
async function host(...args: Parameters<typeof startTestHost>) {
  const h = await startTestHost(...args);
  hosts.push(h);
  return h;
}

const msg = (id: string, part: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  message: { messageId: id, role: 'ROLE_USER', parts: [part], ...extra },
  configuration: { returnImmediately: true },
});

describe('input timeout (virtual clock)', () => {
  it('a task left in INPUT_REQUIRED for 15 min fails with a readable reason', async () => {
    const clock = new VirtualClock(Date.parse('2026-01-01T00:00:00Z'));
    const store = new MemoryStore();
    const h = await host(store, { clock });
    const { body } = await call(
      h.url,
      'SendMessage',
      msg('it-1', { data: { steps: 0, askInput: 'Which edition?' } }),
    );
    const id = body.result.task.id as string;
    await waitForTask(store, id, (t) => t.state === 'TASK_STATE_INPUT_REQUIRED');
    await clock.advance(899_000);
    expect((await store.getAgentTask(id))!.state).toBe('TASK_STATE_INPUT_REQUIRED');
    await clock.advance(1_000);
    await waitForTask(store, id, (t) => t.state === 'TASK_STATE_FAILED');
    const got = await call(h.url, 'GetTask', { id });
    expect(got.body.result.status.message.parts[0].text).toMatch(/No input was received within 900000 ms/);
  });

  it('an answer before the deadline cancels the timeout', async () => {
    const clock = new VirtualClock(Date.parse('2026-01-01T00:00:00Z'));
    const store = new MemoryStore();
    const h = await host(store, { clock, inputTimeoutMs: 60_000 });
    const { body } = await call(
      h.url,
      'SendMessage',
      msg('it-2', { data: { steps: 0, askInput: 'Which?' } }),
    );
    const id = body.result.task.id as string;
    await waitForTask(store, id, (t) => t.state === 'TASK_STATE_INPUT_REQUIRED');
    const answer = await call(h.url, 'SendMessage', {
      message: { messageId: 'it-2a', role: 'ROLE_USER', taskId: id, parts: [{ text: 'first' }] },
    });
    expect(answer.body.result.task.status.state).toBe('TASK_STATE_COMPLETED');
    await clock.advance(120_000);
    expect((await store.getAgentTask(id))!.state).toBe('TASK_STATE_COMPLETED');
  });
});

describe('restart recovery (in process, shared store)', () => {
  it('a non-resumable agent’s running task is failed with a reason on restart', async () => {
    const store = new MemoryStore();
    const stuck = defineAgent({
      card: { name: 'stuck', description: 'never finishes', version: '1' },
      async execute(ctx) {
        await ctx.status('working');
        await ctx.sleep(3_600_000);
      },
    });
    const h1 = await startTestHost(store, { agent: stuck });
    const { body } = await call(h1.url, 'SendMessage', msg('rr-1', { text: 'go' }));
    const id = body.result.task.id as string;
    await waitForTask(store, id, (t) => JSON.stringify(t.task).includes('working'));
    await h1.close();
    expect((await store.getAgentTask(id))!.state).toBe('TASK_STATE_WORKING');
    const h2 = await host(store, { agent: stuck });
    expect(h2.recovered.failed).toBe(1);
    const t = (await store.getAgentTask(id))!;
    expect(t.state).toBe('TASK_STATE_FAILED');
    expect(JSON.stringify(t.task)).toMatch(/cannot resume/);
  });

  it('a resumable agent continues from its checkpoint', async () => {
    const store = new MemoryStore();
    const clock1 = new VirtualClock(1_000_000);
    const h1 = await startTestHost(store, { clock: clock1 });
    const { body } = await call(
      h1.url,
      'SendMessage',
      msg('rr-2', { data: { durationMs: 3000, steps: 3, artifactChunks: 1 } }),
    );
    const id = body.result.task.id as string;
    await waitForTask(store, id, (t) => t.state === 'TASK_STATE_WORKING');
    await clock1.advance(1000);
    await waitForTask(store, id, (t) => JSON.stringify(t.task).includes('step 1/3'));
    await h1.close();
    const clock2 = new VirtualClock(2_000_000);
    const h2 = await host(store, { clock: clock2 });
    expect(h2.recovered.resumed).toBe(1);
    await clock2.advance(5000);
    await waitForTask(store, id, (t) => t.state === 'TASK_STATE_COMPLETED');
    const events = JSON.stringify(await store.listAgentTaskEvents(id, 0));
    expect(events).toContain('Resumed after an agent host restart');
    // the checkpoint held: step 1 is not done twice
    expect(events.match(/step 1\/3/g)?.length).toBe(1);
    expect(events).toContain('step 3/3');
  });
});

describe('auth keys', () => {
  const keys = parseKeys('alice:alice-key-0123456789,bob:bob-key-0123456789ab');

  it('requires a bearer key, scopes every operation to its owner and declares the scheme', async () => {
    const store = new MemoryStore();
    const h = await host(store, { auth: 'keys', keys });
    const none = await call(h.url, 'ListTasks', {});
    expect(none.status).toBe(401);
    expect(none.body.error!.code).toBe(-32040);
    const wrong = await call(h.url, 'ListTasks', {}, { authorization: 'Bearer nope' });
    expect(wrong.status).toBe(401);
    const alice = { authorization: 'Bearer alice-key-0123456789' };
    const bob = { authorization: 'Bearer bob-key-0123456789ab' };
    const created = await call(
      h.url,
      'SendMessage',
      { message: { messageId: 'same-id', role: 'ROLE_USER', parts: [{ text: 'a' }] } },
      alice,
    );
    const id = created.body.result.task.id as string;
    expect((await call(h.url, 'GetTask', { id }, bob)).body.error!.code).toBe(-32001);
    expect((await call(h.url, 'CancelTask', { id }, bob)).body.error!.code).toBe(-32001);
    expect((await call(h.url, 'ListTaskPushNotificationConfigs', { taskId: id }, bob)).body.error!.code).toBe(
      -32001,
    );
    expect((await call(h.url, 'ListTasks', {}, bob)).body.result.tasks).toEqual([]);
    expect((await call(h.url, 'ListTasks', {}, alice)).body.result.totalSize).toBe(1);
    // messageId idempotency is per caller: bob's same messageId is a new task
    const bobs = await call(
      h.url,
      'SendMessage',
      { message: { messageId: 'same-id', role: 'ROLE_USER', parts: [{ text: 'a' }] } },
      bob,
    );
    expect(bobs.body.result.task.id).not.toBe(id);
    const card = (await (await fetch(`${h.url}/.well-known/agent-card.json`)).json()) as Wire;
    expect(card.securitySchemes.bearer.httpAuthSecurityScheme.scheme).toBe('Bearer');
    expect(card.securityRequirements).toEqual([{ schemes: { bearer: { list: [] } } }]);
  });
});

/** One request over node:http with these header lines, repeats kept (fetch would join them). */
function sendLines(url: string, method: string, path: string, lines: Array<[string, string]>, body?: string) {
  return new Promise<{ status: number; headers: Record<string, unknown>; body: string }>(
    (resolve, reject) => {
      const req = request(`${url}${path}`, { method, headers: lines.flat() }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => {
          // What differs per connection and per clock tick, not per answer.
          const { date: _d, connection: _c, 'keep-alive': _k, ...rest } = res.headers;
          resolve({ status: res.statusCode!, headers: rest, body: text });
        });
      });
      req.on('error', reject);
      req.end(body);
    },
  );
}

describe('two Authorization headers', () => {
  const keys = parseKeys('alice:alice-key-0123456789,bob:bob-key-0123456789ab');
  const alice: [string, string] = ['authorization', 'Bearer alice-key-0123456789'];
  const bob: [string, string] = ['authorization', 'Bearer bob-key-0123456789ab'];
  const rpcBody = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ListTasks', params: {} });

  // node:http keeps the first Authorization line, the hono path's Headers joins them ("Bearer a, Bearer
  // b"). The node adapters used to authenticate as the first key; now both paths answer the same 401.
  // An IPv6 Host sends the same request through hono.
  it.each<[string, string, string, Array<[string, string]>, string?]>([
    ['JSON-RPC', 'POST', '/a2a/jsonrpc', [['content-type', 'application/json']], rpcBody],
    ['HTTP+JSON', 'GET', '/a2a/rest/tasks', []],
  ])(
    'are an ambiguous credential: %s answers 401 on the node path exactly as on the hono path',
    async (_binding, method, path, extra, body) => {
      const h = await host(new MemoryStore(), { auth: 'keys', keys });
      const lines: Array<[string, string]> = [['a2a-version', '1.0'], ...extra];
      // Header lines as an array go without the Host node adds for an object: name one per path.
      const port = new URL(h.url).port;
      const quad: [string, string] = ['host', `127.0.0.1:${port}`];
      const ipv6: [string, string] = ['host', `[::1]:${port}`];
      const node = await sendLines(h.url, method, path, [quad, ...lines, alice, bob], body);
      const web = await sendLines(h.url, method, path, [ipv6, ...lines, alice, bob], body);
      expect(node.status).toBe(401);
      expect(node).toEqual(web);
      // Either key alone still authenticates on the node path.
      for (const key of [alice, bob])
        expect((await sendLines(h.url, method, path, [quad, ...lines, key], body)).status).toBe(200);
    },
  );
});

describe('agent card', () => {
  it('is served with an ETag and answers If-None-Match with 304', async () => {
    const h = await host(new MemoryStore());
    const res = await fetch(`${h.url}/.well-known/agent-card.json`);
    const etag = res.headers.get('etag')!;
    const card = (await res.json()) as Wire;
    expect(card.supportedInterfaces[0]).toEqual({
      url: `${h.url}/a2a/jsonrpc`,
      protocolBinding: 'JSONRPC',
      protocolVersion: '1.0',
    });
    expect(card.capabilities.extensions[0].uri).toMatch(/last-event-id/);
    const again = await fetch(`${h.url}/.well-known/agent-card.json`, { headers: { 'if-none-match': etag } });
    expect(again.status).toBe(304);
  });
});

describe('ListTasks filters', () => {
  it('statusTimestampAfter is inclusive (proto: at or after), historyLength and includeArtifacts apply', async () => {
    const t0 = Date.parse('2026-03-01T10:00:00.000Z');
    const clock = new VirtualClock(t0);
    const store = new MemoryStore();
    const h = await host(store, { clock });
    const first = await call(h.url, 'SendMessage', {
      message: { messageId: 'lf-1', role: 'ROLE_USER', parts: [{ text: 'one' }] },
    });
    await clock.advance(1000);
    const second = await call(h.url, 'SendMessage', {
      message: { messageId: 'lf-2', role: 'ROLE_USER', parts: [{ text: 'two' }] },
    });
    const secondAt = second.body.result.task.status.timestamp as string;
    const after = await call(h.url, 'ListTasks', {
      statusTimestampAfter: secondAt,
      historyLength: 1,
      includeArtifacts: true,
    });
    expect(after.body.result.tasks.map((t: Wire) => t.id)).toEqual([second.body.result.task.id]);
    expect(after.body.result.tasks[0].history.length).toBe(1);
    expect(after.body.result.tasks[0].artifacts.length).toBe(1);
    const all = await call(h.url, 'ListTasks', { historyLength: 0 });
    expect(all.body.result.tasks.map((t: Wire) => t.id)).toEqual([
      second.body.result.task.id,
      first.body.result.task.id,
    ]);
    expect(all.body.result.tasks.every((t: Wire) => !('history' in t) && !('artifacts' in t))).toBe(true);
    expect(all.body.result).toMatchObject({ nextPageToken: '', pageSize: 50, totalSize: 2 });
    const bad = await call(h.url, 'ListTasks', { pageToken: 'not-a-token' });
    expect(bad.body.error!.code).toBe(-32602);
  });
});

describe('stored documents are the host’s own', () => {
  it('an agent editing what it was given or what it passed in never changes the stored task', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'taskplane-owned-'));
    const store = new SqliteStore({ path: join(dir, 'host.db') });
    const meddler = defineAgent({
      card: { name: 'meddler', description: 'edits everything it touches', version: '1' },
      async execute(ctx) {
        // Each edit lands before the host writes what it was given (writes happen on a later turn).
        ctx.message.parts[0]!.text = 'EDITED trigger';
        (ctx.task.history ??= []).push({ messageId: 'x', role: 'ROLE_AGENT', parts: [{ text: 'EDITED' }] });
        ctx.task.status.state = 'TASK_STATE_FAILED';
        const parts = [{ text: 'chunk one' }];
        const publishing = ctx.artifact({ parts, metadata: { n: 1 } });
        parts[0]!.text = 'EDITED chunk';
        parts.push({ text: 'EDITED extra' });
        const artifactId = await publishing;
        const checkpoint = { step: 1 };
        const saving = ctx.save(checkpoint);
        checkpoint.step = 99;
        await saving;
        const answer = await ctx.askInput('Which edition?');
        answer.message.parts[0]!.text = 'EDITED answer';
        await ctx.artifact({ artifactId, parts: [{ text: 'chunk two' }], append: true, lastChunk: true });
        const final = [{ text: 'done' }];
        const finishing = ctx.complete(final);
        final[0]!.text = 'EDITED final';
        await finishing;
      },
    });
    try {
      const h = await host(store, { agent: meddler });
      const { body } = await call(h.url, 'SendMessage', msg('own-1', { text: 'original trigger' }));
      const id = body.result.task.id as string;
      await waitForTask(store, id, (t) => t.state === 'TASK_STATE_INPUT_REQUIRED');
      await call(h.url, 'SendMessage', {
        message: { messageId: 'own-2', role: 'ROLE_USER', taskId: id, parts: [{ text: 'original answer' }] },
      });
      await waitForTask(store, id, (t) => t.state === 'TASK_STATE_COMPLETED');
      const task = (await call(h.url, 'GetTask', { id })).body.result as Wire;
      const stored = JSON.stringify(task) + JSON.stringify((await store.getAgentTask(id))!.executorState);
      expect(stored).not.toContain('EDITED');
      expect(task.history.map((m: Wire) => m.parts[0].text)).toEqual([
        'original trigger',
        'Which edition?',
        'original answer',
        'done',
      ]);
      expect(task.artifacts[0].parts).toEqual([{ text: 'chunk one' }, { text: 'chunk two' }]);
      expect(task.status.message.parts).toEqual([{ text: 'done' }]);
      expect((await store.getAgentTask(id))!.executorState).toMatchObject({ checkpoint: { step: 1 } });
    } finally {
      await Promise.all(hosts.splice(0).map((x) => x.close()));
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the host never edits a stored document in place: it runs with every record it gets back frozen', async () => {
    // draftOf (task-model.ts) shares all but the arrays a change edits with the stored record, and the
    // SQLite store returns the very documents it was given: an in-place edit anywhere in the host would
    // change a record others hold. Frozen, such an edit throws (ES modules are strict) and is logged.
    const errors: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void errors.push(line) });
    const store = frozen(new SqliteStore({ path: ':memory:' }));
    const busy = defineAgent({
      card: { name: 'busy', description: 'uses every ctx call', version: '1' },
      async execute(ctx) {
        await ctx.status('step 1');
        const artifactId = await ctx.artifact({ parts: [{ text: 'a' }] });
        await ctx.save({ step: 1 });
        const answer = await ctx.askInput('Which edition?');
        await ctx.artifact({ artifactId, parts: [{ text: answer.text }], append: true, lastChunk: true });
        await ctx.status('step 2');
        return 'done';
      },
    });
    const h = await host(store, { agent: busy, logger });
    const { body } = await call(h.url, 'SendMessage', msg('frozen-1', { text: 'go' }));
    const id = body.result.task.id as string;
    await call(h.url, 'CreateTaskPushNotificationConfig', {
      taskId: id,
      url: 'http://127.0.0.1:9/hook',
    });
    await waitForTask(store, id, (t) => t.state === 'TASK_STATE_INPUT_REQUIRED');
    await call(h.url, 'SendMessage', {
      message: { messageId: 'frozen-2', role: 'ROLE_USER', taskId: id, parts: [{ text: 'second' }] },
    });
    await waitForTask(store, id, (t) => t.state === 'TASK_STATE_COMPLETED');
    const other = (await call(h.url, 'SendMessage', msg('frozen-3', { data: { askInput: 'Why?' } }))).body
      .result.task.id as string;
    await waitForTask(store, other, (t) => t.state === 'TASK_STATE_INPUT_REQUIRED');
    expect((await call(h.url, 'CancelTask', { id: other })).body.result.status.state).toBe(
      'TASK_STATE_CANCELED',
    );
    const task = (await call(h.url, 'GetTask', { id })).body.result as Wire;
    expect(task.artifacts[0].parts).toEqual([{ text: 'a' }, { text: 'second' }]);
    expect(errors.filter((l) => /TypeError|read.only|not extensible/i.test(l))).toEqual([]);
    await h.close();
    hosts.splice(hosts.indexOf(h), 1);
    await store.close();
  });
});

/** The store, with every agent-task record and push config it returns deep-frozen. */
function frozen<S extends object>(store: S): S {
  return new Proxy(store, {
    get(target, prop) {
      const value: unknown = Reflect.get(target, prop, target);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        const out: unknown = (value as (...a: unknown[]) => unknown).apply(target, args);
        return out instanceof Promise ? out.then(deepFreeze) : out;
      };
    },
  });
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}
