import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createParser } from 'eventsource-parser';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import type { EventQuery, Store } from '../../src/store/store.ts';
import { KEY_A, KEY_B, planeApp } from './plane-app-fixture.ts';

/** Counts the event-log reads each tenant's streams make: a woken stream reads the log once. */
class CountingStore {
  readonly reads = new Map<string, number>();
  private waiters: Array<{ tenant: string; n: number; resolve: () => void }> = [];

  readonly store: Store;

  constructor(inner: MemoryStore) {
    this.store = new Proxy(inner, {
      get: (target, prop) => {
        if (prop === 'listEvents')
          return (q: EventQuery) => {
            if (q.tenant !== undefined) this.count(q.tenant);
            return target.listEvents(q);
          };
        const v = Reflect.get(target, prop, target) as unknown;
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
  }

  private count(tenant: string) {
    const n = (this.reads.get(tenant) ?? 0) + 1;
    this.reads.set(tenant, n);
    this.waiters = this.waiters.filter((w) =>
      w.tenant === tenant && n >= w.n ? (w.resolve(), false) : true,
    );
  }

  readsOf(tenant: string): number {
    return this.reads.get(tenant) ?? 0;
  }

  /** Resolves once `tenant`'s streams have read the log `n` times in all. */
  reached(tenant: string, n: number): Promise<void> {
    if (this.readsOf(tenant) >= n) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ tenant, n, resolve }));
  }
}

type App = Awaited<ReturnType<typeof planeApp>>;
let app: App;
let counting: CountingStore;

beforeAll(async () => {
  counting = new CountingStore(new MemoryStore());
  app = await planeApp({ store: counting.store });
});
afterAll(async () => {
  await app?.close();
});

/** Opens a live stream; resolves `first` with the first event's type once one arrives. */
function open(key: string, path: string) {
  const controller = new AbortController();
  const response = Promise.resolve(
    app.fetch(path, {
      headers: { authorization: `Bearer ${key}` },
      signal: controller.signal,
    }),
  );
  // The stream is served (its loop has started) once the response is back.
  const ready = response.then(() => undefined);
  const first = (async () => {
    const res = await response;
    const reader = res.body!.getReader();
    const dec = new TextDecoder();
    let got: string | null = null;
    const parser = createParser({ onEvent: (e) => (got ??= e.event ?? 'message') });
    while (got === null) {
      const { value, done } = await reader.read();
      if (done) return null;
      parser.feed(dec.decode(value, { stream: true }));
    }
    await reader.cancel();
    return got;
  })();
  return { ready, first, close: () => controller.abort() };
}

const create = (key: string, input: unknown) =>
  app.fetch('/v1/tasks', {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ target: 'fake', input }),
  });

/** Lets every queued wake-up and the reads it starts run (no timers involved). */
const settle = async () => {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
};

describe('SSE fan-out', () => {
  it("a change for tenant B wakes none of tenant A's many open streams; A's own change reaches them", async () => {
    const N = 300;
    const streamsA = Array.from({ length: N }, () => open(KEY_A, '/v1/events?from=now'));
    await Promise.all(streamsA.map((s) => s.ready));
    await counting.reached('alpha', 1); // the streams' first read of the log (shared: same position)
    await settle();
    const before = counting.readsOf('alpha');

    const streamB = open(KEY_B, '/v1/events?from=now');
    await counting.reached('beta', 1);
    expect((await create(KEY_B, { n: 1 })).status).toBe(202);
    expect(await streamB.first).toBe('created');
    await settle();
    expect(counting.readsOf('alpha') - before).toBe(0);

    const beforeOwn = counting.readsOf('alpha');
    expect((await create(KEY_A, { n: 2 })).status).toBe(202);
    const firsts = await Promise.all(streamsA.map((s) => s.first));
    expect(firsts.every((t) => t === 'created')).toBe(true);
    await settle();
    // Woken together at the same position, the streams share their reads of the log.
    expect(counting.readsOf('alpha') - beforeOwn).toBeLessThan(10);
    streamB.close();
    for (const s of streamsA) s.close();
  });

  it("a task stream wakes only on its own task's changes", async () => {
    const one = (await (await create(KEY_A, { n: 3 })).json()) as { id: string };
    const other = (await (await create(KEY_A, { n: 4 })).json()) as { id: string };
    await settle();
    const streams = Array.from({ length: 50 }, () => open(KEY_A, `/v1/tasks/${one.id}/events?from=now`));
    const base = counting.readsOf('alpha');
    await Promise.all(streams.map((s) => s.ready));
    await counting.reached('alpha', base + 1);
    await settle();
    const before = counting.readsOf('alpha');
    await app.plane.cancel('alpha', other.id, null);
    await settle();
    expect(counting.readsOf('alpha') - before).toBe(0);
    await app.plane.cancel('alpha', one.id, null);
    const firsts = await Promise.all(streams.map((s) => s.first));
    expect(firsts.every((t) => t !== null)).toBe(true);
    for (const s of streams) s.close();
  });
});
