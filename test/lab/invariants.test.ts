import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { runLab } from '../../src/lab/run.ts';
import { DEFAULT_SETTINGS, faultsOnly, withSettings } from '../../src/lab/settings.ts';

/**
 * Invariants over many seeds (issue 5). Runs are on virtual time, so a 240-task run takes a few
 * hundred milliseconds of CPU; 12 seeds per property keeps the suite to seconds.
 */
const ALL = faultsOnly('flaps', 'outage', 'lostacks', 'restart');
const SEEDS = Array.from({ length: 12 }, (_, i) => 1000 + i * 7919);

describe('reattach never duplicates', () => {
  it.each(SEEDS)('engine, streaming under every fault, seed %i', async (seed) => {
    const r = await runLab(
      withSettings(DEFAULT_SETTINGS, { seed, delivery: 'stream', onDrop: 'reattach', faults: ALL }),
    );
    expect(r.engine).toBe(true);
    expect(r.metrics.duplicates).toBe(0);
  });

  it.each(SEEDS)('naive reattach client under flaps and restart, seed %i', async (seed) => {
    const r = await runLab(
      withSettings(DEFAULT_SETTINGS, {
        seed,
        delivery: 'stream',
        onDrop: 'reattach',
        reconcileMin: 0,
        client: 'naive',
        faults: faultsOnly('flaps', 'restart'),
      }),
    );
    expect(r.engine).toBe(false);
    expect(r.metrics.duplicates).toBe(0);
  });
});

describe('the default engine configuration under all faults', () => {
  it.each(SEEDS)('learns every outcome and does no side effect twice, seed %i', async (seed) => {
    const r = await runLab(withSettings(DEFAULT_SETTINGS, { seed, faults: ALL }));
    expect(r.engine).toBe(true);
    expect(r.metrics.unknownOutcomes).toBe(0);
    expect(r.metrics.duplicates).toBe(0);
  });

  it('holds for any seed and task count (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 0xffffffff }),
        fc.integer({ min: 10, max: 300 }),
        fc.constantFrom('push', 'stream'),
        async (seed, tasks, delivery) => {
          const r = await runLab(withSettings(DEFAULT_SETTINGS, { seed, tasks, delivery, faults: ALL }));
          expect(r.metrics.unknownOutcomes).toBe(0);
          expect(r.metrics.duplicates).toBe(0);
        },
      ),
      // Fixed: the suite stays deterministic. Random sweeps are how regressions.test.ts's seeds were found.
      { numRuns: 12, seed: 20261129 },
    );
  });
});

describe('a run is a pure function of settings and seed', () => {
  it.each([
    ['engine, push, all faults', { faults: ALL }],
    ['engine, stream, all faults', { delivery: 'stream' as const, faults: ALL }],
    [
      'naive, resend-on-drop',
      { delivery: 'stream' as const, onDrop: 'resend' as const, idempotent: false, reconcileMin: 0 },
    ],
    ['naive, polling', { delivery: 'poll' as const, idempotent: false, reconcileMin: 0 }],
  ])('%s: same seed, identical result', async (_name, patch) => {
    const settings = withSettings(DEFAULT_SETTINGS, { seed: 77, ...patch });
    const a = await runLab(settings);
    const b = await runLab(settings);
    expect(b).toEqual(a);
  });

  it('a different seed gives a different world', async () => {
    const a = await runLab(withSettings(DEFAULT_SETTINGS, { seed: 1 }));
    const b = await runLab(withSettings(DEFAULT_SETTINGS, { seed: 2 }));
    expect(b.timeline).not.toEqual(a.timeline);
  });
});
