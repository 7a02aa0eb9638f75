import type { Connector } from '../connectors/connector.ts';

/**
 * A connector's stream as the engine reads it: as it is when the connector promises to end its streams
 * on abort (`abortEndsStreams`), else through untilAborted. Each read through untilAborted costs a promise
 * and its callbacks, live until the next frame arrives (docs/performance.md, "Streams read directly").
 */
export function abortable<T>(
  connector: Pick<Connector, 'abortEndsStreams'>,
  stream: AsyncIterable<T>,
  signal: AbortSignal,
): AsyncIterable<T> {
  return connector.abortEndsStreams ? stream : untilAborted(stream, signal);
}

/**
 * A connector's stream that ends when `signal` aborts, whatever the connector does. stop() waits for every
 * watcher, so a stream whose next() never settles would hold stop() for ever: a connector that checks its
 * signal only through an 'abort' listener misses a signal already aborted when it opens a stream (stop()
 * called while a streaming start was between its first answer and the stream behind it). Each next() is
 * raced against the signal here, and on abort the source is asked to return without waiting for it.
 *
 * The race keeps nothing per frame: one abort listener for the stream's life rejects whichever next() is
 * pending. (`Promise.race` against one promise that lives as long as the stream would leave a reaction
 * on that promise for every frame until the stream ends.)
 */
export async function* untilAborted<T>(source: AsyncIterable<T>, signal: AbortSignal): AsyncGenerator<T> {
  const it = source[Symbol.asyncIterator]();
  const reason = () => (signal.reason as unknown) ?? new Error('aborted');
  let pending: ((err: unknown) => void) | null = null;
  const onAbort = () => pending?.(reason());
  signal.addEventListener('abort', onAbort, { once: true });
  let finished = false;
  try {
    for (;;) {
      if (signal.aborted) throw reason();
      const r = await new Promise<IteratorResult<T>>((resolve, reject) => {
        pending = reject;
        it.next().then(resolve, reject);
      });
      pending = null;
      if (r.done) {
        finished = true;
        return;
      }
      yield r.value;
    }
  } finally {
    pending = null;
    signal.removeEventListener('abort', onAbort);
    if (!finished) void Promise.resolve(it.return?.()).catch(() => {});
  }
}
