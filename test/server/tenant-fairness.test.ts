import { afterEach, describe, expect, it } from 'vitest';
import { SystemClock, VirtualClock } from '../../src/core/clock.ts';
import { TaskplaneError } from '../../src/core/errors.ts';
import { TenantLimits } from '../../src/server/tenant-limits.ts';
import { WorkerSchemaCompiler, type CompileBudget } from '../../src/server/worker-schema-compiler.ts';
import { KEY_A, KEY_B, planeApp } from './plane-app-fixture.ts';

/**
 * Tenants take turns on the plane: a tenant past its share of creates waits (unread) or gets a cheap 429
 * while another tenant's request is admitted; a tenant refused again and again waits at the door before
 * anything of its next request is read; schema compile time and stream sends are shared per tenant.
 * Time is a VirtualClock or event-loop turns, never the wall clock.
 */
type App = Awaited<ReturnType<typeof planeApp>>;
const apps: App[] = [];
const compilers: WorkerSchemaCompiler[] = [];
afterEach(async () => {
  for (const app of apps.splice(0)) await app.close();
  for (const c of compilers.splice(0)) await c.close();
});

async function start(o: Parameters<typeof planeApp>[0]): Promise<App> {
  const app = await planeApp(o);
  apps.push(app);
  return app;
}

const headers = (key: string) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' });
const create = (app: App, key: string, extra: Record<string, unknown> = {}) =>
  app.fetch('/v1/tasks', {
    method: 'POST',
    headers: headers(key),
    body: JSON.stringify({ target: 'fake', input: 'x', ...extra }),
  });

/** A create whose body arrives in two parts, the second when `finish` is called; counts its pulls. */
function slowCreate(app: App, key: string) {
  let pulled = 0;
  let finish!: () => void;
  const done = new Promise<void>((r) => (finish = r));
  const parts = ['{"target":"fake",', '"input":"slow"}'];
  const body = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        const part = parts[pulled++];
        if (part === undefined) return controller.close();
        if (pulled === 2) await done;
        controller.enqueue(new TextEncoder().encode(part));
      },
    },
    { highWaterMark: 0 },
  );
  const res = Promise.resolve(app.fetch('/v1/tasks', { method: 'POST', headers: headers(key), body }));
  return { res, finish, pulled: () => pulled };
}

/** A promise's settlement as a flag, to see whether it is still pending. */
function settled(p: Promise<unknown> | unknown): () => boolean {
  let done = false;
  void Promise.resolve(p).then(
    () => (done = true),
    () => (done = true),
  );
  return () => done;
}

/** Event-loop turns (not time): whatever can run without the clock has run. */
async function turns(n = 50): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
}

async function errorOf(res: Response) {
  return ((await res.json()) as { error: { code: string; message: string } }).error;
}

describe('creates take turns between tenants', () => {
  it('a tenant past its share waits unread while another holds creates, one more gets 429, and the other tenant is admitted', async () => {
    const app = await start({ limits: { fairCreatesInFlightPerTenant: 1, maxCreatesInFlightPerTenant: 2 } });
    // Alone, a tenant is not held to its share.
    const a1 = slowCreate(app, KEY_A);
    await turns();
    expect(a1.pulled()).toBeGreaterThan(0);
    expect((await create(app, KEY_A)).status).toBe(202);

    // Another tenant is admitted while alpha holds a create.
    const b1 = slowCreate(app, KEY_B);
    await turns();
    expect(b1.pulled()).toBeGreaterThan(0);

    // Now alpha is at its share of one: its next create waits its turn, its body not read at all.
    const a3 = slowCreate(app, KEY_A);
    const a3Answered = settled(a3.res);
    await turns();
    expect(a3.pulled()).toBe(0);
    expect(a3Answered()).toBe(false);

    // One more than alpha may hold (running and waiting): a cheap 429 naming the limit.
    const over = await create(app, KEY_A);
    expect(over.status).toBe(429);
    expect(over.headers.get('retry-after')).toBe('1');
    expect((await errorOf(over)).message).toMatch(/maxCreatesInFlightPerTenant/);

    // Alpha's first create ends: its waiting one takes the turn and is read.
    a1.finish();
    expect((await a1.res).status).toBe(202);
    await turns();
    expect(a3.pulled()).toBeGreaterThan(0);
    a3.finish();
    expect((await a3.res).status).toBe(202);
    b1.finish();
    expect((await b1.res).status).toBe(202);
    expect((await app.store.listEnvelopes({ tenant: 'alpha' })).items).toHaveLength(3);
  });

  it('waiting creates start once the other tenant is done', async () => {
    const app = await start({ limits: { fairCreatesInFlightPerTenant: 1 } });
    const b1 = slowCreate(app, KEY_B);
    const a1 = slowCreate(app, KEY_A);
    const a2 = slowCreate(app, KEY_A);
    await turns();
    expect(a1.pulled()).toBeGreaterThan(0);
    expect(a2.pulled()).toBe(0);
    b1.finish();
    expect((await b1.res).status).toBe(202);
    // Alpha is alone now: its second create runs beside its first.
    await turns();
    expect(a2.pulled()).toBeGreaterThan(0);
    a1.finish();
    a2.finish();
    expect((await a1.res).status).toBe(202);
    expect((await a2.res).status).toBe(202);
  });

  it('a create that waits for the remote takes no turn', async () => {
    const limits = new TenantLimits(new VirtualClock(0), { fairCreatesInFlightPerTenant: 1 });
    const releaseB = limits.enterCreate('beta') as () => void;
    const waiting = limits.enterCreate('alpha', false);
    expect(typeof waiting).toBe('function');
    const fair = limits.enterCreate('alpha');
    expect(typeof fair).toBe('function');
    const third = limits.enterCreate('alpha');
    expect(third).toBeInstanceOf(Promise);
    releaseB();
    (fair as () => void)();
    expect(typeof (await third)).toBe('function');
  });
});

describe('a tenant refused again and again waits at the door', () => {
  it('past its refusal burst, its next request is held unread until the bucket refills; the other tenant is served at once', async () => {
    const clock = new VirtualClock(Date.parse('2026-12-01T00:00:00Z'));
    const app = await start({
      limitsClock: clock,
      limits: { refusalsPerSecondPerTenant: 2, refusalBurstPerTenant: 2 },
    });
    // Three refusals (bad JSON, 400): the third puts alpha half a second in debt.
    for (let i = 0; i < 3; i++) {
      const bad = await app.fetch('/v1/tasks', {
        method: 'POST',
        headers: headers(KEY_A),
        body: '{not json',
      });
      expect(bad.status).toBe(400);
    }
    const held = slowCreate(app, KEY_A);
    const heldAnswered = settled(held.res);
    const read = settled(Promise.resolve(app.fetch('/v1/tasks', { headers: headers(KEY_A) })));
    await turns();
    expect(held.pulled()).toBe(0);
    expect(heldAnswered()).toBe(false);
    expect(read()).toBe(false);
    // Beta is not held.
    expect((await create(app, KEY_B)).status).toBe(202);

    await clock.advance(499);
    await turns();
    expect(held.pulled()).toBe(0);
    await clock.advance(1);
    await turns();
    expect(held.pulled()).toBeGreaterThan(0);
    expect(read()).toBe(true);
    held.finish();
    expect((await held.res).status).toBe(202);
  });

  it('a 429 counts as a refusal too, and a refused webhook sender waits at its target’s door, not the tenants', async () => {
    const clock = new VirtualClock(Date.parse('2026-12-01T00:00:00Z'));
    const app = await start({
      limitsClock: clock,
      limits: { refusalsPerSecondPerTenant: 1, refusalBurstPerTenant: 1, writeBurstPerTenant: 1 },
    });
    expect((await create(app, KEY_A)).status).toBe(202);
    expect((await create(app, KEY_A)).status).toBe(429);
    expect((await create(app, KEY_A)).status).toBe(429);
    const heldCreate = settled(create(app, KEY_A));
    await turns();
    expect(heldCreate()).toBe(false);

    const webhook = () =>
      app.fetch('/v1/webhooks/a2a/fake?envelope=env_x', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-a2a-notification-token': 'wrong' },
        body: '{}',
      });
    expect((await webhook()).status).toBe(401);
    expect((await webhook()).status).toBe(401);
    const heldWebhook = settled(webhook());
    await turns();
    expect(heldWebhook()).toBe(false);
    // Beta is held by neither.
    expect((await create(app, KEY_B)).status).toBe(202);
    await clock.advance(2000);
    await turns();
    expect(heldCreate()).toBe(true);
    expect(heldWebhook()).toBe(true);
  });

  it('the wait is at most one bucket however many refusals, and past 64 held requests the next is refused at once', async () => {
    const clock = new VirtualClock(0);
    const limits = new TenantLimits(clock, { refusalsPerSecondPerTenant: 10, refusalBurstPerTenant: 5 });
    for (let i = 0; i < 100; i++) limits.refused('alpha');
    const held = Array.from({ length: 64 }, () => limits.admit('alpha'));
    expect(held.every((p) => p instanceof Promise)).toBe(true);
    let refused: unknown;
    try {
      void limits.admit('alpha');
    } catch (err) {
      refused = err;
    }
    expect((refused as TaskplaneError).code).toBe('resource_exhausted');
    expect((refused as TaskplaneError).message).toMatch(/refusalsPerSecondPerTenant/);
    expect(limits.admit('beta')).toBeUndefined();
    const done = settled(Promise.all(held));
    await clock.advance(499);
    expect(done()).toBe(false);
    await clock.advance(1);
    await turns(5);
    expect(done()).toBe(true);
    expect(limits.admit('alpha')).toBeUndefined();
  });
});

describe('schema compile time is shared among tenants', () => {
  let unique = 0;
  const schema = () => ({ type: 'object', $comment: `tenant-fairness ${++unique}-${Date.now()}` });

  it('a tenant past its compile time gets 429 for a new schema, not for one compiled before; the other tenant compiles', async () => {
    const compiler = new WorkerSchemaCompiler({ clock: new SystemClock() });
    compilers.push(compiler);
    const clock = new VirtualClock(Date.parse('2026-12-01T00:00:00Z'));
    const app = await start({
      limitsClock: clock,
      schemaCompiler: compiler,
      // One millisecond of compiling in the bucket: any real compile puts the tenant in debt.
      limits: { schemaCompileMsPerSecondPerTenant: 1, schemaCompileBurstMsPerTenant: 1 },
    });
    const first = schema();
    expect((await create(app, KEY_A, { acceptance: { schema: first } })).status).toBe(202);
    const refused = await create(app, KEY_A, { acceptance: { schema: schema() } });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect((await errorOf(refused)).message).toMatch(/schemaCompileMsPerSecondPerTenant/);
    // The schema compiled before costs nothing; creates without a schema go on.
    expect((await create(app, KEY_A, { acceptance: { schema: first } })).status).toBe(202);
    expect((await create(app, KEY_A)).status).toBe(202);
    expect((await create(app, KEY_B, { acceptance: { schema: schema() } })).status).toBe(202);
  });

  it("the worker takes owners' compiles in turn and charges each its time", async () => {
    const charged: Array<[string, number]> = [];
    const budget: CompileBudget = {
      admitCompile: (owner) => {
        if (owner === 'gamma') throw new TaskplaneError('resource_exhausted', 'over');
      },
      chargeCompile: (owner, ms) => charged.push([owner, ms]),
    };
    const compiler = new WorkerSchemaCompiler({ clock: new SystemClock() });
    compilers.push(compiler);
    compiler.useBudget(budget);
    const order: string[] = [];
    // Queued before the worker has loaded: the order they run in is the turns' order.
    const jobs = [
      ['alpha', 1],
      ['alpha', 2],
      ['alpha', 3],
      ['beta', 1],
    ].map(([owner, n]) =>
      compiler.compile(schema(), 5000, owner as string).then(() => order.push(`${owner}${n}`)),
    );
    await Promise.all(jobs);
    expect(order).toEqual(['alpha1', 'beta1', 'alpha2', 'alpha3']);
    // Each compile is charged twice: its time in the worker, and turning its code into a function here.
    expect(charged.filter(([owner]) => owner === 'alpha')).toHaveLength(6);
    expect(charged.filter(([owner]) => owner === 'beta')).toHaveLength(2);
    expect(charged.every(([, ms]) => ms >= 0)).toBe(true);
    await expect(compiler.compile(schema(), 5000, 'gamma')).rejects.toThrow('over');
  });
});

describe("a tenant's streams share its send rate", () => {
  it("past the rate, its streams' sends are spread out evenly, not made in one turn; another tenant's stream sends at once", async () => {
    const clock = new VirtualClock(Date.parse('2026-12-01T00:00:00Z'));
    // 10 sends a second, a burst of one: the first stream sends at once, the next 100 ms later, …
    const app = await start({ clock, limitsClock: clock, limits: { streamSendsPerSecondPerTenant: 10 } });
    const open = async (key: string) => {
      const res = await app.fetch('/v1/events?from=now', { headers: headers(key) });
      expect(res.status).toBe(200);
      const reader = res.body!.getReader();
      let got = 0;
      const pump = (): void =>
        void reader.read().then((r) => {
          if (r.done) return;
          got++;
          pump();
        });
      pump();
      return { got: () => got, cancel: () => reader.cancel() };
    };
    const streams = [await open(KEY_A), await open(KEY_A), await open(KEY_A)];
    const beta = await open(KEY_B);
    const sent = () => streams.filter((st) => st.got() > 0).length;

    expect((await create(app, KEY_A)).status).toBe(202);
    expect((await create(app, KEY_B)).status).toBe(202);
    await turns();
    expect(sent()).toBe(1);
    expect(beta.got()).toBeGreaterThan(0);
    await clock.advance(99);
    await turns();
    expect(sent()).toBe(1);
    await clock.advance(1);
    await turns();
    expect(sent()).toBe(2);
    await clock.advance(100);
    await turns();
    expect(sent()).toBe(3);
    for (const st of [...streams, beta]) await st.cancel();
  });
});
