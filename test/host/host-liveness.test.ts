import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../../src/core/clock.ts';
import { HostLiveness } from '../../src/host/host-liveness.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import { sharedSchemaStores } from '../support/pg.ts';
import { silent } from './in-process.ts';

/**
 * HostLiveness over the store's leases. On PostgreSQL the lease of a host id is owned by one process and
 * tied to its session: a second live process with the id is refused, a dead one's id is free at once
 * (long before its lease expires), and a process whose lease another process with its id took stops.
 * Without session liveness (one machine) a host id's lease is the id's own, as it always was.
 */
const TTL = 60_000;

describe('host liveness on PostgreSQL', () => {
  it('refuses a second live process with the host id; a dead one’s id is free at once', async () => {
    const [first, twin, other] = await sharedSchemaStores(3, 'tp_hostlive');
    const clock = new VirtualClock(1_000_000);
    const a = new HostLiveness('h', first!, clock, silent, { ttlMs: TTL, instance: 'p1' });
    expect(await a.start()).toBe(true);
    const b = new HostLiveness('h', twin!, clock, silent, { ttlMs: TTL, instance: 'p2' });
    expect(await b.start()).toBe(false);
    const watcher = new HostLiveness('w', other!, clock, silent, { ttlMs: TTL, instance: 'p3' });
    expect(await watcher.start()).toBe(true);
    expect(await watcher.isAlive('h')).toBe(true);
    // The process dies: PostgreSQL ends its session. Its lease runs another minute, yet:
    await first!.close();
    expect(await watcher.isAlive('h')).toBe(false);
    expect(await b.start()).toBe(true);
    expect(await watcher.isAlive('h')).toBe(true);
    await b.stop();
    await watcher.stop();
  });

  it('a process whose lease another process with its host id took stops (onLost), once', async () => {
    const [first, twin] = await sharedSchemaStores(2, 'tp_hostlive');
    const clock = new VirtualClock(1_000_000);
    let lost = 0;
    const a = new HostLiveness('h', first!, clock, silent, {
      ttlMs: TTL,
      instance: 'p1',
      onLost: () => lost++,
    });
    expect(await a.start()).toBe(true);
    // A twin whose clock is past the lease (as if `a` had not renewed, cut off): it takes the lease.
    const later = new VirtualClock(1_000_000 + TTL);
    const b = new HostLiveness('h', twin!, later, silent, { ttlMs: TTL, instance: 'p2' });
    expect(await b.start()).toBe(true);
    await clock.advance(TTL / 3);
    await waitUntil(() => lost === 1);
    await clock.advance(TTL);
    expect(lost).toBe(1);
    await a.stop();
    // Stopping `a` left the twin's lease alone.
    expect(await new HostLiveness('x', first!, clock, silent, { instance: 'p3' }).isAlive('h')).toBe(true);
    await b.stop();
  });
});

describe('host liveness without session liveness (one machine)', () => {
  it('a restart with the host id takes the id’s lease back at once, as before', async () => {
    const store = new MemoryStore();
    const clock = new VirtualClock(1_000_000);
    const a = new HostLiveness('h', store, clock, silent, { ttlMs: TTL, instance: 'p1' });
    expect(await a.start()).toBe(true);
    const again = new HostLiveness('h', store, clock, silent, { ttlMs: TTL, instance: 'p2' });
    expect(again.owner).toBe('h');
    expect(await again.start()).toBe(true);
    await again.stop();
    await a.stop();
  });
});

async function waitUntil(check: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !check(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(check()).toBe(true);
}
