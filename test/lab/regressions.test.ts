import { describe, expect, it } from 'vitest';
import { runEngineClient } from '../../src/lab/engine-client.ts';
import { buildWorld, runLab, runNaiveClient } from '../../src/lab/run.ts';
import type { StreamConn } from '../../src/lab/sim-network.ts';
import { MINUTE_MS, WORLD } from '../../src/lab/world-model.ts';
import { DEFAULT_SETTINGS, faultsOnly, withSettings } from '../../src/lab/settings.ts';

/**
 * Seeds that once broke an invariant, kept (STYLE.md: "a failing lab seed becomes a regression test").
 */
const ALL = faultsOnly('flaps', 'outage', 'lostacks', 'restart');

describe('regressions', () => {
  /**
   * Found by a 150-seed sweep (every seed failed the same way): with reconciliation every 30 min under
   * all faults, outcomes that finished during the receiver outage (minutes 30–42) and whose pushes ran
   * out of retries are still unlearned when the forgetful agent restarts at minute 60; the round at 60
   * finds them TaskNotFound and resubmits them, so their work runs twice (seed 1: 22 duplicate side
   * effects, 36 resubmissions for ~20 jobs really in flight). Not an engine bug: no client can tell a
   * forgotten finished task from a forgotten running one. The default 10-min interval learns them at
   * minutes 40 and 50, before the restart, and stays clean on the same seed.
   */
  it('seed 1: a 30-min reconciliation lets outage outcomes be forgotten and run twice; 10 min does not', async () => {
    const slow = await runLab(withSettings(DEFAULT_SETTINGS, { seed: 1, reconcileMin: 30, faults: ALL }));
    expect(slow.engine).toBe(true);
    expect(slow.metrics.unknownOutcomes).toBe(0);
    expect(slow.metrics.duplicates).toBeGreaterThan(0);
    expect(slow.metrics.resubmitted).toBeGreaterThan(slow.metrics.duplicates);

    const fine = await runLab(withSettings(DEFAULT_SETTINGS, { seed: 1, faults: ALL }));
    expect(fine.metrics.unknownOutcomes).toBe(0);
    expect(fine.metrics.duplicates).toBe(0);
  });

  /**
   * Mission 3 alone (restart, no outage) is the case a rare reconciliation does solve: nothing is left
   * unlearned before minute 60, so a 30-min interval recovers every outcome without running any job
   * twice. Kept with the seed above so the two stay distinguishable.
   */
  it('seed 1: with the restart alone, a 30-min reconciliation recovers everything without duplicates', async () => {
    const r = await runLab(
      withSettings(DEFAULT_SETTINGS, { seed: 1, reconcileMin: 30, faults: faultsOnly('restart') }),
    );
    expect(r.metrics.unknownOutcomes).toBe(0);
    expect(r.metrics.duplicates).toBe(0);
    expect(r.metrics.resubmitted).toBeGreaterThan(0);
  });

  /**
   * Found by a 460-run random sweep of the default configuration under all faults (the only failure;
   * seed 1358360224, 796 tasks, streaming): a job completed 42 ms before the restart at minute 60 and
   * the engine resubmitted it, so it ran twice. The cause was the model, not the engine: the restart
   * discarded the terminal stream event the agent had already written (50 ms on the wire), where TCP
   * delivers what was sent before a process dies. Fixed in StreamConn.crash(); rebuilt here as a fixed
   * scenario (one job finishing 20 ms before the restart) so the seed cannot drift away from it.
   * The genuine form of the race stays visible with push: the POST already on the wire arrives, and
   * the engine learns from its payload (`when-incomplete`), but fetching state first (`always`) meets
   * TaskNotFound and reruns the job.
   */
  it.each([
    ['stream', 'when-incomplete', 0],
    ['push', 'when-incomplete', 0],
    ['push', 'always', 1],
  ] as const)(
    'an outcome in flight at the restart (%s, webhook fetch %s) → %i duplicate',
    async (delivery, webhookFetch, duplicates) => {
      const world = buildWorld(
        withSettings(DEFAULT_SETTINGS, { tasks: 1, delivery, webhookFetch, faults: faultsOnly('restart') }),
      );
      // The start reaches the agent one latency after the arrival, so the task ends 20 ms before the restart.
      world.jobs[0] = {
        index: 0,
        arrivalMs: WORLD.restartAtMs - 2 * MINUTE_MS,
        durationMs: 2 * MINUTE_MS - 20 - WORLD.latencyMs,
        inputAtWorkMs: null,
      };
      await runEngineClient(world);
      const m = world.ledger.metrics();
      expect(m.unknownOutcomes).toBe(0);
      expect(m.duplicates).toBe(duplicates);
      expect(m.resubmitted).toBe(duplicates);
    },
  );
});

/**
 * The engine once added one abort listener per in-flight call, wait and watcher to its shared signal,
 * and Node printed MaxListenersExceededWarning past 10; the lab had to lift the limit process-wide
 * (`EventEmitter.defaultMaxListeners = 0`) in its CLI, tests and bench. The engine now links through
 * AbortSignal.any, and the workaround is gone: kept so it does not come back.
 */
describe('no abort-listener leak', () => {
  async function warningsDuring(work: () => Promise<unknown>): Promise<string[]> {
    const seen: string[] = [];
    const onWarning = (w: Error) => {
      if (w.name === 'MaxListenersExceededWarning') seen.push(w.message);
    };
    process.on('warning', onWarning);
    try {
      await work();
      // Warnings are emitted on a later tick.
      await new Promise((resolve) => setTimeout(resolve, 10));
    } finally {
      process.off('warning', onWarning);
    }
    return seen;
  }

  it('the probe sees the warning when there is one (prints one on purpose)', async () => {
    const controller = new AbortController();
    const seen = await warningsDuring(async () => {
      for (let i = 0; i < 11; i++) controller.signal.addEventListener('abort', () => {});
    });
    expect(seen.length).toBe(1);
  });

  it.each(['stream', 'push'] as const)(
    '1,000 engine tasks under all faults (%s): no MaxListenersExceededWarning',
    async (delivery) => {
      const seen = await warningsDuring(async () => {
        const r = await runLab(withSettings(DEFAULT_SETTINGS, { tasks: 1000, delivery, faults: ALL }));
        expect(r.engine).toBe(true);
      });
      expect(seen).toEqual([]);
    },
  );
});

/**
 * The seed-style reconciliation charge (one GetTask per in-flight task not heard from for an interval)
 * once counted "heard from" differently for the two kinds of client: the baselines on every snapshot
 * they received, the engine adapter only when the engine wrote a change to its store. A reattach that
 * re-read a still-working task changed nothing, so streaming engine runs were charged for tasks they
 * had just heard from (mission 1, seed 4: 64 charges where the same rule applied to the snapshots
 * gives 14; the naive reattach client under that rule: 20). Both now apply the rule to snapshots.
 */
describe('reconciliation charge: the same "heard from" rule for engine and baselines', () => {
  async function charge(client: 'engine' | 'naive', dropAtMin: number | null): Promise<number> {
    const settings = withSettings(DEFAULT_SETTINGS, {
      tasks: 1,
      delivery: 'stream',
      reconcileMin: 10,
      client,
      faults: faultsOnly(),
    });
    const world = buildWorld(settings);
    // One 25-min job from minute 0: reconciliation rounds at minutes 10 and 20 find it in flight.
    world.jobs[0] = { index: 0, arrivalMs: 0, durationMs: 25 * MINUTE_MS, inputAtWorkMs: null };
    const open: StreamConn[] = [];
    const openStream = world.net.openStream.bind(world.net);
    world.net.openStream = (job, sink) => {
      const conn = openStream(job, sink);
      open.push(conn);
      return conn;
    };
    if (dropAtMin !== null) world.clock.setTimer(dropAtMin * MINUTE_MS, () => open.forEach((c) => c.drop()));
    if (client === 'engine') await runEngineClient(world);
    else runNaiveClient(world);
    expect(world.ledger.metrics().unknownOutcomes).toBe(0);
    return world.ledger.reconcilePerTaskCharge;
  }

  it.each(['engine', 'naive'] as const)(
    '%s: a silent stream is charged at minute 20; a reattach at minute 15 is hearing from the task',
    async (client) => {
      expect(await charge(client, null)).toBe(1);
      expect(await charge(client, 15)).toBe(0);
    },
  );
});

/**
 * The lab drives the virtual clock so that everything the engine starts at one instant finishes at
 * that instant, however many awaits deep. VirtualClock.runUntil settles a fixed number of microtask
 * turns per timer; when an engine change added awaits to create(), a lone job's start reached the agent
 * at the next timer (the end of a 5-min chunk) instead of 50 ms after its arrival.
 */
describe('engine timing on the virtual clock', () => {
  it.each(['stream', 'push'] as const)(
    '%s: a job created at minute 58 reaches the agent one latency later',
    async (delivery) => {
      const world = buildWorld(withSettings(DEFAULT_SETTINGS, { tasks: 1, delivery, faults: faultsOnly() }));
      world.jobs[0] = { index: 0, arrivalMs: 58 * MINUTE_MS, durationMs: 5 * MINUTE_MS, inputAtWorkMs: null };
      const sentAt: number[] = [];
      const send = world.agent.send.bind(world.agent);
      world.agent.send = (...args) => {
        sentAt.push(world.clock.now());
        return send(...args);
      };
      await runEngineClient(world);
      expect(sentAt).toEqual([58 * MINUTE_MS + WORLD.latencyMs]);
      expect(world.ledger.metrics().meanNotifyDelayS).toBeLessThan(1);
    },
  );
});
