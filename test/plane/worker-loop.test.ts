import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../../src/core/clock.ts';
import { WorkerLoop } from '../../src/plane/worker-loop.ts';
import { drain } from './fake-remote.ts';

/** A loop over fixed items on a virtual clock, one round per 1,000 virtual ms. */
function loopOver(
  items: string[],
  handle: (item: string) => Promise<void>,
  error: (err: unknown, item: string | undefined) => void,
) {
  const clock = new VirtualClock(0);
  const controller = new AbortController();
  const loop = new WorkerLoop<string>({
    name: 'test',
    clock,
    signal: controller.signal,
    fetch: () => Promise.resolve(items),
    handle,
    error,
    intervalMs: () => 1000,
  });
  const round = async () => {
    await clock.advance(1000);
    await drain();
  };
  return { loop, controller, round };
}

describe('WorkerLoop isolates each item', () => {
  it('a failing item is reported and retried next round; the items after it are handled in the same round', async () => {
    const handled: string[] = [];
    const reported: Array<string | undefined> = [];
    let failuresLeft = 1;
    const { loop, controller, round } = loopOver(
      ['a', 'b', 'c'],
      async (item) => {
        if (item === 'b' && failuresLeft-- > 0) throw new Error('b failed');
        handled.push(item);
      },
      (_err, item) => reported.push(item),
    );
    loop.start();
    await round();
    expect([handled, reported]).toEqual([['a', 'c'], ['b']]);
    await round();
    expect(handled).toEqual(['a', 'c', 'a', 'b', 'c']);
    controller.abort();
    await loop.finished();
    expect(loop.state).toBe('stopped');
  });

  it('an error reporter that throws neither skips the rest nor ends the loop', async () => {
    const handled: string[] = [];
    const { loop, controller, round } = loopOver(
      ['a', 'b'],
      async (item) => {
        if (item === 'a') throw new Error('a failed');
        handled.push(item);
      },
      () => {
        throw new Error('the logger failed too');
      },
    );
    loop.start();
    await round();
    await round();
    expect(handled).toEqual(['b', 'b']);
    expect(loop.rounds).toBe(2);
    controller.abort();
    await expect(loop.finished()).resolves.toBeUndefined();
    expect(loop.state).toBe('stopped');
  });
});
