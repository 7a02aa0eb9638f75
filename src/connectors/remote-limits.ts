import { TaskplaneError } from '../core/errors.ts';
import { chunkReader, type ResponseBody } from './body-reader.ts';

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
