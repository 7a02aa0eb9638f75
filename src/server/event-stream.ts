import type { Context } from 'hono';
import { streamSSE } from 'hono/streaming';
import type { EnvelopeEvent } from '../core/envelope.ts';
import type { Store } from '../store/store.ts';

/**
 * Server-sent events from the durable event log: every event has `id: <seq>`, so a client that
 * reconnects with `Last-Event-ID` (or `?after=`) resumes exactly after the last event it saw. The
 * store's onChange only wakes the loop; the loop always reads the log, so a missed wake-up loses
 * nothing (and a periodic keep-alive read covers even that).
 */
export interface EventStreamOptions {
  store: Store;
  tenant: string;
  envelopeId?: string;
  afterSeq: number;
  /** Comment frame interval so proxies do not cut an idle stream (30–60 s idle limits are common). @default 15000 */
  keepAliveMs?: number;
  /** Ends the stream (server shutdown). */
  signal?: AbortSignal;
  /** Maps an event before it is sent (drop fields the client should not see). */
  view?: (e: EnvelopeEvent) => unknown;
}

/**
 * The highest event sequence number in the log (0 when empty), found with O(log n) one-row reads
 * (`seq > k LIMIT 1`, a primary-key range probe on every backend) instead of a new Store method or a
 * scan: gallop up from a known seq until nothing lies beyond, then bisect. Across tenants on purpose:
 * it is only a starting point, and another tenant's events below it are never sent anyway.
 */
export async function latestEventSeq(store: Store): Promise<number> {
  const after = async (k: number) => (await store.listEvents({ afterSeq: k, limit: 1 }))[0]?.seq;
  let known = await after(0);
  if (known === undefined) return 0;
  // Invariant: `known` exists and nothing exists beyond `bound` (once found).
  let bound: number | null = null;
  for (let step = 1024; bound === null; step *= 2) {
    const probe = known + step;
    const next = await after(probe);
    if (next === undefined) bound = probe;
    else known = next;
  }
  while (known < bound) {
    const mid = Math.floor((known + bound) / 2);
    const next = await after(mid);
    if (next === undefined) bound = mid;
    else known = next;
  }
  return known;
}

/**
 * Where a stream starts: `Last-Event-ID` (an EventSource reconnecting) wins, then `?after=<seq>`, then
 * `?from=now` (only what happens from here on: a client that loaded the current state by the API
 * needs no replay of the whole log), else the beginning of the log.
 */
export async function resumePoint(c: Context, store: Store): Promise<number> {
  const raw = c.req.header('last-event-id') ?? c.req.query('after');
  if (raw === undefined && c.req.query('from') === 'now') return latestEventSeq(store);
  const n = Number(raw ?? '0');
  return Number.isInteger(n) && n >= 0 ? n : 0;
}

export function eventStream(c: Context, o: EventStreamOptions): Response {
  return streamSSE(c, async (stream) => {
    let last = o.afterSeq;
    let dirty = true;
    let wake: (() => void) | null = null;
    let closed = false;
    const poke = () => {
      dirty = true;
      wake?.();
    };
    const unsubscribe = o.store.onChange((notice) => {
      if (notice.kind === 'envelope' && (!o.envelopeId || notice.id === o.envelopeId)) poke();
    });
    const close = () => {
      closed = true;
      wake?.();
    };
    stream.onAbort(close);
    o.signal?.addEventListener('abort', close, { once: true });
    try {
      while (!closed) {
        if (dirty) {
          dirty = false;
          for (;;) {
            const events = await o.store.listEvents({
              afterSeq: last,
              tenant: o.tenant,
              limit: 500,
              ...(o.envelopeId ? { envelopeId: o.envelopeId } : {}),
            });
            for (const e of events) {
              await stream.writeSSE({
                id: String(e.seq),
                event: e.type,
                data: JSON.stringify(o.view ? o.view(e) : e),
              });
              last = e.seq;
            }
            if (events.length < 500 || closed) break;
          }
          continue;
        }
        const timedOut = await new Promise<boolean>((resolve) => {
          const timer = setTimeout(() => resolve(true), o.keepAliveMs ?? 15_000);
          wake = () => {
            clearTimeout(timer);
            resolve(false);
          };
          if (dirty || closed) wake();
        });
        wake = null;
        if (timedOut && !closed) {
          await stream.write(': keep-alive\n\n');
          dirty = true;
        }
      }
    } finally {
      unsubscribe();
      o.signal?.removeEventListener('abort', close);
    }
  });
}
