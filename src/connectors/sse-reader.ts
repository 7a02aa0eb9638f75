import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { TaskplaneError } from '../core/errors.ts';

/**
 * Reads an SSE response body as a sequence of events (eventsource-parser does the framing). The
 * iterator ends when the server closes the stream normally; a broken connection throws `unavailable`,
 * which the engine treats as a drop and answers by reattaching (A2A SubscribeToTask, MCP listen), never
 * with a resend. Shared by the connectors that read SSE themselves (A2A, MCP).
 */
export async function* readSse(
  body: ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>,
  signal: AbortSignal,
): AsyncGenerator<EventSourceMessage> {
  const queue: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (ev) => queue.push(ev) });
  // A fetch body (WHATWG stream) is read with its reader; a node:http body (http-stream.ts) by iteration.
  const reader = body instanceof ReadableStream ? body.getReader() : body[Symbol.asyncIterator]();
  const decoder = new TextDecoder();
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
        parser.feed(decoder.decode());
        while (queue.length) yield queue.shift()!;
        return;
      }
      parser.feed(decoder.decode(chunk.value, { stream: true }));
      while (queue.length) yield queue.shift()!;
    }
  } finally {
    // Lets go of the connection when the consumer stops early (return, abort) or the body failed.
    if (reader instanceof ReadableStreamDefaultReader) reader.cancel().catch(() => {});
    else void Promise.resolve(reader.return?.()).catch(() => {});
  }
}

/** The JSON messages of an SSE body, one per event with data; an event whose data is not JSON is skipped. */
export async function* readSseJson(
  body: ReadableStream<Uint8Array>,
  signal: AbortSignal,
): AsyncGenerator<unknown> {
  for await (const ev of readSse(body, signal)) {
    if (!ev.data) continue;
    let msg: unknown;
    try {
      msg = JSON.parse(ev.data);
    } catch {
      continue;
    }
    yield msg;
  }
}
