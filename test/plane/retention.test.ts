import { afterEach, describe, expect, it } from 'vitest';
import { TaskplaneError } from '../../src/core/errors.ts';
import type { PlaneOptions } from '../../src/plane/options.ts';
import { planeConfig } from '../../src/plane/options.ts';
import type { ExpiredEnvelope } from '../../src/store/store.ts';
import { harness, type Harness } from './harness.ts';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const HOUR = 3_600_000;
const base = (retention: PlaneOptions['retention']): PlaneOptions => ({
  reconcile: { intervalMs: 100 * HOUR },
  retention,
});

async function finishedJob(hh: Harness, tenant: string, input: string): Promise<string> {
  const { envelope } = await hh.plane.create({ tenant, target: 'fake', input }, { wait: 'started' });
  hh.remote.set(envelope.remoteId!, 'succeeded');
  await hh.advance(1_000);
  expect((await hh.plane.get(tenant, envelope.id)).state).toBe('succeeded');
  return envelope.id;
}

async function gone(hh: Harness, tenant: string, id: string): Promise<boolean> {
  try {
    await hh.plane.get(tenant, id);
    return false;
  } catch (err) {
    if (err instanceof TaskplaneError && err.code === 'not_found') return true;
    throw err;
  }
}

describe('retention deadline on the envelope', () => {
  it('is recorded when a job ends: end + the tenant period, the default otherwise, none when kept for ever', async () => {
    h = await harness(
      base({ terminalMs: 2 * HOUR, tenants: { short: { terminalMs: HOUR }, keep: { terminalMs: null } } }),
    );
    const { envelope: open } = await h.plane.create(
      { tenant: 'a', target: 'fake', input: 'open' },
      { wait: 'started' },
    );
    const a = await finishedJob(h, 'a', 'x');
    const endedAt = h.clock.now();
    const short = await finishedJob(h, 'short', 'y');
    const keep = await finishedJob(h, 'keep', 'z');
    const aEnv = await h.plane.get('a', a);
    // Recorded at the write that made it terminal (within the second the harness waited).
    expect(aEnv.retentionUntil! - aEnv.updatedAt).toBe(2 * HOUR);
    expect(aEnv.retentionUntil).toBeLessThanOrEqual(endedAt + 2 * HOUR);
    const shortEnv = await h.plane.get('short', short);
    expect(shortEnv.retentionUntil! - shortEnv.updatedAt).toBe(HOUR);
    expect((await h.plane.get('keep', keep)).retentionUntil).toBeNull();
    expect((await h.plane.get('a', open.id)).retentionUntil).toBeNull();
  });

  it('a job that ends by a local decision (lost, escalated) gets its deadline too', async () => {
    h = await harness({
      delivery: { stream: false, push: false, poll: false },
      lostPolicy: 'escalate',
      reconcile: { defaultExpectedDurationMs: 60_000, orphanMarginMs: 0 },
      retention: { terminalMs: HOUR, purge: false },
    });
    const { envelope } = await h.plane.create(
      { tenant: 'a', target: 'fake', input: 'w' },
      { wait: 'started' },
    );
    h.remote.forget();
    await h.advance(600_000);
    const after = await h.plane.get('a', envelope.id);
    expect(after.state).toBe('lost');
    expect(after.retentionUntil! - after.updatedAt).toBe(HOUR);
  });

  it('bad retention options name their field', () => {
    expect(() => planeConfig({ retention: { terminalMs: -1 } })).toThrow(/retention\.terminalMs/);
    expect(() => planeConfig({ retention: { tenants: { t: {} as { terminalMs: number } } } })).toThrow(
      /retention\.tenants\.t/,
    );
    expect(() => planeConfig({ retention: { batchSize: 0 } })).toThrow(/retention\.batchSize/);
    expect(planeConfig().retention.terminalMs).toBe(30 * 24 * HOUR);
  });
});

describe('retention purge on the clock', () => {
  it('deletes a finished job with its events once past its deadline, and leaves open jobs alone', async () => {
    h = await harness(base({ terminalMs: HOUR, sweepIntervalMs: 60_000 }));
    const { envelope: open } = await h.plane.create(
      { tenant: 'a', target: 'fake', input: 'open' },
      { wait: 'started' },
    );
    const done = await finishedJob(h, 'a', 'done');
    expect((await h.store.listEvents({ afterSeq: 0, envelopeId: done })).length).toBeGreaterThan(1);
    await h.advance(HOUR - 120_000);
    expect(await gone(h, 'a', done)).toBe(false);
    await h.advance(180_000);
    expect(await gone(h, 'a', done)).toBe(true);
    expect(await h.store.listEvents({ afterSeq: 0, envelopeId: done })).toEqual([]);
    expect((await h.plane.get('a', open.id)).state).not.toBe('succeeded');
    expect(h.plane.retentionStats().purged).toBe(1);
  });

  it('goes batch by batch and stops a round at maxPerRound', async () => {
    h = await harness(base({ terminalMs: HOUR, batchSize: 2, maxPerRound: 3, purge: false }));
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(await finishedJob(h, 'a', `j${i}`));
    await h.advance(HOUR + 1);
    expect(await h.plane.purgeExpired()).toBe(3);
    expect(await h.plane.purgeExpired()).toBe(2);
    expect(await h.plane.purgeExpired()).toBe(0);
    for (const id of ids) expect(await gone(h, 'a', id)).toBe(true);
  });

  it('with purge off the loop deletes nothing (a plane that only records deadlines)', async () => {
    h = await harness(base({ terminalMs: HOUR, sweepIntervalMs: 60_000, purge: false }));
    const done = await finishedJob(h, 'a', 'done');
    await h.advance(2 * HOUR);
    expect(await gone(h, 'a', done)).toBe(false);
  });
});

describe('export before purge', () => {
  it('hands each batch over before deleting it; a failed export keeps the batch for the next round', async () => {
    const batches: ExpiredEnvelope[][] = [];
    const exported: string[] = [];
    let fail = true;
    h = await harness(base({ terminalMs: HOUR, purge: false }));
    await h.plane.stop();
    // The same store and clock, a plane with a beforePurge port.
    const { Plane } = await import('../../src/plane/plane.ts');
    const { SeededRandom } = await import('../../src/core/random.ts');
    const plane = new Plane({
      clock: h.clock,
      random: new SeededRandom(3),
      store: h.store,
      connectors: () => undefined,
      options: base({ terminalMs: HOUR, purge: false }),
      beforePurge: async (batch, store) => {
        batches.push(batch);
        if (fail) throw new Error('disk full');
        for (const e of batch)
          for (const ev of await store.listEvents({ afterSeq: 0, envelopeId: e.id }))
            exported.push(`${e.id}:${ev.type}`);
      },
    });
    h.plane = plane;
    await plane.start();
    const now = h.clock.now();
    const { newEnvelope } = await import('../../src/core/envelope.ts');
    const env = newEnvelope({
      id: 'tsk_old',
      tenant: 'a',
      connector: 'a2a',
      target: 'fake',
      requestKind: 'message',
      input: 'x',
      inputHash: 'sha256:0',
      createdAt: now - 2 * HOUR,
      state: 'succeeded',
      retentionUntil: now - HOUR,
    });
    await h.store.createEnvelope(env, [
      { envelopeId: env.id, tenant: 'a', type: 'created', at: env.createdAt, data: {} },
      { envelopeId: env.id, tenant: 'a', type: 'state_changed', at: env.createdAt, data: {} },
    ]);
    expect(await plane.purgeExpired()).toBe(0);
    expect(plane.retentionStats().exportFailures).toBe(1);
    expect((await h.store.getEnvelope(env.id))?.id).toBe(env.id);
    fail = false;
    expect(await plane.purgeExpired()).toBe(1);
    expect(exported).toEqual(['tsk_old:created', 'tsk_old:state_changed']);
    expect(batches.map((b) => b.map((e) => e.id))).toEqual([['tsk_old'], ['tsk_old']]);
    expect(await h.store.getEnvelope(env.id)).toBeUndefined();
  });
});
