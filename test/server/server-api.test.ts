import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import fc from 'fast-check';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { SystemClock } from '../../src/core/clock.ts';
import type { Envelope, EnvelopeEventType } from '../../src/core/envelope.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import { startServer, type RunningServer } from '../../src/server/start-server.ts';
import { FakeRemote } from '../plane/fake-remote.ts';

let server: RunningServer;
let remote: FakeRemote;
const A = 'key-aaaaaaaa-aaaaaaaa';
const B = 'key-bbbbbbbb-bbbbbbbb';

beforeAll(async () => {
  remote = new FakeRemote(new SystemClock());
  server = await startServer({
    port: 0,
    db: 'memory:',
    connectors: { fake: remote.connector('fake') },
    apiKeys: `alpha:${A},beta:${B}`,
    publicUrl: 'self',
    dashboard: false,
    defaultMetrics: false,
    logger: pino({ level: 'silent' }),
  });
});
afterAll(async () => {
  await server?.close();
});

function api(key: string | null, path: string, init: RequestInit = {}) {
  return fetch(server.url + path, {
    ...init,
    headers: {
      'content-type': 'application/json',
      ...(key ? { authorization: `Bearer ${key}` } : {}),
      ...(init.headers as Record<string, string>),
    },
  });
}
const post = (key: string, path: string, body: unknown, headers: Record<string, string> = {}) =>
  api(key, path, { method: 'POST', body: JSON.stringify(body), headers });

/** Appends `n` events to a store (one envelope, created once, then `n - 1` updates). */
async function seedEvents(store: MemoryStore, n: number): Promise<void> {
  const env = {
    id: `tsk_seed_${n}`,
    tenant: 'seed',
    version: 1,
    state: 'accepted',
    webhookIds: [],
    artifacts: [],
  } as unknown as Envelope;
  const ev = (type: EnvelopeEventType) => ({ envelopeId: env.id, tenant: 'seed', type, at: 0, data: {} });
  let { envelope } = await store.createEnvelope(env, [ev('created')]);
  for (let i = 1; i < n; i++)
    envelope = (await store.updateEnvelope(envelope, envelope.version, [ev('state_changed')])).envelope;
}

/** Reads SSE events from a response until `want` events arrived (waits on frames, not on time). */
async function readEvents(res: Response, want: number): Promise<EventSourceMessage[]> {
  const got: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (e) => got.push(e) });
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  while (got.length < want) {
    const { value, done } = await reader.read();
    if (done) break;
    parser.feed(dec.decode(value, { stream: true }));
  }
  await reader.cancel();
  return got;
}

describe('auth and errors', () => {
  it('refuses a missing or wrong key with a JSON error', async () => {
    for (const key of [null, 'wrong-key-123']) {
      const res = await api(key, '/v1/tasks');
      expect(res.status).toBe(401);
      expect(await res.json()).toEqual({
        error: { code: 'unauthenticated', message: expect.any(String), field: null },
      });
    }
  });

  it('names the field at fault', async () => {
    const res = await post(A, '/v1/tasks?wait=started', { target: 'nope', input: 1 });
    expect(res.status).toBe(400);
    expect((await res.json()).error).toMatchObject({ code: 'invalid_argument', field: 'target' });
  });

  it('serves healthz, metrics and the OpenAPI document without a key', async () => {
    expect((await api(null, '/healthz')).status).toBe(200);
    const metrics = await (await api(null, '/metrics')).text();
    expect(metrics).toContain('taskplane_orphans');
    expect(metrics).toContain('taskplane_requests_per_task');
    const doc = (await (await api(null, '/v1/openapi.json')).json()) as { paths: Record<string, unknown> };
    expect(Object.keys(doc.paths)).toContain('/v1/tasks/{id}/input');
  });
});

describe('tasks', () => {
  it('create is idempotent on Idempotency-Key; a different input is 409', async () => {
    const first = await post(
      A,
      '/v1/tasks?wait=started',
      { target: 'fake', input: { n: 1 } },
      { 'idempotency-key': 'k-1' },
    );
    expect(first.status).toBe(201);
    const t = (await first.json()) as { id: string; state: string; subscription: Record<string, unknown> };
    expect(t.subscription).not.toHaveProperty('tokenHash');
    const again = await post(
      A,
      '/v1/tasks?wait=started',
      { target: 'fake', input: { n: 1 } },
      { 'idempotency-key': 'k-1' },
    );
    expect(again.status).toBe(200);
    expect(((await again.json()) as { id: string }).id).toBe(t.id);
    const conflict = await post(
      A,
      '/v1/tasks?wait=started',
      { target: 'fake', input: { n: 2 } },
      { 'idempotency-key': 'k-1' },
    );
    expect(conflict.status).toBe(409);
    expect((await conflict.json()).error.field).toBe('idempotencyKey');
  });

  it('a body idempotencyKey that disagrees with the Idempotency-Key header is a 400 and creates nothing', async () => {
    const before = (await (await api(A, '/v1/tasks?limit=500')).json()) as { tasks: unknown[] };
    const res = await post(
      A,
      '/v1/tasks',
      { target: 'fake', input: 'x', idempotencyKey: 'body-key' },
      { 'idempotency-key': 'header-key' },
    );
    expect(res.status).toBe(400);
    const { error } = (await res.json()) as { error: { field: string; message: string } };
    expect(error.field).toBe('idempotencyKey');
    expect(error.message).toMatch(/header/);
    const after = (await (await api(A, '/v1/tasks?limit=500')).json()) as { tasks: unknown[] };
    expect(after.tasks).toHaveLength(before.tasks.length);
    // The same key in both places is one key.
    const same = await post(
      A,
      '/v1/tasks?wait=started',
      { target: 'fake', input: 'x', idempotencyKey: 'both-key' },
      { 'idempotency-key': 'both-key' },
    );
    expect(same.status).toBe(201);
    expect(((await same.json()) as { idempotencyKey: string }).idempotencyKey).toBe('both-key');
  });

  it('an unknown state filter names the valid states', async () => {
    const res = await api(A, '/v1/tasks?state=running,bogus');
    expect(res.status).toBe(400);
    const { error } = (await res.json()) as { error: { field: string; message: string } };
    expect(error.field).toBe('state');
    expect(error.message).toContain("'bogus'");
    expect(error.message).toContain('waiting_for_input');
  });

  it('lists with filters and cursor paging', async () => {
    for (let i = 0; i < 3; i++) await post(A, '/v1/tasks?wait=started', { target: 'fake', input: i });
    const page1 = (await (await api(A, '/v1/tasks?limit=2&target=fake&state=accepted,running')).json()) as {
      tasks: unknown[];
      nextCursor: string | null;
    };
    expect(page1.tasks).toHaveLength(2);
    expect(page1.nextCursor).toBeTruthy();
    const page2 = (await (
      await api(A, `/v1/tasks?limit=2&cursor=${encodeURIComponent(page1.nextCursor!)}`)
    ).json()) as { tasks: unknown[] };
    expect(page2.tasks.length).toBeGreaterThan(0);
    expect((await api(A, '/v1/tasks?state=bogus')).status).toBe(400);
  });

  it('answers input (409 on the wrong id) and streams events with Last-Event-ID resume', async () => {
    const t = (await (await post(A, '/v1/tasks?wait=started', { target: 'fake', input: 'ask' })).json()) as {
      id: string;
      remoteId: string;
    };
    const events = await api(A, `/v1/tasks/${t.id}/events`, { headers: { accept: 'text/event-stream' } });
    expect(events.headers.get('content-type')).toContain('text/event-stream');
    const firstEvents = readEvents(events, 3);
    remote.set(t.remoteId, 'waiting_for_input', {
      inputRequest: { requestId: 'q1', prompt: 'Which edition?' },
    });
    const seen = await firstEvents;
    expect(seen.map((e) => e.event)).toContain('input_requested');
    const wrong = await post(A, `/v1/tasks/${t.id}/input`, { requestId: 'nope', value: 'x' });
    expect(wrong.status).toBe(409);
    const ok = await post(A, `/v1/tasks/${t.id}/input`, { requestId: 'q1', value: 'second' });
    expect(ok.status).toBe(200);
    const lastId = seen[seen.length - 1]!.id!;
    const resumed = await api(A, `/v1/tasks/${t.id}/events`, { headers: { 'last-event-id': lastId } });
    const after = await readEvents(resumed, 1);
    expect(Number(after[0]!.id)).toBeGreaterThan(Number(lastId));
    const history = (await (await api(A, `/v1/tasks/${t.id}/history`)).json()) as {
      events: Array<{ type: string }>;
    };
    expect(history.events.map((e) => e.type)).toContain('input_answered');
  });

  it('the list carries the latest event seq, and /v1/events?after= or ?from=now tails without replaying the log', async () => {
    for (let i = 0; i < 3; i++)
      await post(A, '/v1/tasks?wait=started', { target: 'fake', input: `tail ${i}` });
    const list = (await (await api(A, '/v1/tasks?limit=1')).json()) as { eventSeq: number };
    expect(list.eventSeq).toBeGreaterThan(3);
    for (const query of [`after=${list.eventSeq}`, 'from=now']) {
      const stream = await api(A, `/v1/events?${query}`);
      const first = readEvents(stream, 1);
      const t = (await (
        await post(A, '/v1/tasks?wait=started', { target: 'fake', input: `new ${query}` })
      ).json()) as {
        id: string;
      };
      const [e] = await first;
      // The first event on the stream is the new task's, not the start of the log.
      expect(Number(e!.id)).toBeGreaterThan(list.eventSeq);
      expect((JSON.parse(e!.data) as { envelopeId: string }).envelopeId).toBe(t.id);
    }
  });

  it('latestEventSeq finds the highest seq of a long log with few reads', async () => {
    const { latestEventSeq } = await import('../../src/server/event-stream.ts');
    const store = new MemoryStore();
    expect(await latestEventSeq(store)).toBe(0);
    let reads = 0;
    const counted = new Proxy(store, {
      get: (t, p) =>
        p === 'listEvents'
          ? (q: Parameters<MemoryStore['listEvents']>[0]) => (reads++, t.listEvents(q))
          : Reflect.get(t, p),
    });
    for (const n of [1, 5, 1024, 1025, 3000]) {
      const s = new MemoryStore();
      await seedEvents(s, n);
      expect(await latestEventSeq(s)).toBe(n);
    }
    await seedEvents(store, 3000);
    reads = 0;
    expect(await latestEventSeq(counted)).toBe(3000);
    expect(reads).toBeLessThan(30);
  });

  it('cancel records intent', async () => {
    const t = (await (await post(A, '/v1/tasks?wait=started', { target: 'fake', input: 'c' })).json()) as {
      id: string;
    };
    const res = await post(A, `/v1/tasks/${t.id}/cancel`, {});
    expect(((await res.json()) as { state: string }).state).toBe('cancel_requested');
  });
});

describe('webhook ingress', () => {
  it('forged token → 401 and nothing recorded; duplicates absorbed and counted', async () => {
    const t = (await (await post(A, '/v1/tasks?wait=started', { target: 'fake', input: 'push' })).json()) as {
      id: string;
      remoteId: string;
    };
    const before = remote.pushes.length;
    remote.set(t.remoteId, 'succeeded');
    const push = remote.pushes[before]!;
    const path = push.url.slice(push.url.indexOf('/v1/'));
    const send = (token: string) =>
      fetch(server.url + path, {
        method: 'POST',
        body: push.body,
        headers: { authorization: `Bearer ${token}` },
      });
    const forged = await send('forged-token');
    expect(forged.status).toBe(401);
    // The forged delivery recorded nothing: the genuine one is still new (the stream may already have
    // delivered the state itself, hence observed or ignored, never duplicate).
    expect(['observed', 'ignored']).toContain(
      ((await (await send(push.token)).json()) as { status: string }).status,
    );
    expect(await (await send(push.token)).json()).toEqual({ status: 'duplicate' });
    expect(((await (await api(A, `/v1/tasks/${t.id}`)).json()) as { state: string }).state).toBe('succeeded');
    const signals = (await (await api(A, '/v1/signals')).json()) as {
      duplicatesAbsorbed: { webhook: number };
      webhooksRejected: number;
    };
    expect(signals.duplicatesAbsorbed.webhook).toBeGreaterThanOrEqual(1);
    // A refused delivery is nobody's until verified, so it is counted for operators only (/metrics).
    expect(signals.webhooksRejected).toBe(0);
    const metrics = await (await fetch(server.url + '/metrics')).text();
    expect(Number(/^taskplane_webhooks_rejected_total (\d+)/m.exec(metrics)?.[1])).toBeGreaterThanOrEqual(1);
  });

  it("a tenant's /v1/signals never counts another tenant's tasks", async () => {
    for (let i = 0; i < 3; i++)
      await post(B, '/v1/tasks?wait=started', { target: 'fake', input: `beta ${i}` });
    type S = { scope: { kind: string }; requests: { tasksTracked: number }; byState: Record<string, number> };
    const alpha = (await (await api(A, '/v1/signals')).json()) as S;
    const beta = (await (await api(B, '/v1/signals')).json()) as S;
    const count = async (key: string) =>
      ((await (await api(key, '/v1/tasks?limit=500')).json()) as { tasks: unknown[] }).tasks.length;
    expect(alpha.scope.kind).toBe('tenant');
    expect(alpha.requests.tasksTracked).toBe(await count(A));
    expect(beta.requests.tasksTracked).toBe(await count(B));
    expect(Object.values(beta.byState).reduce((a, b) => a + b, 0)).toBe(await count(B));
  });
});

describe('tenant isolation (property)', () => {
  it('no call of tenant B reads, lists, cancels or answers a task of tenant A', async () => {
    const owned = (await (
      await post(A, '/v1/tasks?wait=started', { target: 'fake', input: 'mine' })
    ).json()) as {
      id: string;
      version: number;
    };
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('get', 'cancel', 'input', 'history', 'events', 'list'),
        fc.string({ maxLength: 8 }),
        async (op, junk) => {
          const id = owned.id;
          let res: Response;
          if (op === 'get') res = await api(B, `/v1/tasks/${id}`);
          else if (op === 'cancel') res = await post(B, `/v1/tasks/${id}/cancel`, {});
          else if (op === 'input')
            res = await post(B, `/v1/tasks/${id}/input`, { requestId: junk || 'x', value: junk });
          else if (op === 'history') res = await api(B, `/v1/tasks/${id}/history`);
          else if (op === 'events') res = await api(B, `/v1/tasks/${id}/events`);
          else {
            const list = (await (await api(B, '/v1/tasks?limit=500')).json()) as {
              tasks: Array<{ id: string }>;
            };
            expect(list.tasks.map((t) => t.id)).not.toContain(id);
            return;
          }
          expect(res.status).toBe(404);
          await res.body?.cancel();
          const mine = (await (await api(A, `/v1/tasks/${id}`)).json()) as { version: number; state: string };
          expect(mine.state).not.toBe('cancel_requested');
        },
      ),
      { numRuns: 40 },
    );
  });
});

describe('first start without keys', () => {
  it('creates one key, stores only its hash, and hands it out once', async () => {
    const store = new MemoryStore();
    const opts = {
      port: 0,
      db: store,
      dashboard: false,
      defaultMetrics: false,
      logger: pino({ level: 'silent' }),
    } as const;
    const s1 = await startServer(opts);
    expect(s1.generatedApiKey).toMatch(/^tp_/);
    expect(s1.dashboardUrl).toContain(`#key=${s1.generatedApiKey}`);
    expect(
      (await fetch(`${s1.url}/v1/tasks`, { headers: { authorization: `Bearer ${s1.generatedApiKey}` } }))
        .status,
    ).toBe(200);
    await s1.close();
    expect(await store.getSetting('server.generatedApiKey')).not.toContain(s1.generatedApiKey!);
    const s2 = await startServer(opts);
    expect(s2.generatedApiKey).toBeNull();
    expect(
      (await fetch(`${s2.url}/v1/tasks`, { headers: { authorization: `Bearer ${s1.generatedApiKey}` } }))
        .status,
    ).toBe(200);
    await s2.close();
  });
});
