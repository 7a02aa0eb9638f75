import { ServerResponse } from 'node:http';
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import type { Context } from 'hono';
import { streamSSE } from 'hono/streaming';
import { SystemClock, type Clock } from '../core/clock.ts';
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
  /** Ends the stream too (its API key was revoked). */
  revoked?: AbortSignal;
  /** Called once when the stream has ended, however it ended (frees the tenant's stream slot). */
  onEnd?: () => void;
  /** Least time between two sends of a busy stream; events in between go out together. @default 250 */
  batchMs?: number;
  /**
   * Asked before each send (the plane's is its tenant's stream send rate, tenant-limits.ts): a promise
   * means send once it settles. Only a send asks: a wake-up that finds nothing new costs no turn.
   */
  pace?: () => Promise<void> | undefined;
  /** Time for the batching and the keep-alive. @default a SystemClock */
  clock?: Clock;
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

/** What a stream writes to: hono's web stream (in-process, other runtimes) or node:http's response. */
interface SseSink {
  /** Resolves once the chunk may be followed by more (the socket buffer drained), or at once. */
  write(chunk: Uint8Array): Promise<void> | void;
}

const SSE_HEADERS = {
  'Content-Type': 'text/event-stream',
  'Cache-Control': 'no-cache',
  Connection: 'keep-alive',
};

/**
 * Serves the stream. On @hono/node-server (the plane's server) the frames go straight to node:http's
 * response with its own backpressure, and an event's frame is encoded once for every stream that sends
 * it: hono's web-stream writer costs a TransformStream, a string encode and several promise hops per
 * frame per stream, which a tenant with many streams multiplies by each of its writes
 * (docs/performance.md, "Abuse"). Anywhere else (in-process `app.fetch`) hono's `streamSSE` serves it.
 */
export function eventStream(c: Context, o: EventStreamOptions): Response {
  const env = c.env as { incoming?: unknown; outgoing?: unknown } | undefined;
  const res = env?.outgoing;
  if (res instanceof ServerResponse && !res.headersSent) {
    res.writeHead(200, SSE_HEADERS);
    res.flushHeaders();
    let closed = false;
    const listeners = new Set<() => void>();
    const onClose = () => {
      closed = true;
      for (const fn of listeners) fn();
    };
    if (res.destroyed) closed = true;
    else res.once('close', onClose);
    const sink: SseSink = {
      write(chunk) {
        if (closed || res.writableEnded) return;
        if (res.write(chunk)) return;
        return new Promise<void>((resolve) => {
          const done = () => {
            res.off('drain', done);
            listeners.delete(done);
            resolve();
          };
          res.on('drain', done);
          listeners.add(done);
        });
      },
    };
    void pump(o, sink, (fn) => (closed ? fn() : listeners.add(fn))).finally(() => {
      res.off('close', onClose);
      if (!res.writableEnded) res.end();
    });
    return RESPONSE_ALREADY_SENT;
  }
  return streamSSE(c, (stream) =>
    pump(o, { write: (chunk) => stream.write(chunk).then(() => undefined) }, (fn) => stream.onAbort(fn)),
  );
}

async function pump(o: EventStreamOptions, sink: SseSink, onAbort: (fn: () => void) => void): Promise<void> {
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
  onAbort(close);
  const signals = [o.signal, o.revoked].filter((s): s is AbortSignal => s !== undefined);
  for (const s of signals) {
    if (s.aborted) closed = true;
    else s.addEventListener('abort', close, { once: true });
  }
  const clock = o.clock ?? SYSTEM_CLOCK;
  const batchMs = o.batchMs ?? BATCH_MS;
  // When this stream last sent: a wake-up soon after waits out the rest of BATCH_MS (see below).
  let sentAt = Number.NEGATIVE_INFINITY;
  try {
    while (!closed) {
      if (dirty) {
        // At most batchMs, should the clock have stepped back.
        const rest = Math.min(batchMs, sentAt + batchMs - clock.now());
        if (rest > 0) {
          await new Promise<void>((resolve) => {
            const cancel = clock.setTimer(rest, resolve);
            wake = () => {
              if (!closed) return;
              cancel();
              resolve();
            };
          });
          wake = null;
          if (closed) break;
        }
        dirty = false;
        for (;;) {
          const events = await streamWakeups(o.store).read(o.tenant, o.envelopeId ?? null, last);
          if (events.length > 0 && !closed) {
            const paced = o.pace?.();
            if (paced) {
              await paced;
              if (closed) break;
            }
            // One write per page: a burst of events costs one socket write per stream, not one each.
            const frames = events.map((e) => eventFrame(e, o.view));
            last = events[events.length - 1]!.seq;
            // Only a send starts the interval: a read that found nothing leaves the stream quiet.
            sentAt = clock.now();
            await sink.write(frames.length === 1 ? frames[0]! : Buffer.concat(frames));
          }
          if (events.length < PAGE || closed) break;
        }
        continue;
      }
      const timedOut = await new Promise<boolean>((resolve) => {
        const cancel = clock.setTimer(o.keepAliveMs ?? 15_000, () => resolve(true));
        wake = () => {
          cancel();
          resolve(false);
        };
        if (dirty || closed) wake();
      });
      wake = null;
      if (timedOut && !closed) {
        await sink.write(KEEP_ALIVE);
        dirty = true;
      }
    }
  } finally {
    unsubscribe();
    for (const s of signals) s.removeEventListener('abort', close);
    o.onEnd?.();
  }
}

const KEEP_ALIVE = Buffer.from(': keep-alive\n\n');
const SYSTEM_CLOCK = new SystemClock();

/**
 * A stream sends at once when it has been quiet, and at most once per this interval while its tenant
 * keeps writing: what happened in between goes out in one write. Each send costs a log read and a
 * socket write per stream, so without it a tenant's write rate times its stream count was work for the
 * event loop; with it the work is bounded by the stream count alone (docs/performance.md, "Abuse").
 */
const BATCH_MS = 250;

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

  private readonly reads = new Map<string, { page: Promise<EnvelopeEvent[]>; at: number }>();

  constructor(private readonly store: EnvelopeStore) {}

  /**
   * The next page of the log after `afterSeq` for a tenant (or one envelope of it). Streams woken by
   * the same change ask for the same page, each when its own batch interval ends (separate timers,
   * so not at once): a page read is kept until the store's next change (at most KEPT_PAGE_MS), and one
   * write costs one read
   * per distinct position, not one per stream. Every change notice drops the kept pages before it
   * wakes a stream, so a stream woken by a change never gets a page read before it. The events are
   * shared: never mutated.
   */
  read(tenant: string, envelopeId: string | null, afterSeq: number): Promise<EnvelopeEvent[]> {
    const key = `${afterSeq}\u0000${tenant}\u0000${envelopeId ?? ''}`;
    const now = performance.now();
    const kept = this.reads.get(key);
    let pending = kept && now - kept.at < KEPT_PAGE_MS ? kept.page : undefined;
    if (!pending) {
      pending = this.store.listEvents({
        afterSeq,
        tenant,
        limit: PAGE,
        ...(envelopeId !== null ? { envelopeId } : {}),
      });
      const entry = { page: pending, at: now };
      this.reads.delete(key);
      this.reads.set(key, entry);
      // A failed read is not kept: the next stream asks again.
      pending.catch(() => {
        if (this.reads.get(key) === entry) this.reads.delete(key);
      });
      if (this.reads.size > KEPT_PAGES) this.reads.delete(this.reads.keys().next().value!);
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
        // No subscription, so no notice would drop them: pages are kept only while streams listen.
        this.reads.clear();
      }
    };
  }

  private notice(n: ChangeNotice): void {
    if (n.kind !== 'envelope') return;
    // Kept pages may now miss an event: dropped before any stream is woken (see read).
    this.reads.clear();
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

/** Log pages kept between changes (one per distinct stream position); the oldest goes first past it. */
const KEPT_PAGES = 1_000;

/**
 * A kept page is reused for at most this long (real time), whatever the notices say: a notice lost on
 * the way (another process's, over a dropped LISTEN connection) then costs a stream no more than this,
 * and the keep-alive read still finds what no notice announced.
 */
const KEPT_PAGE_MS = 250;

/**
 * An event's SSE frame (hono's `writeSSE` layout: event, data, id), encoded once per event object: a
 * shared read hands every woken stream the same objects, so a thousand streams send one buffer.
 */
const frameCache = new WeakMap<EnvelopeEvent, Buffer>();

function eventFrame(e: EnvelopeEvent, view: ((e: EnvelopeEvent) => unknown) | undefined): Buffer {
  if (view) return frameOf(e, JSON.stringify(view(e)));
  let frame = frameCache.get(e);
  if (frame === undefined) frameCache.set(e, (frame = frameOf(e, JSON.stringify(e))));
  return frame;
}

/** JSON.stringify leaves no line break in its output, so the data is one `data:` line. */
function frameOf(e: EnvelopeEvent, data: string): Buffer {
  return Buffer.from(`event: ${e.type}\ndata: ${data}\nid: ${e.seq}\n\n`);
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
