import { afterEach, describe, expect, it } from 'vitest';
import { VirtualClock } from '../../src/core/clock.ts';
import { TaskplaneError } from '../../src/core/errors.ts';
import { TenantLimits } from '../../src/server/tenant-limits.ts';
import { untilStored } from '../support/until-stored.ts';
import { KEY_A, KEY_B, endlessBody, planeApp } from './plane-app-fixture.ts';

/**
 * One tenant's share of the plane API: writes per second (a token bucket on the clock), creates in flight
 * and open SSE streams, each per tenant. Past a limit the answer is 429 `resource_exhausted` with
 * Retry-After and the limit's name, nothing is stored, and the other tenant is served as before.
 */
type App = Awaited<ReturnType<typeof planeApp>>;
const apps: App[] = [];
afterEach(async () => {
  for (const app of apps.splice(0)) await app.close();
});

async function start(o: Parameters<typeof planeApp>[0]): Promise<App> {
  const app = await planeApp(o);
  apps.push(app);
  return app;
}

const headers = (key: string) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' });
const create = (app: App, key: string, input: unknown = 'x') =>
  app.fetch('/v1/tasks', {
    method: 'POST',
    headers: headers(key),
    body: JSON.stringify({ target: 'fake', input }),
  });

async function errorOf(res: Response) {
  return ((await res.json()) as { error: { code: string; message: string; field: string | null } }).error;
}

/** Waits (on event-loop turns, not time) until a body stream was pulled `n` times. */
async function untilPulled(pulled: () => number, n: number): Promise<void> {
  for (let turn = 0; pulled() < n; turn++) {
    if (turn > 1000) throw new Error(`body pulled ${pulled()} times, expected ${n}`);
    await new Promise((r) => setImmediate(r));
  }
  // A few more turns: a pull beyond n would show now.
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
}

async function tasksOf(app: App, tenant: string): Promise<number> {
  return (await app.store.listEnvelopes({ tenant })).items.length;
}

describe('per-tenant write rate', () => {
  it('past the burst a tenant gets 429 with Retry-After until its bucket refills; the other tenant is served', async () => {
    const clock = new VirtualClock(Date.parse('2026-12-01T00:00:00Z'));
    const app = await start({
      limitsClock: clock,
      limits: { writesPerSecondPerTenant: 2, writeBurstPerTenant: 3 },
    });
    for (let i = 0; i < 3; i++) expect((await create(app, KEY_A, i)).status).toBe(202);
    const refused = await create(app, KEY_A, 'over');
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('1');
    const error = await errorOf(refused);
    expect(error.code).toBe('resource_exhausted');
    expect(error.message).toMatch(/writesPerSecondPerTenant/);
    expect(await tasksOf(app, 'alpha')).toBe(3);
    // Cancels and answers are writes too.
    const cancel = await app.fetch('/v1/tasks/tsk_x/cancel', {
      method: 'POST',
      headers: headers(KEY_A),
      body: '{}',
    });
    expect(cancel.status).toBe(429);
    // Reads are not.
    expect((await app.fetch('/v1/tasks', { headers: headers(KEY_A) })).status).toBe(200);
    // The other tenant has its own bucket.
    expect((await create(app, KEY_B, 'beta')).status).toBe(202);
    // Half a second refills one token at 2 per second.
    await clock.advance(500);
    const refilled = await create(app, KEY_A, 'refilled');
    expect(refilled.status).toBe(202);
    expect((await create(app, KEY_A, 'again')).status).toBe(429);
    expect(await tasksOf(app, 'alpha')).toBe(4);
    // Its start runs behind the answer: let it reach the remote before the plane stops.
    const id = ((await refilled.json()) as { id: string }).id;
    await untilStored(
      app.store,
      id,
      async () => (await app.store.getEnvelope(id))?.remoteId != null,
      'start',
    );
  });
});

describe('per-tenant creates in flight', () => {
  it('one create more than the limit is refused while the others are handled, and taken once one ends', async () => {
    const app = await start({ limits: { maxCreatesInFlightPerTenant: 1 } });
    // A create whose body is still arriving holds its slot.
    let finish!: () => void;
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('{"target":"fake",'));
        finish = () => {
          controller.enqueue(new TextEncoder().encode('"input":"slow"}'));
          controller.close();
        };
      },
    });
    const slow = app.fetch('/v1/tasks', { method: 'POST', headers: headers(KEY_A), body });
    const refused = await create(app, KEY_A, 'second');
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('1');
    const error = await errorOf(refused);
    expect(error.code).toBe('resource_exhausted');
    expect(error.message).toMatch(/maxCreatesInFlightPerTenant/);
    expect((await create(app, KEY_B, 'beta')).status).toBe(202);
    finish();
    expect((await slow).status).toBe(202);
    expect((await create(app, KEY_A, 'third')).status).toBe(202);
    expect(await tasksOf(app, 'alpha')).toBe(2);
  });

  it('a refused create frees its slot too', async () => {
    const app = await start({ limits: { maxCreatesInFlightPerTenant: 1 } });
    const bad = await app.fetch('/v1/tasks', { method: 'POST', headers: headers(KEY_A), body: '{not json' });
    expect(bad.status).toBe(400);
    expect((await create(app, KEY_A)).status).toBe(202);
  });
});

describe('per-tenant body rate', () => {
  it("a tenant past its body rate has its body read more slowly, not refused; the other tenant's bodies are read at once", async () => {
    const clock = new VirtualClock(Date.parse('2026-12-01T00:00:00Z'));
    // 1,000 bytes a second, a bucket of 2,000: a 5,000-byte body takes its first 2,000 bytes at once.
    const app = await start({ limitsClock: clock, limits: { bodyBytesPerSecondPerTenant: 1000 } });
    const text = JSON.stringify({ target: 'fake', input: 'x'.repeat(4970) });
    const chunks = Array.from({ length: Math.ceil(text.length / 1000) }, (_, i) =>
      new TextEncoder().encode(text.slice(i * 1000, (i + 1) * 1000)),
    );
    expect(chunks).toHaveLength(5);
    let pulled = 0;
    const body = new ReadableStream<Uint8Array>(
      {
        pull(controller) {
          const next = chunks[pulled++];
          if (next) controller.enqueue(next);
          else controller.close();
        },
      },
      { highWaterMark: 0 },
    );
    let answered = false;
    const paced = Promise.resolve(app.fetch('/v1/tasks', { method: 'POST', headers: headers(KEY_A), body }));
    void paced.then(() => (answered = true));
    // Two chunks fill the bucket; the third puts the tenant 1,000 bytes in debt: one second's wait.
    await untilPulled(() => pulled, 3);
    expect(answered).toBe(false);
    expect((await create(app, KEY_B, 'beta')).status).toBe(202);
    await clock.advance(999);
    expect(pulled).toBe(3);
    await clock.advance(1);
    await untilPulled(() => pulled, 4);
    await clock.advance(1000);
    await untilPulled(() => pulled, 5);
    await clock.advance(1000);
    expect((await paced).status).toBe(202);
    expect(await tasksOf(app, 'alpha')).toBe(1);
  });
});

describe('per-tenant open streams', () => {
  it('a stream past the limit is refused; one that ends frees its slot', async () => {
    const app = await start({ limits: { maxStreamsPerTenant: 2 } });
    const open = (key: string, path = '/v1/events') => app.fetch(path, { headers: headers(key) });
    const first = await open(KEY_A);
    const second = await open(KEY_A);
    expect([first.status, second.status]).toEqual([200, 200]);
    const refused = await open(KEY_A);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('1');
    const error = await errorOf(refused);
    expect(error.code).toBe('resource_exhausted');
    expect(error.message).toMatch(/maxStreamsPerTenant/);
    // A task's stream counts against the same limit.
    const id = ((await (await create(app, KEY_A)).json()) as { id: string }).id;
    expect((await open(KEY_A, `/v1/tasks/${id}/events`)).status).toBe(429);
    const beta = await open(KEY_B);
    expect(beta.status).toBe(200);
    await first.body!.cancel();
    // The slot is given back when the stream's loop ends, after the cancel reaches it.
    let again = await open(KEY_A);
    for (let i = 0; again.status === 429 && i < 100; i++) {
      await new Promise((r) => setImmediate(r));
      again = await open(KEY_A);
    }
    expect(again.status).toBe(200);
    for (const res of [second, beta, again]) await res.body!.cancel();
  });
});

describe('a request refused before its body is read closes the connection', () => {
  it('401, 404 and 429 with a body still arriving answer with Connection: close and read almost none of it', async () => {
    const app = await start({ limits: { maxCreatesInFlightPerTenant: 1 } });
    const cases: Array<[number, string, Record<string, string>]> = [
      [401, '/v1/tasks', { 'content-type': 'application/json' }],
      [401, '/v1/tasks', headers('wrong-key-0123456789')],
      [404, '/v1/nope', headers(KEY_A)],
    ];
    for (const [status, path, h] of cases) {
      const { body, pulled } = endlessBody(new Uint8Array(1024).fill(0x20));
      const res = await app.fetch(path, { method: 'POST', headers: h, body });
      expect(res.status, path).toBe(status);
      expect(res.headers.get('connection'), `${status} ${path}`).toBe('close');
      expect(pulled(), path).toBeLessThan(5);
    }
    // 429: one create holds the only slot, the next is refused before its body is read.
    const held = endlessBody(new Uint8Array(1024).fill(0x20));
    const slow = app.fetch('/v1/tasks', { method: 'POST', headers: headers(KEY_A), body: held.body });
    const { body, pulled } = endlessBody(new Uint8Array(1024).fill(0x20));
    const res = await app.fetch('/v1/tasks', { method: 'POST', headers: headers(KEY_A), body });
    expect(res.status).toBe(429);
    expect(res.headers.get('connection')).toBe('close');
    expect(pulled()).toBeLessThan(5);
    expect((await slow).status).toBe(413);
  });

  it('a refusal after the whole body was read keeps the connection', async () => {
    const app = await start({});
    const res = await app.fetch('/v1/tasks/tsk_nope/cancel', {
      method: 'POST',
      headers: headers(KEY_A),
      body: '{}',
    });
    expect(res.status).toBe(404);
    expect(res.headers.get('connection')).toBeNull();
  });
});

describe('limit options', () => {
  it('a value that is not a positive number is a configuration error naming the field', () => {
    const clock = new VirtualClock(0);
    expect(() => new TenantLimits(clock, { writesPerSecondPerTenant: 0 })).toThrow(
      /limits\.writesPerSecondPerTenant: must be a number > 0/,
    );
    expect(() => new TenantLimits(clock, { maxStreamsPerTenant: 1.5 })).toThrow(
      /limits\.maxStreamsPerTenant: must be an integer >= 1/,
    );
    try {
      new TenantLimits(clock, { maxCreatesInFlightPerTenant: -1 });
    } catch (err) {
      expect((err as TaskplaneError).code).toBe('config');
    }
    expect(new TenantLimits(clock).config).toEqual({
      maxCreatesInFlightPerTenant: 64,
      fairCreatesInFlightPerTenant: 2,
      writesPerSecondPerTenant: 50,
      writeBurstPerTenant: 100,
      refusalsPerSecondPerTenant: 5,
      refusalBurstPerTenant: 20,
      schemaCompileMsPerSecondPerTenant: 200,
      schemaCompileBurstMsPerTenant: 2000,
      maxStreamsPerTenant: 500,
      streamSendsPerSecondPerTenant: 400,
      bodyBytesPerSecondPerTenant: 2 * 1024 * 1024,
    });
    expect(() => new TenantLimits(clock, { fairCreatesInFlightPerTenant: 0.5 })).toThrow(
      /limits\.fairCreatesInFlightPerTenant: must be an integer >= 1/,
    );
    expect(() => new TenantLimits(clock, { refusalsPerSecondPerTenant: -1 })).toThrow(
      /limits\.refusalsPerSecondPerTenant: must be a number > 0/,
    );
    expect(() => new TenantLimits(clock, { bodyBytesPerSecondPerTenant: Number.NaN })).toThrow(
      /limits\.bodyBytesPerSecondPerTenant: must be a number > 0/,
    );
  });
});
