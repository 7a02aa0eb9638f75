import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { TaskplaneError } from '../core/errors.ts';
import { chunkReader, type ResponseBody } from './body-reader.ts';
import { UnendedEvent } from './remote-limits.ts';

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
 * `map` turns each event into what the caller reads (undefined skips it; a throw fails the stream once
 * the events before it are read): the readers decode frames here rather than in a generator of their
 * own around this one, which would cost a promise and its callbacks per frame, kept alive as long as
 * the stream waits for its next frame (docs/performance.md, "Streams read directly").
 *
 * A node:http body (http-stream.ts, the plane's streams) is read from its events by NodeSseStream: a
 * read that waits holds one promise, not the chain of generators that iterating the body would (the
 * body's own iterator, then this reader's). Other bodies (fetch's, the lab's in the browser) are read
 * by a generator.
 */
export function readSse(body: ResponseBody, signal: AbortSignal): AsyncIterableIterator<EventSourceMessage>;
export function readSse<T>(
  body: ResponseBody,
  signal: AbortSignal,
  map: (ev: EventSourceMessage) => T | undefined,
  /** Called once when the stream ends, however it ends (read to its end, failed, or left early). */
  onEnd?: () => void,
): AsyncIterableIterator<T>;
export function readSse<T>(
  body: ResponseBody,
  signal: AbortSignal,
  map?: (ev: EventSourceMessage) => T | undefined,
  onEnd?: () => void,
): AsyncIterableIterator<T | EventSourceMessage> {
  const decode: (ev: EventSourceMessage) => T | EventSourceMessage | undefined = map ?? ((ev) => ev);
  if (!(body instanceof ReadableStream) && isNodeBody(body))
    return new NodeSseStream(body, signal, decode, onEnd);
  return readGeneric(body, signal, decode, onEnd);
}

/**
 * Events turned into what the reader hands out, queued in order; a map that throws stops the queue there,
 * and so does an event over the limit (remote-limits.ts UnendedEvent).
 */
class FrameQueue<T> {
  private readonly items: T[] = [];
  /** The data size of each queued item: what is parsed ahead is bounded in bytes as well as in events. */
  private readonly sizes: number[] = [];
  /** The data bytes of the events queued. */
  bytes = 0;
  /** What the map threw, or the limit passed: thrown once the items before it are read. */
  failed: { err: unknown } | null = null;
  private readonly unended = new UnendedEvent();
  /** Whether an event or a comment ended in the chunk being fed. */
  private ended = false;
  private readonly parser;
  private readonly decoder = new TextDecoder();

  constructor(map: (ev: EventSourceMessage) => T | undefined) {
    this.parser = createParser({
      onEvent: (ev) => {
        this.ended = true;
        if (this.failed) return;
        try {
          const out = map(ev);
          if (out !== undefined) {
            this.items.push(out);
            this.sizes.push(ev.data.length);
            this.bytes += ev.data.length;
          }
        } catch (err) {
          this.failed = { err };
        }
      },
      onComment: () => {
        this.ended = true;
      },
    });
  }

  get length(): number {
    return this.items.length;
  }

  /** The next item (the queue is not empty). */
  shift(): T {
    this.bytes -= this.sizes.shift()!;
    return this.items.shift()!;
  }

  /** Drops what is queued (the reader stopped). */
  clear(): void {
    this.items.length = 0;
    this.sizes.length = 0;
    this.bytes = 0;
  }

  feed(chunk: Uint8Array): void {
    if (this.failed) return;
    this.ended = false;
    this.parser.feed(this.decoder.decode(chunk, { stream: true }));
    const over = this.unended.add(chunk.byteLength, this.ended);
    if (over && !this.failed) this.failed = { err: over };
  }

  /** The body ended: what is left of the last event is read. */
  flush(): void {
    if (!this.failed) this.parser.feed(this.decoder.decode());
  }
}

function dropped(signal: AbortSignal, cause: unknown): TaskplaneError {
  return new TaskplaneError('unavailable', signal.aborted ? 'stream aborted' : 'stream dropped', { cause });
}

async function* readGeneric<T>(
  body: ResponseBody,
  signal: AbortSignal,
  map: (ev: EventSourceMessage) => T | undefined,
  onEnd?: () => void,
): AsyncGenerator<T> {
  const frames = new FrameQueue(map);
  const reader = chunkReader(body);
  try {
    for (;;) {
      let chunk: IteratorResult<Uint8Array, unknown>;
      try {
        chunk = await reader.next();
      } catch (err) {
        throw dropped(signal, err);
      }
      if (chunk.done) frames.flush();
      else frames.feed(chunk.value);
      while (frames.length) yield frames.shift();
      if (frames.failed) throw frames.failed.err;
      if (chunk.done) return;
    }
  } finally {
    // Lets go of the connection when the consumer stops early (return, abort) or the body failed.
    reader.release();
    onEnd?.();
  }
}

/**
 * The parts of a node:http body (a stream.Readable) this reader uses, by shape: this module is also in
 * the lab's browser bundle, which has no node: modules.
 */
interface NodeBody extends AsyncIterable<Uint8Array> {
  on(event: 'data', listener: (chunk: Uint8Array) => void): unknown;
  on(event: 'end' | 'close', listener: () => void): unknown;
  on(event: 'error', listener: (err: unknown) => void): unknown;
  off(event: 'data', listener: (chunk: Uint8Array) => void): unknown;
  off(event: 'end' | 'close', listener: () => void): unknown;
  off(event: 'error', listener: (err: unknown) => void): unknown;
  once(event: 'close', listener: () => void): unknown;
  pause(): unknown;
  resume(): unknown;
  isPaused(): boolean;
  destroy(): unknown;
  readonly destroyed: boolean;
  readonly errored: unknown;
}

function isNodeBody(body: object): body is NodeBody {
  const b = body as Partial<NodeBody>;
  return typeof b.on === 'function' && typeof b.resume === 'function' && typeof b.destroy === 'function';
}

/** Events parsed ahead of the reader before the body is paused (a reader slower than its server). */
export const READ_AHEAD = 64;
/** The same in bytes of event data: 64 large events would otherwise be held in full. */
export const READ_AHEAD_BYTES = 1024 * 1024;

type Waiter<T> = { resolve: (r: IteratorResult<T>) => void; reject: (err: unknown) => void };

/**
 * An event stream read from a node:http body's 'data' events: each chunk is parsed as it comes and a
 * waiting read is answered from the queue. When the reader stops early without an abort (it had what it
 * needed: the task's terminal event), the body's rest is read and dropped for up to SSE_DRAIN_MS so that,
 * once the server ends it, the connection goes back to the keep-alive pool; aborted, or failed, the body
 * is destroyed at once.
 */
class NodeSseStream<T> implements AsyncIterableIterator<T> {
  private readonly frames: FrameQueue<T>;
  private waiter: Waiter<T> | null = null;
  /** Set once the body ended (true) or failed (the error to throw once the queue is read). */
  private end: true | TaskplaneError | null = null;
  private released = false;

  constructor(
    private readonly body: NodeBody,
    private readonly signal: AbortSignal,
    map: (ev: EventSourceMessage) => T | undefined,
    private readonly onEnd: (() => void) | undefined,
  ) {
    this.frames = new FrameQueue(map);
    body.on('data', this.onData);
    body.on('end', this.onBodyEnd);
    body.on('error', this.onError);
    body.on('close', this.onClose);
    if (body.errored || body.destroyed) this.onError(body.errored ?? new Error('stream closed'));
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<T>> {
    if (this.waiter) return Promise.reject(new Error('readSse: one read at a time'));
    try {
      const ready = this.take();
      if (ready) return Promise.resolve(ready);
    } catch (err) {
      return Promise.reject(err);
    }
    return new Promise((resolve, reject) => (this.waiter = { resolve, reject }));
  }

  return(): Promise<IteratorResult<T>> {
    this.release();
    return Promise.resolve({ done: true, value: undefined });
  }

  /** What a read gets now (null: it waits for the body); throws the stream's failure once the queue is read. */
  private take(): IteratorResult<T> | null {
    const frames = this.frames;
    const { failed } = frames;
    if (this.signal.aborted && this.end !== true) {
      // The reader asked to stop: events parsed ahead of it are not handed out after that.
      frames.clear();
      this.end ??= dropped(this.signal, this.signal.reason);
    }
    if (frames.length) {
      const value = frames.shift();
      if (frames.length === 0 && !failed && !this.end && this.body.isPaused()) this.body.resume();
      return { done: false, value };
    }
    if (failed) {
      this.release();
      throw failed.err;
    }
    if (!this.end) return null;
    this.release();
    if (this.end === true) return { done: true, value: undefined };
    throw this.end;
  }

  /** Answers the waiting read, if there is one and it has an answer. */
  private wake(): void {
    const w = this.waiter;
    if (!w) return;
    this.waiter = null;
    let ready: IteratorResult<T> | null;
    try {
      ready = this.take();
    } catch (err) {
      return w.reject(err);
    }
    if (ready) w.resolve(ready);
    else this.waiter = w;
  }

  private readonly onData = (chunk: Uint8Array): void => {
    const frames = this.frames;
    frames.feed(chunk);
    if (frames.length >= READ_AHEAD || frames.bytes >= READ_AHEAD_BYTES || frames.failed) this.body.pause();
    this.wake();
  };

  private readonly onBodyEnd = (): void => {
    this.frames.flush();
    this.end ??= true;
    this.wake();
  };

  private readonly onError = (err: unknown): void => {
    this.end ??= dropped(this.signal, err);
    this.wake();
  };

  /** Closed before its end (a cut with no error reported): a drop. */
  private readonly onClose = (): void => {
    this.end ??= dropped(this.signal, new Error('stream closed before its end'));
    this.wake();
  };

  /** Done reading: the listeners go, the body is let go of (see the class), the waiting read ends. */
  private release(): void {
    if (this.released) return;
    this.released = true;
    const body = this.body;
    body.off('data', this.onData);
    body.off('end', this.onBodyEnd);
    body.off('error', this.onError);
    body.off('close', this.onClose);
    const w = this.waiter;
    this.waiter = null;
    w?.resolve({ done: true, value: undefined });
    if (this.end !== true && !body.destroyed) {
      if (this.signal.aborted || body.errored || this.end || this.frames.failed) body.destroy();
      else {
        const timer = setTimeout(() => body.destroy(), SSE_DRAIN_MS);
        timer.unref();
        body.once('close', () => clearTimeout(timer));
        body.resume();
      }
    }
    this.onEnd?.();
  }
}

/** The JSON messages of an SSE body, one per event with data; an event whose data is not JSON is skipped. */
export function readSseJson(
  body: ReadableStream<Uint8Array>,
  signal: AbortSignal,
): AsyncIterableIterator<unknown> {
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
