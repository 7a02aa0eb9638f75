import { SystemClock } from '../../src/core/clock.ts';
import { SeededRandom } from '../../src/core/random.ts';
import type { Envelope, EnvelopeEvent } from '../../src/core/envelope.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import { A2AConnector, type A2AConnectorOptions } from '../../src/connectors/a2a/a2a-connector.ts';
import { Plane } from '../../src/plane/plane.ts';
import type { PlaneOptions } from '../../src/plane/options.ts';

/**
 * A plane wired as `taskplane serve` wires it (the A2A connector built without I/O, the card read on
 * first use) against one peer, on a memory store. Real time, because the peer is a real HTTP server;
 * tests wait on the store's change notices for a condition, never for a fixed time.
 */
export interface PeerPlane {
  plane: Plane;
  store: MemoryStore;
  connector: A2AConnector;
  /** Resolves with the envelope once `test` holds (re-checked on every store change and a short tick). */
  until(id: string, test: (env: Envelope) => boolean, what: string): Promise<Envelope>;
  /** Resolves once `test` holds for something outside the store (re-checked on a short tick). */
  untilTrue(test: () => boolean, what: string): Promise<void>;
  events(id: string): Promise<EnvelopeEvent[]>;
  close(): Promise<void>;
}

/** Deadline for a condition to come true: only a guard against a hung test, never part of an assert. */
const GUARD_MS = 15_000;

export async function peerPlane(
  baseUrl: string,
  options: PlaneOptions = {},
  /** More of the connector's options (a fetch, a resolver, what the target allows). */
  connectorOptions: Partial<A2AConnectorOptions> = {},
): Promise<PeerPlane> {
  const store = new MemoryStore();
  const connector = new A2AConnector({ target: 'peer', baseUrl, timeoutMs: 5_000, ...connectorOptions });
  const plane = new Plane({
    clock: new SystemClock(),
    random: new SeededRandom(7),
    store,
    connectors: (t) => (t === 'peer' ? connector : undefined),
    options: {
      requestTimeoutMs: 5_000,
      startRetry: { initialIntervalMs: 50, maximumIntervalMs: 200 },
      stream: { reattach: { initialIntervalMs: 50, maximumIntervalMs: 200 } },
      ...options,
    },
  });
  await plane.start();
  return {
    plane,
    store,
    connector,
    until(id, test, what) {
      return new Promise<Envelope>((resolve, reject) => {
        let done = false;
        const check = async () => {
          const env = await store.getEnvelope(id);
          if (!done && env && test(env)) {
            done = true;
            off();
            clearInterval(tick);
            clearTimeout(guard);
            resolve(env);
          }
        };
        // Change notices wake at once; the tick catches writes that carry no event.
        const off = store.onChange(() => void check());
        const tick = setInterval(() => void check(), 25);
        const guard = setTimeout(async () => {
          off();
          clearInterval(tick);
          const env = await store.getEnvelope(id);
          reject(new Error(`${what}: not reached; envelope is ${env?.state} (${env?.nativeState})`));
        }, GUARD_MS);
        void check();
      });
    },
    untilTrue(test, what) {
      return new Promise<void>((resolve, reject) => {
        const started = Date.now();
        const tick = setInterval(() => {
          if (test()) {
            clearInterval(tick);
            resolve();
          } else if (Date.now() - started > GUARD_MS) {
            clearInterval(tick);
            reject(new Error(`${what}: not reached`));
          }
        }, 10);
      });
    },
    async events(id) {
      return store.listEvents({ afterSeq: 0, envelopeId: id, tenant: 't', limit: 500 });
    },
    async close() {
      await plane.stop();
      await store.close();
    },
  };
}
