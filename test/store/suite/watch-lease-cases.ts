import { expect } from 'vitest';
import type { Envelope } from '../../../src/core/envelope.ts';
import type { EnvelopeStore } from '../../../src/store/store.ts';
import type { SuiteContext } from '../store-suite.ts';
import { event, makeEnvelope } from './fixtures.ts';

/**
 * The read an adoption round makes instead of listing every open job (plane/watch-leases.ts): the open
 * jobs whose watch lease (`watch:<id>`) no live owner holds, the same answer on every backend.
 */
export function watchLeaseCases({ store, peer, test }: SuiteContext<EnvelopeStore>): void {
  const put = async (overrides: Partial<Envelope>): Promise<Envelope> => {
    const env = makeEnvelope(overrides);
    await store().createEnvelope(env, [event(env, 'created')]);
    return env;
  };
  const unwatched = async (now: number, limit?: number): Promise<string[]> => {
    const ids: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await store().listUnwatchedEnvelopes({
        now,
        ...(limit === undefined ? {} : { limit }),
        ...(cursor === undefined ? {} : { cursor }),
      });
      if (limit !== undefined) expect(page.items.length).toBeLessThanOrEqual(limit);
      ids.push(...page.items.map((e) => e.id));
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    return ids;
  };

  test('listUnwatchedEnvelopes returns the open jobs whose watch lease is free, oldest update first', async () => {
    const other = await peer();
    const none = await put({ updatedAt: 500 });
    const expired = await put({ updatedAt: 100 });
    const live = await put({ updatedAt: 200 });
    const liveElsewhere = await put({ updatedAt: 300 });
    const released = await put({ updatedAt: 400 });
    const finished = await put({ updatedAt: 50, state: 'succeeded' });
    const waiting = await put({ updatedAt: 600, state: 'waiting_for_input' });
    expect(await store().acquireLease(`watch:${expired.id}`, 'p1', 1000, 100)).toBe(true);
    expect(await store().acquireLease(`watch:${live.id}`, 'p1', 1000, 1000)).toBe(true);
    expect(await other.acquireLease(`watch:${liveElsewhere.id}`, 'p2', 1000, 1000)).toBe(true);
    expect(await store().acquireLease(`watch:${released.id}`, 'p1', 1000, 1000)).toBe(true);
    await store().releaseLease(`watch:${released.id}`, 'p1');
    // A lease of another kind on the same id is not its watch lease.
    expect(await store().acquireLease(`reconcile:${none.id}`, 'p1', 1000, 1000)).toBe(true);

    const at1100 = await store().listUnwatchedEnvelopes({ now: 1100 });
    expect(at1100.items.map((e) => e.id)).toEqual([expired.id, released.id, none.id, waiting.id]);
    expect(at1100.nextCursor).toBeUndefined();
    expect(at1100.items[0]).toEqual({ ...expired, version: 1 });
    // Whatever acquireLeases would take is what it returns: an expiry at `now` is expired.
    expect(await unwatched(1099)).toEqual([released.id, none.id, waiting.id]);
    expect(await unwatched(1100)).toEqual([expired.id, released.id, none.id, waiting.id]);
    const free = await store().acquireLeases(
      [live, liveElsewhere, expired, released, none, waiting, finished].map((e) => `watch:${e.id}`),
      'p3',
      1100,
      1000,
    );
    expect(free.sort()).toEqual(
      [expired, released, none, waiting, finished].map((e) => `watch:${e.id}`).sort(),
    );
    // Now every open job is leased, until the leases run out.
    expect(await unwatched(1100)).toEqual([]);
    expect(await unwatched(2000)).toEqual([live.id, liveElsewhere.id]);
    expect(await unwatched(2100)).toEqual([
      expired.id,
      live.id,
      liveElsewhere.id,
      released.id,
      none.id,
      waiting.id,
    ]);
    // A job that finishes leaves the listing, its lease or not.
    await store().updateEnvelope({ ...none, state: 'failed', updatedAt: 700 }, 1, [event(none, 'failed')]);
    expect(await unwatched(2100)).not.toContain(none.id);
  });

  test('listUnwatchedEnvelopes pages by its cursor, never more than the limit, every free job once', async () => {
    const jobs: Envelope[] = [];
    for (let i = 0; i < 23; i++) jobs.push(await put({ updatedAt: 100 + (i % 5) }));
    const leased = jobs.filter((_, i) => i % 3 === 0);
    expect(
      await store().acquireLeases(
        leased.map((e) => `watch:${e.id}`),
        'p1',
        1000,
        1000,
      ),
    ).toHaveLength(leased.length);
    const expected = jobs
      .filter((_, i) => i % 3 !== 0)
      .sort((a, b) => a.updatedAt - b.updatedAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
      .map((e) => e.id);
    expect(await unwatched(1000, 4)).toEqual(expected);
    expect(await unwatched(1000, 1)).toEqual(expected);
    expect(await unwatched(1000, 1000)).toEqual(expected);
    expect(await unwatched(1000)).toEqual(expected);
    // Past the last page: nothing, and no cursor.
    const first = await store().listUnwatchedEnvelopes({ now: 1000, limit: expected.length });
    expect(first.items).toHaveLength(expected.length);
    expect(first.nextCursor).toBeUndefined();
    await expect(store().listUnwatchedEnvelopes({ now: 1000, limit: 0 })).rejects.toMatchObject({
      code: 'invalid_argument',
    });
    await expect(store().listUnwatchedEnvelopes({ now: 1000, cursor: 'nope' })).rejects.toMatchObject({
      code: 'invalid_argument',
    });
  });
}
