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

export function resumePoint(c: Context): number {
  const raw = c.req.header('last-event-id') ?? c.req.query('after') ?? '0';
  const n = Number(raw);
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
            const events = await o.store.listEvents({ afterSeq: last, tenant: o.tenant, limit: 500, ...(o.envelopeId ? { envelopeId: o.envelopeId } : {}) });
            for (const e of events) {
              await stream.writeSSE({ id: String(e.seq), event: e.type, data: JSON.stringify(o.view ? o.view(e) : e) });
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
