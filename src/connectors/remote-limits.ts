import { createParser } from 'eventsource-parser';
import { TaskplaneError } from '../core/errors.ts';
import { chunkReader, type ResponseBody } from './body-reader.ts';

/**
 * The most the plane reads of one answer from a remote agent over HTTP: a JSON body (a task, a page of
 * tasks, an agent card, a JSON-RPC answer) or one event of an event stream. A remote that sends more
 * (a bug, or a hostile agent) would otherwise have the plane hold all of it in memory at once, and one
 * target's answer could take the process, and every tenant's work with it, down. A gRPC message has
 * the same bound, as the client's receive limit (grpc-transport.ts).
 *
 * Going over is `unavailable` (retryable) and never an outcome: the request may have done its work on
 * the remote (a start may have created the task), so the job keeps its state, says why in its last
 * error, and is read again later (the truth rule: nothing is recorded that the remote did not give).
 */
export const MAX_REMOTE_MESSAGE_BYTES = 16 * 1024 * 1024;

export function tooLarge(what: string): TaskplaneError {
  return new TaskplaneError(
    'unavailable',
    `remote: ${what} over ${MAX_REMOTE_MESSAGE_BYTES} bytes; not read further`,
    { details: { limitBytes: MAX_REMOTE_MESSAGE_BYTES } },
  );
}

/** The parts of a fetch Response or of http-stream.ts's answer that a bounded read uses. */
interface Answer {
  readonly headers: { get(name: string): string | null };
  readonly body: ResponseBody | null;
}

/**
 * The body as UTF-8 text, read chunk by chunk and given up (the body let go of, its connection closed)
 * as soon as it passes MAX_REMOTE_MESSAGE_BYTES, or at once when its Content-Length says it will. A read
 * that fails on its own (the connection cut, the call aborted) throws what `readFailed` makes of it.
 */
export async function readBoundedText(
  answer: Answer,
  what: string,
  readFailed: (err: unknown) => Error,
): Promise<string> {
  if (answer.body === null) return '';
  const reader = chunkReader(answer.body);
  if (Number(answer.headers.get('content-length')) > MAX_REMOTE_MESSAGE_BYTES) {
    reader.release();
    throw tooLarge(what);
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    let chunk: IteratorResult<Uint8Array, unknown>;
    try {
      chunk = await reader.next();
    } catch (err) {
      reader.release();
      throw readFailed(err);
    }
    if (chunk.done) break;
    size += chunk.value.byteLength;
    if (size > MAX_REMOTE_MESSAGE_BYTES) {
      reader.release();
      throw tooLarge(what);
    }
    chunks.push(chunk.value);
  }
  const all = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    all.set(c, at);
    at += c.byteLength;
  }
  // TextDecoder, not Buffer: the connectors are also part of the lab's browser bundle.
  return new TextDecoder().decode(all);
}

/**
 * A fetch whose answers are bounded as every other remote answer is, for the vendors' SDKs (OpenAI,
 * Anthropic), which read whatever comes: a body that is not an event stream may be at most
 * MAX_REMOTE_MESSAGE_BYTES (a declared Content-Length over it fails at the first read), and one event of
 * an event stream may be at most that many bytes (UnendedEvent). Past either, the body's read
 * fails with tooLarge and the connection is let go of; the SDK's parse throws that error, and the
 * connector passes a TaskplaneError through as it is.
 */
export function boundedFetch(inner: typeof fetch = fetch): typeof fetch {
  return async (input, init) => {
    const response = await inner(input, init);
    if (!response.body) return response;
    const events = (response.headers.get('content-type') ?? '').startsWith('text/event-stream');
    const declared = Number(response.headers.get('content-length'));
    const body =
      !events && declared > MAX_REMOTE_MESSAGE_BYTES
        ? failing(response.body, tooLarge('answer'))
        : response.body.pipeThrough(events ? eventBound() : totalBound());
    const bounded = new Response(body, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
    Object.defineProperty(bounded, 'url', { value: response.url });
    return bounded;
  };
}

/** A body that fails at its first read, the original let go of. */
function failing(original: ReadableStream<Uint8Array>, err: Error): ReadableStream<Uint8Array> {
  void original.cancel().catch(() => {});
  return new ReadableStream({ start: (controller) => controller.error(err) });
}

function totalBound(): TransformStream<Uint8Array, Uint8Array> {
  let size = 0;
  return new TransformStream({
    transform(chunk, controller) {
      size += chunk.byteLength;
      if (size > MAX_REMOTE_MESSAGE_BYTES) controller.error(tooLarge('answer'));
      else controller.enqueue(chunk);
    },
  });
}

/**
 * The bytes of an event stream since an event or a comment last ended: one event may be at most
 * MAX_REMOTE_MESSAGE_BYTES. Told after each chunk whether an event or a comment ended in it, it counts
 * from the chunk one last ended in, so an event may run over by less than one chunk.
 */
export class UnendedEvent {
  private bytes = 0;

  /** After a chunk of `bytes`: the error to fail the stream with once past the limit, else null. */
  add(bytes: number, ended: boolean): TaskplaneError | null {
    this.bytes = ended ? 0 : this.bytes + bytes;
    return this.bytes > MAX_REMOTE_MESSAGE_BYTES
      ? tooLarge('event stream went without ending an event')
      : null;
  }
}

/** Passes an event stream on as it is, failing it once one event goes past the limit (UnendedEvent). */
function eventBound(): TransformStream<Uint8Array, Uint8Array> {
  let ended = false;
  const parser = createParser({ onEvent: () => (ended = true), onComment: () => (ended = true) });
  const decoder = new TextDecoder();
  const unended = new UnendedEvent();
  return new TransformStream({
    transform(chunk, controller) {
      ended = false;
      parser.feed(decoder.decode(chunk, { stream: true }));
      const over = unended.add(chunk.byteLength, ended);
      if (over) controller.error(over);
      else controller.enqueue(chunk);
    },
  });
}
