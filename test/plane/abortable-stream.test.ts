import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { untilAborted } from '../../src/plane/abortable-stream.ts';

/** The collector, for reading what a loop left behind (V8 exposes it once the flag is set). */
function collector(): () => void {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

describe('untilAborted', () => {
  it('ends a stream whose next() never settles when the signal aborts, and asks the source to return', async () => {
    let returned = false;
    const source: AsyncIterable<number> = {
      [Symbol.asyncIterator]: () => ({
        next: () => new Promise<IteratorResult<number>>(() => {}),
        return: async () => {
          returned = true;
          return { done: true, value: undefined };
        },
      }),
    };
    const controller = new AbortController();
    const reading = (async () => {
      for await (const _ of untilAborted(source, controller.signal)) expect.unreachable();
    })();
    controller.abort(new Error('stopping'));
    await expect(reading).rejects.toThrow('stopping');
    expect(returned).toBe(true);
  });

  it('does not read a source whose signal was aborted before the first read', async () => {
    let reads = 0;
    async function* source() {
      reads++;
      yield 1;
    }
    const controller = new AbortController();
    controller.abort(new Error('already'));
    await expect(untilAborted(source(), controller.signal).next()).rejects.toThrow('already');
    expect(reads).toBe(0);
  });

  it('keeps nothing per frame: a long stream holds the same memory after 100,000 frames', async () => {
    const gc = collector();
    const frames = 100_000;
    async function* source() {
      for (let i = 0; i < frames; i++) yield i;
    }
    const it = untilAborted(source(), new AbortController().signal);
    await it.next();
    gc();
    const before = process.memoryUsage().heapUsed;
    for (let i = 1; i < frames; i++) await it.next();
    gc();
    const grown = process.memoryUsage().heapUsed - before;
    // Racing each next() against one promise that lives as long as the stream kept a reaction per frame
    // on it until the stream ended: memory that grows with the frames read.
    expect(grown).toBeLessThan(4_000_000);
    await it.return(undefined);
  });
});
