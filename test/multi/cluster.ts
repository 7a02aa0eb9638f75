import { onTestFinished } from 'vitest';
import { VirtualClock } from '../../src/core/clock.ts';
import { SeededRandom } from '../../src/core/random.ts';
import type { Connector } from '../../src/connectors/connector.ts';
import { Plane } from '../../src/plane/plane.ts';
import type { PlaneOptions } from '../../src/plane/options.ts';
import { PostgresStore } from '../../src/store/postgres/pg-store.ts';
import { FakeRemote } from '../plane/fake-remote.ts';
import { disposeSchema, freshSchemaName, urlForSchema } from '../support/pg.ts';

/**
 * Several plane instances as separate deployments would run them: each with its own PostgresStore (its
 * own pool and LISTEN connection) on one fresh schema, sharing one fake remote agent and one virtual
 * clock. What one plane writes reaches the others only through PostgreSQL.
 */
export interface Cluster {
  clock: VirtualClock;
  remote: FakeRemote;
  url: string;
  members: Member[];
  /** Another plane instance on the same schema (started), e.g. a replacement. */
  add(setup?: MemberSetup): Promise<Member>;
}

export interface Member {
  plane: Plane;
  store: PostgresStore;
  /** The process dies: its loops end without releasing leases, and its connections close. */
  kill(): Promise<void>;
}

export interface MemberSetup {
  /** Hear other instances' changes (LISTEN). @default true */
  listen?: boolean;
  /** Replace the connector's methods, e.g. a start that hangs. */
  connector?: (base: Connector) => Connector;
}

export const CLUSTER_OPTIONS: PlaneOptions = {
  // Reconciliation would correct the record on its own after its interval: out of the way here, so
  // what is shown is the fast path between instances.
  reconcile: { intervalMs: 3_600_000 },
  watch: { leaseTtlMs: 30_000 },
};

export async function cluster(setups: MemberSetup[], options = CLUSTER_OPTIONS): Promise<Cluster> {
  const schema = freshSchemaName('tp_multi');
  const url = urlForSchema(schema);
  const clock = new VirtualClock(1_700_000_000_000);
  const remote = new FakeRemote(clock);
  const base = remote.connector('fake', {});
  const members: Member[] = [];
  const live = new Set<Member>();
  onTestFinished(async ({ task }) => {
    for (const m of live) {
      await m.plane.stop();
      await m.store.close();
    }
    await disposeSchema(schema, task.result?.state === 'fail');
  });
  let n = 0;
  const add = async (setup: MemberSetup = {}): Promise<Member> => {
    const store = await PostgresStore.open({ url, poolMax: 4, listen: setup.listen ?? true });
    const connector = setup.connector ? setup.connector(base) : base;
    const plane = new Plane({
      instanceId: `plane-${++n}`,
      clock,
      random: new SeededRandom(n),
      store,
      connectors: (t) => (t === 'fake' ? connector : undefined),
      options,
    });
    await plane.start();
    const member: Member = {
      plane,
      store,
      async kill() {
        live.delete(member);
        await plane.stop({ abandon: true });
        await store.close();
      },
    };
    live.add(member);
    return member;
  };
  for (const s of setups) members.push(await add(s));
  return { clock, remote, url, members, add };
}

/**
 * Resolves once `holds()` is true, checked now and after each change any of `stores` reports, and at
 * least every 50 ms (some conditions, a watcher ending, write nothing); rejects naming `what` after
 * `timeoutMs` of real time.
 */
export async function until(
  stores: PostgresStore[],
  holds: () => Promise<boolean> | boolean,
  what: string,
  timeoutMs = 15_000,
): Promise<void> {
  let wake: () => void = () => undefined;
  const offs = stores.map((s) => s.onChange(() => wake()));
  const deadline = Date.now() + timeoutMs;
  try {
    while (!(await holds())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 50);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  } finally {
    for (const off of offs) off();
  }
}

/** Jobs a plane watches right now (watcher not done). */
export function watching(plane: Plane): string[] {
  return Object.entries(plane.watcherStates())
    .filter(([, s]) => s !== 'done')
    .map(([id]) => id);
}
