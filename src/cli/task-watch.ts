import { createParser } from 'eventsource-parser';
import { TaskplaneError } from '../core/errors.ts';

/**
 * `tasks watch`: follows the plane's SSE event log and survives the plane going away (a restart, a
 * deploy, a dropped connection). Every event carries `id: <seq>`; on reconnect the stream is asked to
 * resume after the last one seen (`Last-Event-ID`), so nothing is missed or shown twice, and the
 * watcher says on stderr that it lost and regained the stream.
 */
export interface WatchedEvent {
  seq: number;
  envelopeId: string;
  type: string;
  at: number;
  data: Record<string, unknown>;
}

export interface FollowOptions {
  url: string;
  key: string;
  path: string;
  /** Called per event; returning true ends the watch (the task reached a terminal state). */
  onEvent: (e: WatchedEvent) => boolean;
  /** Lines for the person watching (stderr): lost the stream, reconnected. */
  notice: (line: string) => void;
  /** Give up after failing to reconnect for this long. @default 300000 */
  giveUpAfterMs?: number;
  /** First wait before reconnecting, doubling up to 5 s. @default 500 */
  retryBaseMs?: number;
  /** @default setTimeout-based sleep */
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
}

const MAX_RETRY_MS = 5000;

/** One connection: resolves true when the watch is done, false when the stream ended early. */
async function readOnce(
  o: FollowOptions,
  lastSeq: { value: number | null },
  onOpen: () => void,
): Promise<boolean> {
  const headers: Record<string, string> = { authorization: `Bearer ${o.key}`, accept: 'text/event-stream' };
  if (lastSeq.value !== null) headers['last-event-id'] = String(lastSeq.value);
  const res = await fetch(o.url + o.path, { headers });
  if (!res.ok || !res.body) {
    const body = (await res.json().catch(() => null)) as { error?: { message?: string } } | null;
    const err = new TaskplaneError(
      'remote_error',
      `${res.status}: cannot watch${body?.error?.message ? `: ${body.error.message}` : ''}`,
    );
    // A 5xx (or the 503 of a plane still starting) is worth retrying; a 4xx (bad key, unknown task) is not.
    throw Object.assign(err, { retryable: res.status >= 500 });
  }
  onOpen();
  let done = false;
  const parser = createParser({
    onEvent: (ev) => {
      if (done) return;
      const e = JSON.parse(ev.data) as WatchedEvent;
      if (ev.id !== undefined && /^\d+$/.test(ev.id)) lastSeq.value = Number(ev.id);
      done = o.onEvent(e);
    },
  });
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  try {
    while (!done) {
      const { value, done: end } = await reader.read();
      if (end) break;
      parser.feed(dec.decode(value, { stream: true }));
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
  return done;
}

/** The connection failing (fetch's TypeError: "fetch failed", "terminated") or a 5xx, not a refusal. */
function retryable(err: unknown): boolean {
  return err instanceof TypeError || (err as { retryable?: boolean }).retryable === true;
}

export async function followEvents(o: FollowOptions): Promise<void> {
  const sleep = o.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const now = o.now ?? Date.now;
  const giveUpAfterMs = o.giveUpAfterMs ?? 300_000;
  const base = o.retryBaseMs ?? 500;
  const lastSeq: { value: number | null } = { value: null };
  let connected = false;
  let lostAt: number | null = null;
  let wait = base;
  const onOpen = () => {
    connected = true;
    if (lostAt === null) return;
    o.notice(
      lastSeq.value !== null
        ? `taskplane: reconnected; resuming after event ${lastSeq.value} (Last-Event-ID)`
        : 'taskplane: reconnected',
    );
    lostAt = null;
    wait = base;
  };
  for (;;) {
    try {
      if (await readOnce(o, lastSeq, onOpen)) return;
    } catch (err) {
      if (!retryable(err) || !connected)
        throw err instanceof TaskplaneError
          ? err
          : new TaskplaneError('unavailable', `cannot reach ${o.url} (is \`taskplane serve\` running?)`);
    }
    if (lostAt === null) {
      lostAt = now();
      o.notice('taskplane: lost the event stream (plane restarting?); reconnecting');
    } else if (now() - lostAt >= giveUpAfterMs) {
      throw new TaskplaneError(
        'unavailable',
        `cannot reach ${o.url} for ${Math.round(giveUpAfterMs / 1000)} s; gave up watching`,
      );
    }
    await sleep(wait);
    wait = Math.min(wait * 2, MAX_RETRY_MS);
  }
}
