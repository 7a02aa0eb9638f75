import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { TaskplaneError } from '../core/errors.ts';

/**
 * How long a node:http stream the reader stopped reading early (the consumer had what it needed: the
 * task's terminal event) may take to end on its own, its rest read and dropped, before it is destroyed.
 * A server closes the stream right after the terminal event (A2A), and a response that ends puts its
 * connection back in the keep-alive pool: the next stream to that agent skips the TCP (and TLS)
 * handshake. One that does not end in time is destroyed, as any early stop was before.
 */
export const SSE_DRAIN_MS = 2_000;

/**
 * Reads an SSE response body as a sequence of events (eventsource-parser does the framing). The
 * iterator ends when the server closes the stream normally; a broken connection throws `unavailable`,
 * which the engine treats as a drop and answers by reattaching (A2A SubscribeToTask, MCP listen), never
 * with a resend. Shared by the connectors that read SSE themselves (A2A, MCP).
 *
 * `map` turns each event into what the caller reads (undefined skips it; a throw fails the stream): the
 * readers below decode frames here rather than in a generator of their own around this one, which
 * would cost a promise and its callbacks per frame, kept alive as long as the stream waits for its next
 * frame (docs/performance.md, "Streams read directly").
 */
export function readSse(
  body: ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>,
  signal: AbortSignal,
): AsyncGenerator<EventSourceMessage>;
export function readSse<T>(
  body: ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>,
  signal: AbortSignal,
  map: (ev: EventSourceMessage) => T | undefined,
  /** Called once when the stream ends, however it ends (read to its end, failed, or left early). */
  onEnd?: () => void,
): AsyncGenerator<T>;
export async function* readSse<T>(
  body: ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>,
  signal: AbortSignal,
  map?: (ev: EventSourceMessage) => T | undefined,
  onEnd?: () => void,
): AsyncGenerator<T | EventSourceMessage> {
  const queue: Array<T | EventSourceMessage> = [];
  // A map that throws fails the stream once the events before that one are read, in their order.
  let failed = null as { err: unknown } | null;
  const parser = createParser({
    onEvent: map
      ? (ev) => {
          if (failed) return;
          try {
            const out = map(ev);
            if (out !== undefined) queue.push(out);
          } catch (err) {
            failed = { err };
          }
        }
      : (ev) => queue.push(ev),
  });
  // A fetch body (WHATWG stream) is read with its reader; a node:http body (http-stream.ts) by iteration,
  // which leaves its end to this reader (letGo) rather than destroying it on an early stop.
  const reader =
    body instanceof ReadableStream
      ? body.getReader()
      : isNodeBody(body)
        ? body.iterator({ destroyOnReturn: false })
        : body[Symbol.asyncIterator]();
  const decoder = new TextDecoder();
  let ended = false;
  try {
    for (;;) {
      let chunk: IteratorResult<Uint8Array, unknown>;
      try {
        chunk = await (reader instanceof ReadableStreamDefaultReader ? reader.read() : reader.next());
      } catch (err) {
        throw new TaskplaneError('unavailable', signal.aborted ? 'stream aborted' : 'stream dropped', {
          cause: err,
        });
      }
      if (chunk.done) {
        ended = true;
        parser.feed(decoder.decode());
        while (queue.length) yield queue.shift()!;
        if (failed) throw failed.err;
        return;
      }
      parser.feed(decoder.decode(chunk.value, { stream: true }));
      while (queue.length) yield queue.shift()!;
      if (failed) throw failed.err;
    }
  } finally {
    // Lets go of the connection when the consumer stops early (return, abort) or the body failed.
    if (reader instanceof ReadableStreamDefaultReader) reader.cancel().catch(() => {});
    else if (isNodeBody(body)) letGo(body, reader, ended, signal);
    else void Promise.resolve(reader.return?.()).catch(() => {});
    onEnd?.();
  }
}

/**
 * The parts of a node:http body (a stream.Readable) this reader uses, by shape: this module is also in
 * the lab's browser bundle, which has no node: modules.
 */
interface NodeBody extends AsyncIterable<Uint8Array> {
  iterator(options: { destroyOnReturn: boolean }): AsyncIterator<Uint8Array>;
  resume(): unknown;
  destroy(): unknown;
  once(event: 'close', listener: () => void): unknown;
  readonly destroyed: boolean;
  readonly errored: unknown;
}

function isNodeBody(body: object): body is NodeBody {
  const b = body as Partial<NodeBody>;
  return (
    typeof b.iterator === 'function' && typeof b.resume === 'function' && typeof b.destroy === 'function'
  );
}

/**
 * A node:http body the reader is done with. Stopped early without an abort (the consumer had what it
 * needed): its rest is read and dropped for up to SSE_DRAIN_MS so that, once the server ends it, the
 * connection goes back to the keep-alive pool. Aborted, or failed: destroyed at once.
 */
function letGo(body: NodeBody, reader: AsyncIterator<Uint8Array>, ended: boolean, signal: AbortSignal): void {
  if (ended || body.destroyed) return;
  if (signal.aborted || body.errored) {
    body.destroy();
    return;
  }
  // The iterator's return takes its 'readable' listener off (a body with one ignores resume()).
  void Promise.resolve(reader.return?.()).then(
    () => {
      const timer = setTimeout(() => body.destroy(), SSE_DRAIN_MS);
      timer.unref();
      body.once('close', () => clearTimeout(timer));
      body.resume();
    },
    () => body.destroy(),
  );
}

/** The JSON messages of an SSE body, one per event with data; an event whose data is not JSON is skipped. */
export function readSseJson(body: ReadableStream<Uint8Array>, signal: AbortSignal): AsyncGenerator<unknown> {
  return readSse(body, signal, jsonOrSkip);
}

function jsonOrSkip(ev: EventSourceMessage): unknown {
  if (!ev.data) return undefined;
  try {
    return JSON.parse(ev.data) as unknown;
  } catch {
    return undefined;
  }
}
