import pino from 'pino';
import { SystemClock } from '../../src/core/clock.ts';
import { CryptoRandom } from '../../src/core/random.ts';
import { Plane } from '../../src/plane/plane.ts';
import { parseApiKeys } from '../../src/server/api-keys.ts';
import { createServerApp, type ServerAppOptions } from '../../src/server/server-app.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import type { Store } from '../../src/store/store.ts';
import { FakeRemote } from '../plane/fake-remote.ts';

export const KEY_A = 'key-aaaaaaaa';
export const KEY_B = 'key-bbbbbbbb';

export type PlaneAppOverrides = Partial<Pick<ServerAppOptions, 'maxBodyBytes' | 'maxWebhookBytes' | 'maxJsonDepth'>>;

/**
 * The plane's HTTP app served in process (`app.fetch`, no socket) over a memory store and a fake remote
 * target `fake`, with tenants `alpha` (KEY_A) and `beta` (KEY_B).
 */
export async function planeApp(overrides: PlaneAppOverrides = {}, store: Store = new MemoryStore()) {
  const clock = new SystemClock();
  const remote = new FakeRemote(clock);
  const connector = remote.connector('fake');
  const plane = new Plane({
    clock,
    random: new CryptoRandom(),
    store,
    connectors: (t) => (t === 'fake' ? connector : undefined),
    options: { publicUrl: 'http://plane.test' },
  });
  await plane.start();
  const shutdown = new AbortController();
  const app = createServerApp({
    plane,
    store,
    keys: parseApiKeys(`alpha:${KEY_A},beta:${KEY_B}`, 'test'),
    logger: pino({ level: 'silent' }),
    signal: shutdown.signal,
    defaultMetrics: false,
    ...overrides,
  });
  const fetch = (path: string, init: RequestInit = {}) =>
    app.fetch(new Request(`http://plane.test${path}`, { duplex: 'half', ...init } as RequestInit));
  return {
    app,
    fetch,
    store,
    remote,
    plane,
    async close() {
      shutdown.abort();
      await plane.stop();
      await store.close();
    },
  };
}

/** A body that yields `chunk` forever, counting how many chunks were pulled from it. */
export function endlessBody(chunk: Uint8Array): { body: ReadableStream<Uint8Array>; pulled: () => number } {
  let pulled = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      pulled++;
      controller.enqueue(chunk);
    },
  });
  return { body, pulled: () => pulled };
}

/** JSON text nested `depth` levels deep in arrays. */
export const deepArray = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);
