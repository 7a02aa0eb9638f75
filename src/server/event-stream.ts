import type { Context } from 'hono';
import { streamSSE } from 'hono/streaming';
import type { EnvelopeEvent } from '../core/envelope.ts';
import type { ChangeNotice, EnvelopeStore } from '../store/store.ts';

/**
 * Server-sent events from the durable event log: every event has `id: <seq>`, so a client that
 * reconnects with `Last-Event-ID` (or `?after=`) resumes exactly after the last event it saw. The
 * store's onChange only wakes the loop; the loop always reads the log, so a missed wake-up loses
 * nothing (and a periodic keep-alive read covers even that).
 */
export interface EventStreamOptions {
  store: EnvelopeStore;
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
export async function latestEventSeq(store: EnvelopeStore): Promise<number> {
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
export async function resumePoint(c: Context, store: EnvelopeStore): Promise<number> {
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
    const unsubscribe = streamWakeups(o.store).add(o.envelopeId ?? null, o.tenant, poke);
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
            const events = await streamWakeups(o.store).read(o.tenant, o.envelopeId ?? null, last);
            for (const e of events) {
              await stream.writeSSE({
                id: String(e.seq),
                event: e.type,
                data: o.view ? JSON.stringify(o.view(e)) : eventJson(e),
              });
              last = e.seq;
            }
            if (events.length < PAGE || closed) break;
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

/**
 * The change fan-out of a store's open streams: one store subscription, and each change wakes only the
 * streams that can see it, those of its envelope and those of its envelope's tenant. Waking every
 * stream on every change made each write cost one log read per open stream, whoever's it was.
 *
 * A change notice names the envelope but not its tenant, so the tenant is looked up once per envelope
 * and remembered (an envelope never changes tenant); only when tenant-wide streams are open.
 */
class StreamWakeups {
  private readonly byEnvelope = new Map<string, Set<() => void>>();
  private readonly byTenant = new Map<string, Set<() => void>>();
  private readonly tenantOf = new Map<string, string>();
  private readonly lookups = new Map<string, Promise<string | null>>();
  private unsubscribe: (() => void) | null = null;

  private readonly reads = new Map<string, Promise<EnvelopeEvent[]>>();

  constructor(private readonly store: EnvelopeStore) {}

  /**
   * The next page of the log after `afterSeq` for a tenant (or one envelope of it). Streams woken by
   * the same change ask for the same page at once; they share one read while it is in flight, so one
   * write costs one read per distinct position, not one per stream. The events are shared: never mutated.
   */
  read(tenant: string, envelopeId: string | null, afterSeq: number): Promise<EnvelopeEvent[]> {
    const key = `${afterSeq}\u0000${tenant}\u0000${envelopeId ?? ''}`;
    let pending = this.reads.get(key);
    if (!pending) {
      pending = this.store.listEvents({
        afterSeq,
        tenant,
        limit: PAGE,
        ...(envelopeId !== null ? { envelopeId } : {}),
      });
      this.reads.set(key, pending);
      const forget = () => this.reads.delete(key);
      pending.then(forget, forget);
    }
    return pending;
  }

  /** Calls `wake` on each change of `envelopeId`, or (null) of any envelope of `tenant`. */
  add(envelopeId: string | null, tenant: string, wake: () => void): () => void {
    const [index, key] = envelopeId === null ? [this.byTenant, tenant] : [this.byEnvelope, envelopeId];
    let set = index.get(key);
    if (!set) index.set(key, (set = new Set()));
    // Wrapped, so one function added twice is woken twice and removed once per add.
    const entry = () => wake();
    set.add(entry);
    this.unsubscribe ??= this.store.onChange((n) => this.notice(n));
    return () => {
      set.delete(entry);
      if (set.size === 0 && index.get(key) === set) index.delete(key);
      if (this.byEnvelope.size === 0 && this.byTenant.size === 0) {
        this.unsubscribe?.();
        this.unsubscribe = null;
      }
    };
  }

  private notice(n: ChangeNotice): void {
    if (n.kind !== 'envelope') return;
    wakeAll(this.byEnvelope.get(n.id));
    if (this.byTenant.size === 0) return;
    const tenant = this.tenantOf.get(n.id);
    if (tenant !== undefined) wakeAll(this.byTenant.get(tenant));
    else
      void this.lookup(n.id).then((t) => {
        if (t !== null) wakeAll(this.byTenant.get(t));
        // Unknown tenant: wake them all; a wake-up that finds nothing new costs one read, a lost one
        // costs latency until the next keep-alive read.
        else for (const set of this.byTenant.values()) wakeAll(set);
      });
  }

  private lookup(id: string): Promise<string | null> {
    let pending = this.lookups.get(id);
    if (!pending) {
      pending = this.store.getEnvelope(id).then(
        (env) => {
          this.lookups.delete(id);
          if (!env) return null;
          if (this.tenantOf.size >= TENANT_CACHE_SIZE) {
            // Oldest first: Map keeps insertion order.
            this.tenantOf.delete(this.tenantOf.keys().next().value!);
          }
          this.tenantOf.set(id, env.tenant);
          return env.tenant;
        },
        () => {
          this.lookups.delete(id);
          return null;
        },
      );
      this.lookups.set(id, pending);
    }
    return pending;
  }
}

const PAGE = 500;

/** JSON of an event, once per event object: a shared read hands every woken stream the same objects. */
const eventJsonCache = new WeakMap<EnvelopeEvent, string>();

function eventJson(e: EnvelopeEvent): string {
  let text = eventJsonCache.get(e);
  if (text === undefined) eventJsonCache.set(e, (text = JSON.stringify(e)));
  return text;
}

/** Envelopes whose tenant is remembered: the recently changed ones are what later changes touch. */
const TENANT_CACHE_SIZE = 10_000;

function wakeAll(set: Set<() => void> | undefined): void {
  if (!set) return;
  for (const wake of set) wake();
}

const wakeupsByStore = new WeakMap<EnvelopeStore, StreamWakeups>();

function streamWakeups(store: EnvelopeStore): StreamWakeups {
  let w = wakeupsByStore.get(store);
  if (!w) wakeupsByStore.set(store, (w = new StreamWakeups(store)));
  return w;
}
