/** A response body of either kind the connectors meet: fetch's (a ReadableStream) or node:http's (an async iterable). */
export type ResponseBody = ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>;

/** Reads a body chunk by chunk, whichever kind it is. */
export interface ChunkReader {
  next(): Promise<IteratorResult<Uint8Array, unknown>>;
  /** Lets go of the body (its connection with it) when it is not read to its end; never throws. */
  release(): void;
}

export function chunkReader(body: ResponseBody): ChunkReader {
  if (body instanceof ReadableStream) {
    const reader = body.getReader();
    return { next: () => reader.read(), release: () => void reader.cancel().catch(() => {}) };
  }
  const it = body[Symbol.asyncIterator]();
  return { next: () => it.next(), release: () => void Promise.resolve(it.return?.()).catch(() => {}) };
}
