import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../../src/core/clock.ts';
import { CachedReadsByKey } from '../../src/server/cached-read.ts';

/** Figures kept per tenant: at most maxKeys tenants' figures are held, the least recently asked go first. */
describe('CachedReadsByKey', () => {
  it('keeps one read per key within the age and drops the least recently asked key past maxKeys', async () => {
    const clock = new VirtualClock(0);
    const reads: string[] = [];
    const cache = new CachedReadsByKey(
      async (key) => (reads.push(key), `${key}@${clock.now()}`),
      1_000,
      clock,
      2,
    );
    expect(await cache.get('a')).toEqual({ value: 'a@0', ageMs: 0 });
    await clock.advance(10);
    expect(await cache.get('b')).toEqual({ value: 'b@10', ageMs: 0 });
    expect(await cache.get('a')).toEqual({ value: 'a@0', ageMs: 10 });
    // A third key drops b (asked before a's last request), not a.
    await cache.get('c');
    expect(await cache.get('a')).toEqual({ value: 'a@0', ageMs: 10 });
    expect(reads).toEqual(['a', 'b', 'c']);
    expect(await cache.get('b')).toEqual({ value: 'b@10', ageMs: 0 });
    expect(reads).toEqual(['a', 'b', 'c', 'b']);
  });
});
