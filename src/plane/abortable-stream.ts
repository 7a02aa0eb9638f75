/**
 * A connector's stream that ends when `signal` aborts, whatever the connector does. stop() waits for every
 * watcher, so a stream whose next() never settles would hold stop() for ever: a connector that checks its
 * signal only through an 'abort' listener misses a signal already aborted when it opens a stream (stop()
 * called while a streaming start was between its first answer and the stream behind it). Each next() is
 * raced against the signal here, and on abort the source is asked to return without waiting for it.
 */
export async function* untilAborted<T>(source: AsyncIterable<T>, signal: AbortSignal): AsyncGenerator<T> {
  const it = source[Symbol.asyncIterator]();
  let onAbort!: () => void;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason ?? new Error('aborted'));
  });
  aborted.catch(() => {});
  if (signal.aborted) onAbort();
  else signal.addEventListener('abort', onAbort, { once: true });
  let finished = false;
  try {
    for (;;) {
      const r = await Promise.race([it.next(), aborted]);
      if (r.done) {
        finished = true;
        return;
      }
      yield r.value;
    }
  } finally {
    signal.removeEventListener('abort', onAbort);
    if (!finished) void Promise.resolve(it.return?.()).catch(() => {});
  }
}
