import { getEventListeners } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { VirtualClock } from '../../src/core/clock.ts';
import { remoteCall, type PlaneContext } from '../../src/plane/context.ts';
import { silentLogger } from '../../src/core/logger.ts';
import { planeConfig } from '../../src/plane/options.ts';
import { SignalCounters } from '../../src/plane/signals.ts';
import { harness, type Harness } from './harness.ts';

/**
 * Regression: remoteCall added an abort listener to the engine's shared signal per call, so more than
 * 10 calls in flight made Node print MaxListenersExceededWarning (the lab lifted the limit to hide it).
 */
describe('the engine signal keeps no listener per call or per watcher', () => {
  let h: Harness | null = null;
  afterEach(async () => {
    await h?.close();
    h = null;
  });

  it('50 concurrent remote calls leave the shared signal with no leaked listeners, and abort still reaches them', async () => {
    const engine = new AbortController();
    const ctx = {
      clock: new VirtualClock(0),
      config: planeConfig(),
      counters: new SignalCounters(),
      logger: silentLogger,
      signal: engine.signal,
    } as unknown as PlaneContext;
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.name);
    process.on('warning', onWarning);
    const pending = Array.from({ length: 50 }, () =>
      remoteCall(
        ctx,
        'get',
        { id: 'e', tenant: 't' },
        (signal) =>
          new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason as Error))),
      ),
    );
    await new Promise((r) => setImmediate(r));
    expect(getEventListeners(engine.signal, 'abort')).toHaveLength(0);
    engine.abort(new Error('stopped'));
    const results = await Promise.allSettled(pending);
    expect(results.every((r) => r.status === 'rejected')).toBe(true);
    expect(getEventListeners(engine.signal, 'abort')).toHaveLength(0);
    await new Promise((r) => setImmediate(r));
    process.off('warning', onWarning);
    expect(warnings).not.toContain('MaxListenersExceededWarning');
  });

  it('a timed-out call is still a retryable timeout error', async () => {
    const clock = new VirtualClock(0);
    const ctx = {
      clock,
      config: planeConfig({ requestTimeoutMs: 100 }),
      counters: new SignalCounters(),
      logger: silentLogger,
      signal: new AbortController().signal,
      revisions: new Map(),
    } as unknown as PlaneContext;
    const call = remoteCall(
      ctx,
      'get',
      null,
      (signal) =>
        new Promise((_, reject) => signal.addEventListener('abort', () => reject(new Error('aborted')))),
    );
    const caught = call.catch((e: unknown) => e);
    await clock.runUntil(200);
    expect(await caught).toMatchObject({ code: 'timeout', retryable: true });
  });

  it('50 watched jobs (streams attached and parked) add no listener to plane.signal', async () => {
    h = await harness();
    for (let i = 0; i < 50; i++)
      await h.plane.create({ tenant: 't', target: 'fake', input: `job ${i}` }, { wait: 'started' });
    await h.settle();
    expect(Object.values(h.plane.watcherStates()).filter((s) => s === 'attached')).toHaveLength(50);
    expect(getEventListeners(h.plane.signal, 'abort')).toHaveLength(0);
    for (const id of h.remote.jobs.keys())
      h.remote.set(id, 'waiting_for_input', { inputRequest: { requestId: 'q', prompt: 'p' } });
    await h.settle();
    expect(Object.values(h.plane.watcherStates()).filter((s) => s === 'parked')).toHaveLength(50);
    expect(getEventListeners(h.plane.signal, 'abort')).toHaveLength(0);
  });
});
