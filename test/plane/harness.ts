import pino from 'pino';
import { VirtualClock } from '../../src/core/clock.ts';
import { SeededRandom } from '../../src/core/random.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import type { Store } from '../../src/store/store.ts';
import { openStore } from '../../src/store/open-store.ts';
import { freshSchemaName, urlForSchema } from '../support/pg.ts';
import type { ConnectorCapabilities } from '../../src/connectors/connector.ts';
import { Plane } from '../../src/plane/plane.ts';
import type { Logger } from '../../src/core/logger.ts';
import type { PlaneOptions } from '../../src/plane/options.ts';
import type { NextTurn } from '../../src/plane/turns.ts';
import { FakeRemote, drain } from './fake-remote.ts';
import type { VerifierPort } from '../../src/plane/verifier.ts';

/** A plane on a virtual clock, a memory store and one fake remote registered as target `fake`. */
export interface Harness {
  clock: VirtualClock;
  store: Store;
  remote: FakeRemote;
  plane: Plane;
  /** Lets promise chains and in-flight store calls finish, without moving virtual time. */
  settle(): Promise<void>;
  /** Moves virtual time forward, letting every chain settle after each timer. */
  advance(ms: number): Promise<void>;
  /** Stops the plane and closes the store. */
  close(): Promise<void>;
  /** A new plane on the same store and remote (a restart of the plane process). */
  restart(options?: PlaneOptions): Promise<Plane>;
  /** Another plane process on the same store, remote and clock (not started; close() stops it too). */
  addPlane(options: PlaneOptions, instanceId: string): Plane;
}

export async function harness(
  options: PlaneOptions = {},
  caps: Partial<ConnectorCapabilities> = {},
  seed = 1,
  connectorOptions: { startStream?: boolean } = {},
  setup: {
    store?: string;
    instanceId?: string;
    nextTurn?: NextTurn;
    logger?: Logger;
    verifier?: VerifierPort;
    /** Wraps the backend (a test that counts what the engine reads). */
    wrapStore?: (store: Store) => Store;
  } = {},
): Promise<Harness> {
  const clock = new VirtualClock(1_700_000_000_000);
  // PLANE_TEST_STORE=sqlite::memory: or =postgres (a fresh schema each) runs the engine tests on another backend.
  const which = setup.store ?? process.env.PLANE_TEST_STORE;
  const opened: Store = !which
    ? new MemoryStore()
    : await openStore(which === 'postgres' ? urlForSchema(freshSchemaName('tp_plane')) : which);
  const backend = setup.wrapStore ? setup.wrapStore(opened) : opened;
  // Count store calls in flight, so advancing virtual time waits for real I/O (SQLite, PostgreSQL) to finish.
  let inFlight = 0;
  const store = new Proxy(backend, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== 'function' || prop === 'onChange')
        return typeof value === 'function' ? value.bind(target) : value;
      return (...args: unknown[]) => {
        const result = (value as (...a: unknown[]) => unknown).apply(target, args);
        if (!(result instanceof Promise)) return result;
        inFlight++;
        return result.finally(() => inFlight--);
      };
    },
  });
  const settle = async () => {
    // Until no store call is pending across a few event-loop turns (microtask chains resume in between).
    for (let quiet = 0; quiet < 3;) {
      await drain();
      if (inFlight === 0) quiet++;
      else {
        quiet = 0;
        await new Promise((r) => setTimeout(r, 1));
      }
    }
  };
  const remote = new FakeRemote(clock);
  const connector = remote.connector('fake', caps, connectorOptions);
  const random = new SeededRandom(seed);
  const extra: Plane[] = [];
  const make = (opts: PlaneOptions, instanceId = setup.instanceId) =>
    new Plane({
      ...(instanceId ? { instanceId } : {}),
      clock,
      random,
      store,
      connectors: (t) => (t === 'fake' ? connector : undefined),
      ...(setup.nextTurn ? { nextTurn: setup.nextTurn } : {}),
      ...(setup.verifier ? { verifier: setup.verifier } : {}),
      options: opts,
      // PLANE_TEST_LOG=1 shows the engine's warnings while debugging a test.
      ...(setup.logger
        ? { logger: setup.logger }
        : process.env.PLANE_TEST_LOG
          ? { logger: pino({ level: 'debug' }) }
          : {}),
    });
  const h: Harness = {
    clock,
    store,
    remote,
    plane: make(options),
    settle,
    async close() {
      for (const p of extra) await p.stop();
      await h.plane.stop();
      await backend.close();
    },
    async advance(ms: number) {
      const until = clock.now() + ms;
      await settle();
      for (;;) {
        const due = clock.nextDue();
        if (due === undefined || due > until) break;
        clock.step();
        await settle();
      }
      await clock.runUntil(until);
      await settle();
    },
    addPlane(opts, instanceId) {
      const p = make(opts, instanceId);
      extra.push(p);
      return p;
    },
    async restart(opts = options) {
      await h.plane.stop();
      h.plane = make(opts);
      await h.plane.start();
      await settle();
      return h.plane;
    },
  };
  await h.plane.start();
  return h;
}
