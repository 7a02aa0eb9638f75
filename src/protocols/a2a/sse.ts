import type { Clock } from '../../core/clock.ts';

/**
 * Server-Sent Events framing (WHATWG HTML "server-sent events"; Hono's `helper/streaming/sse.ts`).
 * Every event we write carries an `id:` (the store's event seq) so a client can reconnect with
 * `Last-Event-ID`, and idle streams get a comment line at least every `keepAliveMs` because proxies
 * close idle SSE connections after 30–60 s (a2a-rs#201/#202).
 */
export interface SseEvent {
  id?: string;
  event?: string;
  data: string;
  /**
   * The object `data` was made from, when every stream sends the same frame for it (REST fan-out):
   * the encoded frame is then built once and shared by all streams.
   */
  source?: object;
}

const frameCache = new WeakMap<object, { id: string | undefined; bytes: Uint8Array }>();
const encoder = new TextEncoder();

/** The encoded frame, shared across streams when `ev.source` says it can be. */
function encodeFrame(ev: SseEvent): Uint8Array {
  if (!ev.source) return encoder.encode(formatSseEvent(ev));
  const hit = frameCache.get(ev.source);
  if (hit && hit.id === ev.id) return hit.bytes;
  const bytes = encoder.encode(formatSseEvent(ev));
  frameCache.set(ev.source, { id: ev.id, bytes });
  return bytes;
}

export const SSE_CONTENT_TYPE = 'text/event-stream';
/** Keep-alive bound: well under the 30 s idle timeouts of common proxies. */
export const DEFAULT_KEEPALIVE_MS = 15_000;

/** One event; multi-line data becomes several `data:` lines; CR/LF in id/event are stripped. */
export function formatSseEvent(ev: SseEvent): string {
  let out = '';
  if (ev.event) out += `event: ${ev.event.replace(/[\r\n]/g, '')}\n`;
  if (ev.id !== undefined) out += `id: ${ev.id.replace(/[\r\n\0]/g, '')}\n`;
  for (const line of ev.data.split(/\r\n|\r|\n/)) out += `data: ${line}\n`;
  return out + '\n';
}

export const SSE_KEEPALIVE_COMMENT = ': keep-alive\n\n';

export interface SseStreamOptions {
  clock: Clock;
  /** @default 15000 */
  keepAliveMs?: number;
  /** Called once when the stream ends for any reason (client gone, source done, error). */
  onClose?: () => void;
  /** Turns an error thrown by the source mid-stream into a final event. */
  errorEvent?: (err: unknown) => SseEvent;
}

/**
 * Where a pump writes: a web ReadableStream controller or a node:http response. `write` returns false
 * when the sink is full; the pump then waits for `drained` before pulling the next batch.
 */
export interface SseSink {
  write(chunk: Uint8Array): boolean;
  /** Resolves when a full sink takes more again, or is gone. */
  drained(): Promise<void>;
  /** The source is done: end the response. */
  end(): void;
}

const KEEPALIVE_BYTES = encoder.encode(SSE_KEEPALIVE_COMMENT);

/**
 * Pulls SSE frames from `source` into `sink`, a batch at a time: each batch is one chunk (one socket
 * write, not one per event), which is what keeps a 100-subscriber fan-out near a bare server. A
 * keep-alive comment goes out every `keepAliveMs`. The returned function is the client going away: it
 * stops the pump and calls the source iterator's `return()` so subscriptions are released.
 */
export function pumpSse(
  source: AsyncIterable<SseEvent[]>,
  sink: SseSink,
  options: SseStreamOptions,
): () => void {
  const keepAliveMs = options.keepAliveMs ?? DEFAULT_KEEPALIVE_MS;
  const iterator = source[Symbol.asyncIterator]();
  let cancelTimer: (() => void) | undefined;
  let closed = false;
  const finish = () => {
    if (closed) return;
    closed = true;
    cancelTimer?.();
    options.onClose?.();
  };
  const arm = () => {
    cancelTimer = options.clock.setTimer(keepAliveMs, () => {
      if (closed) return;
      try {
        sink.write(KEEPALIVE_BYTES);
      } catch {
        return;
      }
      arm();
    });
  };
  arm();
  void (async () => {
    try {
      for (;;) {
        const next = await iterator.next();
        if (next.done || closed) break;
        const batch = next.value;
        let more = true;
        if (batch.length === 1) more = sink.write(encodeFrame(batch[0]!));
        else if (batch.length > 1) more = sink.write(Buffer.concat(batch.map(encodeFrame)));
        if (!more) await sink.drained();
      }
    } catch (err) {
      if (!closed && options.errorEvent) {
        try {
          sink.write(encoder.encode(formatSseEvent(options.errorEvent(err))));
        } catch {
          // sink already gone
        }
      }
    }
    if (!closed) {
      finish();
      try {
        sink.end();
      } catch {
        // already closed by cancel
      }
    }
  })();
  return () => {
    finish();
    void iterator.return?.();
  };
}

/** `pumpSse` into a web byte stream; cancelling the stream (client disconnect) cancels the pump. */
export function sseReadableStream(
  source: AsyncIterable<SseEvent[]>,
  options: SseStreamOptions,
): ReadableStream<Uint8Array> {
  let cancel: (() => void) | undefined;
  return new ReadableStream<Uint8Array>({
    start(controller) {
      // The stream's own queue takes every chunk (write never reports full): whoever reads the stream
      // (hono's node writer) waits for the socket's drain, so backpressure is applied there.
      cancel = pumpSse(
        source,
        {
          write: (chunk) => {
            controller.enqueue(chunk);
            return true;
          },
          drained: () => Promise.resolve(),
          end: () => controller.close(),
        },
        options,
      );
    },
    cancel() {
      cancel?.();
    },
  });
}
