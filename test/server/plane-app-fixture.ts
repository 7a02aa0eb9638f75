import { setMaxListeners } from 'node:events';
import pino, { type Logger } from 'pino';
import { SystemClock, type Clock } from '../../src/core/clock.ts';
import type { Connector } from '../../src/connectors/connector.ts';
import { CryptoRandom } from '../../src/core/random.ts';
import type { SchemaCompiler } from '../../src/plane/acceptance.ts';
import { Plane } from '../../src/plane/plane.ts';
import type { PlaneOptions } from '../../src/plane/options.ts';
import type { VerifierPort } from '../../src/plane/verifier.ts';
import { KeyRing, seedApiKeys } from '../../src/server/api-keys.ts';
import { StreamTickets } from '../../src/server/stream-tickets.ts';
import { createServerApp, type ServerAppOptions } from '../../src/server/server-app.ts';
import type { TenantLimitsOptions } from '../../src/server/tenant-limits.ts';
import { WorkerSchemaCompiler } from '../../src/server/worker-schema-compiler.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import type { Store } from '../../src/store/store.ts';
import { FakeRemote } from '../plane/fake-remote.ts';

export const KEY_A = 'key-aaaaaaaaaaaaaaaa';
export const KEY_B = 'key-bbbbbbbbbbbbbbbb';

export interface PlaneAppOptions {
  limits?: Partial<Pick<ServerAppOptions, 'maxBodyBytes' | 'maxWebhookBytes' | 'maxJsonDepth'>> &
    TenantLimitsOptions;
  /** The clock of the per-tenant write rate (server-app.ts); @default a SystemClock */
  limitsClock?: Clock;
  store?: Store;
  /** @default a SystemClock; a VirtualClock keeps the engine's timed work (polls, retries) from running. */
  clock?: Clock;
  /** Targets beside `fake`. */
  connectors?: Record<string, Connector>;
  /** @default a silent logger */
  logger?: Logger;
  /** Where acceptance schemas compile (PlanePorts.schemaCompiler). @default in process */
  schemaCompiler?: SchemaCompiler;
  /** How acceptance verifiers are called (PlanePorts.verifier). @default none */
  verifier?: VerifierPort;
  /** Engine options beside publicUrl. */
  planeOptions?: PlaneOptions;
}

/**
 * The plane's HTTP app served in process (`app.fetch`, no socket) over a memory store and a fake remote
 * target `fake`, with tenants `alpha` (KEY_A) and `beta` (KEY_B).
 */
export async function planeApp(o: PlaneAppOptions = {}) {
  const clock = o.clock ?? new SystemClock();
  const store = o.store ?? new MemoryStore();
  const remote = new FakeRemote(clock);
  const connectors: Record<string, Connector> = { ...o.connectors, fake: remote.connector('fake') };
  const plane = new Plane({
    clock,
    random: new CryptoRandom(),
    store,
    connectors: (t) => (Object.hasOwn(connectors, t) ? connectors[t] : undefined),
    options: { publicUrl: 'http://plane.test', ...o.planeOptions },
    ...(o.schemaCompiler ? { schemaCompiler: o.schemaCompiler } : {}),
    ...(o.verifier ? { verifier: o.verifier } : {}),
  });
  await plane.start();
  const shutdown = new AbortController();
  // As startServer does: each open SSE stream listens on the shutdown signal.
  setMaxListeners(0, shutdown.signal);
  const random = new CryptoRandom();
  await seedApiKeys({ env: `alpha:${KEY_A},beta:${KEY_B}`, store, clock, random });
  const app = createServerApp({
    plane,
    store,
    keys: new KeyRing({ store, clock }),
    tickets: await StreamTickets.open({ store, clock, random }),
    logger: o.logger ?? pino({ level: 'silent' }),
    signal: shutdown.signal,
    defaultMetrics: false,
    // As startServer does: a worker compiler shares its time among tenants by their limits.
    ...(o.schemaCompiler instanceof WorkerSchemaCompiler ? { schemaCompiler: o.schemaCompiler } : {}),
    ...o.limits,
    ...(o.limitsClock ? { clock: o.limitsClock } : {}),
  });
  const fetch = (path: string, init: RequestInit = {}) =>
    app.fetch(new Request(`http://plane.test${path}`, { duplex: 'half', ...init } as RequestInit));
  return {
    app,
    clock,
    connectors,
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
