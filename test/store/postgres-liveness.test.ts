import { describe, expect, it, onTestFinished } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/pg-store.ts';
import { listenerApplicationName } from '../../src/store/postgres/pg-listener.ts';
import { event, makeEnvelope } from './suite/fixtures.ts';
import {
  disposeSchema,
  freshSchemaName,
  sharedSchemaStores,
  urlForSchema,
  withPgClient,
} from '../support/pg.ts';

/**
 * Lease owners bound to a store (bindLeaseOwner) hold a session advisory lock on its LISTEN connection:
 * once that session is gone, their leases pass to another owner at once, long before they expire; while
 * it lives, never.
 */
describe('postgres lease owner liveness', () => {
  it('a closed store’s owner loses its leases at once; a live owner keeps them', async () => {
    const [dying, live, third] = await sharedSchemaStores(3, 'tp_live');
    await dying!.bindLeaseOwner('w-dead', 1000);
    await live!.bindLeaseOwner('w-live', 1000);
    await third!.bindLeaseOwner('w-third', 1000);
    expect(await dying!.acquireLeases(['watch:x', 'watch:y'], 'w-dead', 1000, 60_000)).toHaveLength(2);
    expect(await live!.acquireLease('watch:y', 'w-live', 1001, 60_000)).toBe(false);
    expect(await live!.deadLeaseOwners()).toEqual([]);
    await dying!.close();
    // Gone and holding leases: named, so another plane adopts its jobs now.
    expect(await live!.deadLeaseOwners()).toEqual(['w-dead']);
    // The leases run to 61 000: taken at 1 002 because their owner's session is gone.
    expect(await live!.acquireLease('watch:y', 'w-live', 1002, 60_000)).toBe(true);
    expect(await live!.acquireLeases(['watch:x'], 'w-live', 1002, 60_000)).toEqual(['watch:x']);
    // Holding none any more: no longer named.
    expect(await third!.deadLeaseOwners()).toEqual([]);
    expect(await third!.acquireLeases(['watch:x', 'watch:y'], 'w-third', 1003, 60_000)).toEqual([]);
  });

  it('the adoption read lists a dead owner’s jobs at once, a live or never-bound owner’s only once expired', async () => {
    const [dying, live, old] = await sharedSchemaStores(3, 'tp_live');
    await dying!.bindLeaseOwner('w-dead', 1000);
    await live!.bindLeaseOwner('w-live', 1000);
    const jobs = [
      makeEnvelope({ updatedAt: 1 }),
      makeEnvelope({ updatedAt: 2 }),
      makeEnvelope({ updatedAt: 3 }),
    ];
    for (const env of jobs) await live!.createEnvelope(env, [event(env, 'created')]);
    const [ofDead, ofLive, ofOld] = jobs.map((e) => `watch:${e.id}`);
    expect(await dying!.acquireLease(ofDead!, 'w-dead', 1000, 60_000)).toBe(true);
    expect(await live!.acquireLease(ofLive!, 'w-live', 1000, 60_000)).toBe(true);
    expect(await old!.acquireLease(ofOld!, 'w-old', 1000, 60_000)).toBe(true);
    const unwatched = async (now: number) =>
      (await live!.listUnwatchedEnvelopes({ now })).items.map((e) => e.id);
    expect(await unwatched(1001)).toEqual([]);
    await dying!.close();
    await old!.close();
    // Only the bound owner whose session is gone: what acquireLeases would now take.
    expect(await unwatched(1002)).toEqual([jobs[0]!.id]);
    expect(await live!.acquireLeases([ofDead!, ofLive!, ofOld!], 'w-other', 1002, 60_000)).toEqual([ofDead]);
    expect(await unwatched(61_000)).toEqual([jobs[1]!.id, jobs[2]!.id]);
  });

  it('an owner that never bound (a previous version) keeps its leases until they expire', async () => {
    const [old, live] = await sharedSchemaStores(2, 'tp_live');
    await live!.bindLeaseOwner('w-live', 1000);
    expect(await old!.acquireLease('watch:p', 'w-old', 1000, 60_000)).toBe(true);
    await old!.close();
    expect(await live!.acquireLease('watch:p', 'w-live', 1001, 60_000)).toBe(false);
    expect(await live!.acquireLease('watch:p', 'w-live', 61_000, 60_000)).toBe(true);
  });

  it('an owner whose listener connection was cut keeps its leases once the listener is back', async () => {
    const schema = freshSchemaName('tp_live');
    const url = urlForSchema(schema);
    const a = await PostgresStore.open({ url, poolMax: 2 });
    const b = await PostgresStore.open({ url, poolMax: 2 });
    onTestFinished(async ({ task }) => {
      await a.close();
      await b.close();
      await disposeSchema(schema, task.result?.state === 'fail');
    });
    await a.bindLeaseOwner('w-a', 0);
    await b.bindLeaseOwner('w-b', 0);
    expect(await a.acquireLease('watch:z', 'w-a', 0, 60_000)).toBe(true);
    // Cut both listeners; each takes its lock again before it listens, so once a notice flows again, the
    // lock is back.
    await withPgClient((c) =>
      c.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [
        listenerApplicationName(`taskplane_${schema}`),
      ]),
    );
    expect(await waitUntilListening(a, b)).toBe(true);
    expect(await b.acquireLease('watch:z', 'w-b', 1, 60_000)).toBe(false);
  });

  it('a store whose listener just reconnected names no dead owner until the others had time to', async () => {
    const schema = freshSchemaName('tp_live');
    const url = urlForSchema(schema);
    const opened: PostgresStore[] = [];
    onTestFinished(async ({ task }) => {
      for (const s of opened) await s.close();
      await disposeSchema(schema, task.result?.state === 'fail');
    });
    const open = async (options: { reconnectSettleMs?: number } = {}) => {
      const s = await PostgresStore.open({ url, poolMax: 2, ...options });
      opened.push(s);
      return s;
    };
    // Settling for ten minutes after a reconnect: the test is over long before.
    const live = await open({ reconnectSettleMs: 600_000 });
    const dying = await PostgresStore.open({ url, poolMax: 2 });
    await dying.bindLeaseOwner('w-dead', 0);
    expect(await dying.acquireLease('watch:q', 'w-dead', 0, 60_000)).toBe(true);
    await dying.close();
    expect(await live.deadLeaseOwners()).toEqual(['w-dead']);
    // A server restart as `live` sees it: its session is cut, and so would every other one be.
    await withPgClient((c) =>
      c.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [
        listenerApplicationName(`taskplane_${schema}`),
      ]),
    );
    const writer = await open();
    expect(await waitUntilListening(live, writer)).toBe(true);
    expect(await live.deadLeaseOwners()).toEqual([]);
    // A store whose session was never cut still names it.
    expect(await writer.deadLeaseOwners()).toEqual(['w-dead']);
  });
});

/** Writes through `b` until `a` hears of it: `a`'s listener is connected again (and holds its locks). */
async function waitUntilListening(a: PostgresStore, b: PostgresStore): Promise<boolean> {
  for (;;) {
    const heard = new Promise<boolean>((resolve) => {
      const off = a.onChange(() => {
        off();
        resolve(true);
      });
      setTimeout(() => {
        off();
        resolve(false);
      }, 200);
    });
    const env = makeEnvelope();
    await b.createEnvelope(env, [event(env, 'created')]);
    if (await heard) return true;
  }
}
