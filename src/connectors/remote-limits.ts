import { TaskplaneError } from '../core/errors.ts';

/**
 * The most the plane reads of one answer from a remote agent over HTTP: a JSON body (a task, a page of
 * tasks, an agent card, a JSON-RPC answer) or one event of an event stream. A remote that sends more
 * (a bug, or a hostile agent) would otherwise have the plane hold all of it in memory at once, and one
 * target's answer could take the process, and every tenant's work with it, down. gRPC answers have
 * their own bound, @grpc/grpc-js's 4 MiB receive limit.
 *
 * Going over is `unavailable` (retryable) and never an outcome: the request may have done its work on
 * the remote (a start may have created the task), so the job keeps its state, says why in its last
 * error, and is read again later (the truth rule: nothing is recorded that the remote did not give).
 */
export const MAX_REMOTE_MESSAGE_BYTES = 16 * 1024 * 1024;

export function tooLarge(what: string, limit: number): TaskplaneError {
  return new TaskplaneError('unavailable', `remote: ${what} over ${limit} bytes; not read further`, {
    details: { limitBytes: limit },
  });
}

/** The parts of a fetch Response or of http-stream.ts's answer that a bounded read uses. */
interface Body {
  readonly headers: { get(name: string): string | null };
  readonly body: ReadableStream<Uint8Array> | AsyncIterable<Uint8Array> | null;
}

/**
 * The body as UTF-8 text, read chunk by chunk and given up (the body cancelled, its connection closed)
 * as soon as it passes `limit` bytes, or at once when its Content-Length says it will.
 */
export async function readBoundedText(
  response: Body,
  what: string,
  limit = MAX_REMOTE_MESSAGE_BYTES,
): Promise<string> {
  const body = response.body;
  const declared = Number(response.headers.get('content-length') ?? NaN);
  if (body === null) return '';
  if (declared > limit) {
    await stop(body);
    throw tooLarge(what, limit);
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = body instanceof ReadableStream ? body.getReader() : body[Symbol.asyncIterator]();
  try {
    for (;;) {
      const chunk = await (reader instanceof ReadableStreamDefaultReader ? reader.read() : reader.next());
      if (chunk.done) break;
      size += chunk.value.byteLength;
      if (size > limit) throw tooLarge(what, limit);
      chunks.push(chunk.value);
    }
  } catch (err) {
    if (reader instanceof ReadableStreamDefaultReader) reader.cancel().catch(() => {});
    else void Promise.resolve(reader.return?.()).catch(() => {});
    throw err;
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

async function stop(body: ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>): Promise<void> {
  if (body instanceof ReadableStream) await body.cancel().catch(() => {});
  else await Promise.resolve(body[Symbol.asyncIterator]().return?.()).catch(() => {});
}
