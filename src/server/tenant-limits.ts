import type { Clock } from '../core/clock.ts';
import { configError, TaskplaneError } from '../core/errors.ts';
import type { CompileBudget } from './worker-schema-compiler.ts';

/**
 * Per-tenant fairness on the plane API: one process serves every tenant, so no tenant may take more than
 * its share of the work a request can start. Each bound is per tenant (the API key's tenant) and answers
 * 429 `resource_exhausted` with `Retry-After` past it; nothing is stored for a refused request.
 * docs/security.md lists them with their defaults.
 */
export interface TenantLimitsOptions {
  /**
   * Creates (`POST /v1/tasks`) of one tenant held at once, handled or waiting their turn, body reading
   * and schema compiling included. One more is refused until one finishes. @default 64
   */
  maxCreatesInFlightPerTenant?: number;
  /**
   * Creates of one tenant handled at once while another tenant has creates held; the tenant's further
   * creates wait their turn, unread, until one of its own finishes or the others are done. Tenants then
   * take turns instead of the one with most connections taking the plane. A create that waits for the
   * remote (`Prefer: wait`, `?wait=started`) does not count: it holds no work while it waits. @default 2
   */
  fairCreatesInFlightPerTenant?: number;
  /**
   * Writes (every keyed `POST` under `/v1`) one tenant may make per second, sustained: a token bucket
   * refilled at this rate. 50 a second is 4.3 million tasks a day; what a 2-core plane does while it
   * still answers its other tenants at once. @default 50
   */
  writesPerSecondPerTenant?: number;
  /** Size of the write token bucket: the burst a tenant may send at once after being idle. @default 100 */
  writeBurstPerTenant?: number;
  /**
   * Refused requests (400, 413, 415, 422, 429; and 401 on a webhook route) one tenant may cause per
   * second, sustained, before its next requests wait at the door: a token bucket like the write rate,
   * but past it the tenant's requests are held, unread, until the bucket is back above zero (at most
   * `refusalBurstPerTenant / refusalsPerSecondPerTenant` seconds). A refusal costs the plane little, but
   * a client that sends again at once as many times as it is refused costs as much as the plane can
   * answer; held, it sends at this rate. @default 5
   */
  refusalsPerSecondPerTenant?: number;
  /** Size of the refusal bucket: refusals taken without delay after a quiet spell. @default 20 */
  refusalBurstPerTenant?: number;
  /**
   * Schema compile time one tenant may use per second, sustained, in milliseconds: every compile of an
   * acceptance schema the plane has not compiled yet (a repeat of one is free) is timed and charged to
   * the tenant whose create needed it. Past it, the tenant's creates with a new schema are refused (429)
   * until the bucket is back above zero; its other creates go on. @default 200 (a fifth of a core)
   */
  schemaCompileMsPerSecondPerTenant?: number;
  /** Size of the compile time bucket, in milliseconds: a schema that takes this long compiles after a quiet spell. @default 2000 */
  schemaCompileBurstMsPerTenant?: number;
  /** SSE streams (`/v1/events`, `/v1/tasks/{id}/events`) one tenant may hold open. @default 500 */
  maxStreamsPerTenant?: number;
  /**
   * Sends (socket writes of events) one tenant's SSE streams make per second, together: past it (after a
   * burst of a tenth of a second's worth) each send waits its turn, spread evenly, and what happened
   * meanwhile goes out with it. A tenant's writes then cost the event loop at most this many sends a
   * second, however many streams it holds, and never all of them in one turn. @default 400
   */
  streamSendsPerSecondPerTenant?: number;
  /**
   * Request body bytes one tenant's requests are read at, sustained (every keyed route with a body). Past
   * it the plane reads the tenant's bodies more slowly instead of refusing them: its next chunk waits
   * until the tenant's byte bucket (two seconds' worth) has refilled, and the socket waits with it. A
   * tenant sending bodies without end then costs the event loop this many bytes a second, not as many as
   * its connections carry. @default 2097152 (2 MiB)
   */
  bodyBytesPerSecondPerTenant?: number;
}

export type TenantLimitsConfig = Required<TenantLimitsOptions>;

export const DEFAULT_TENANT_LIMITS: TenantLimitsConfig = {
  maxCreatesInFlightPerTenant: 64,
  fairCreatesInFlightPerTenant: 2,
  writesPerSecondPerTenant: 50,
  writeBurstPerTenant: 100,
  refusalsPerSecondPerTenant: 5,
  refusalBurstPerTenant: 20,
  schemaCompileMsPerSecondPerTenant: 200,
  schemaCompileBurstMsPerTenant: 2000,
  maxStreamsPerTenant: 500,
  streamSendsPerSecondPerTenant: 400,
  bodyBytesPerSecondPerTenant: 2 * 1024 * 1024,
};

/** The limits that are rates (any number > 0); the others count things (integers ≥ 1). */
const RATES = new Set<keyof TenantLimitsConfig>([
  'writesPerSecondPerTenant',
  'bodyBytesPerSecondPerTenant',
  'refusalsPerSecondPerTenant',
  'streamSendsPerSecondPerTenant',
  'schemaCompileMsPerSecondPerTenant',
  'schemaCompileBurstMsPerTenant',
]);

/** The stream send bucket holds this many seconds of the rate: 40 sends at once at the default 400. */
const STREAM_SEND_BURST_SECONDS = 0.1;

/** The byte bucket holds this many seconds of the body rate: a 1 MiB body after a pause is read at once. */
const BODY_BURST_SECONDS = 2;

/** Options → defaults → validated config; a value that is not a positive number names its field. */
export function tenantLimitsConfig(options: TenantLimitsOptions = {}): TenantLimitsConfig {
  const out = { ...DEFAULT_TENANT_LIMITS };
  for (const name of Object.keys(DEFAULT_TENANT_LIMITS) as Array<keyof TenantLimitsConfig>) {
    const value = options[name];
    if (value === undefined) continue;
    const integer = !RATES.has(name);
    if (
      !(typeof value === 'number' && value > 0 && Number.isFinite(value)) ||
      (integer && !Number.isInteger(value))
    )
      throw configError(`limits.${name}`, integer ? 'must be an integer >= 1' : 'must be a number > 0');
    out[name] = value;
  }
  return out;
}

/** The 429 every limit answers: the limit's name in the message, when to come back in `Retry-After`. */
export function resourceExhausted(message: string, limit: string, retryAfterSeconds: number): TaskplaneError {
  return new TaskplaneError('resource_exhausted', `${message} (limit ${limit})`, {
    retryable: true,
    details: { retryAfterSeconds: Math.max(1, Math.ceil(retryAfterSeconds)) },
  });
}

/**
 * A token bucket per key: `rate` tokens a second up to `burst`. `take` may leave it in debt (the body
 * bytes of a chunk already read); the debt is how long the taker waits.
 */
class TokenBuckets {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    private readonly rate: number,
    private readonly burst: number,
  ) {}

  /**
   * Takes `n` tokens of `key`; with `whole`, only when it has all `n` (else it takes none). Returns the
   * tokens left after taking (below zero: in debt), or before, when none were taken.
   */
  take(
    key: string,
    n: number,
    now: number,
    whole: boolean,
    floor = -Infinity,
  ): { taken: boolean; tokens: number } {
    const bucket = this.refilled(key, now);
    const taken = !whole || bucket.tokens >= n;
    if (taken) bucket.tokens = Math.max(floor, bucket.tokens - n);
    this.buckets.set(key, bucket);
    if (this.buckets.size > MAX_TRACKED) this.forgetFull(now);
    return { taken, tokens: bucket.tokens };
  }

  /** The tokens `key` has now (below zero: in debt); takes none. */
  peek(key: string, now: number): number {
    const bucket = this.buckets.get(key);
    if (!bucket) return this.burst;
    return Math.min(this.burst, bucket.tokens + (Math.max(0, now - bucket.at) * this.rate) / 1000);
  }

  private refilled(key: string, now: number): { tokens: number; at: number } {
    const bucket = this.buckets.get(key) ?? { tokens: this.burst, at: now };
    // A clock that stepped back refills nothing rather than draining the bucket.
    bucket.tokens = Math.min(this.burst, bucket.tokens + (Math.max(0, now - bucket.at) * this.rate) / 1000);
    bucket.at = now;
    return bucket;
  }

  /** Entries of keys idle long enough to have refilled are as good as none. */
  private forgetFull(now: number): void {
    for (const [key, b] of this.buckets)
      if (b.tokens + ((now - b.at) * this.rate) / 1000 >= this.burst) this.buckets.delete(key);
  }
}

/**
 * The counters behind TenantLimitsOptions, in this process's memory (several planes sharing a database
 * each enforce them on their own share of the traffic). Entries of idle tenants are dropped, so a tenant
 * count does not grow memory: a slot counter at zero is deleted, a full bucket is as good as none.
 */
export class TenantLimits implements CompileBudget {
  readonly config: TenantLimitsConfig;
  private readonly creates = new Map<string, number>();
  private readonly streams = new Map<string, number>();
  /** Creates of each tenant being handled under the fair share (a subset of `creates`). */
  private readonly running = new Map<string, number>();
  /** Creates of each tenant waiting their turn, oldest first: each starts its create when called. */
  private readonly turns = new Map<string, Array<() => void>>();
  /** Requests of each key held at the door (admit) now. */
  private readonly held = new Map<string, number>();
  private readonly writes: TokenBuckets;
  private readonly bodyBytes: TokenBuckets;
  private readonly refusals: TokenBuckets;
  private readonly compileMs: TokenBuckets;
  private readonly streamSends: TokenBuckets;

  constructor(
    private readonly clock: Clock,
    options: TenantLimitsOptions = {},
  ) {
    this.config = tenantLimitsConfig(options);
    this.writes = new TokenBuckets(this.config.writesPerSecondPerTenant, this.config.writeBurstPerTenant);
    const byteRate = this.config.bodyBytesPerSecondPerTenant;
    this.bodyBytes = new TokenBuckets(byteRate, byteRate * BODY_BURST_SECONDS);
    this.refusals = new TokenBuckets(
      this.config.refusalsPerSecondPerTenant,
      this.config.refusalBurstPerTenant,
    );
    const sendRate = this.config.streamSendsPerSecondPerTenant;
    this.streamSends = new TokenBuckets(sendRate, Math.max(1, sendRate * STREAM_SEND_BURST_SECONDS));
    this.compileMs = new TokenBuckets(
      this.config.schemaCompileMsPerSecondPerTenant,
      this.config.schemaCompileBurstMsPerTenant,
    );
  }

  /** The 429 for a compile of `tenant` while its compile time bucket is in debt (worker-schema-compiler.ts). */
  admitCompile(tenant: string): void {
    const tokens = this.compileMs.peek(tenant, this.clock.now());
    if (tokens >= 0) return;
    const rate = this.config.schemaCompileMsPerSecondPerTenant;
    throw resourceExhausted(
      `too much schema compiling: more than ${rate} ms a second for this tenant; a schema compiled before is not refused`,
      'schemaCompileMsPerSecondPerTenant',
      -tokens / rate,
    );
  }

  /** Charges `ms` of compiling to `tenant` (at most one bucket of debt). */
  chargeCompile(tenant: string, ms: number): void {
    this.compileMs.take(tenant, ms, this.clock.now(), false, -this.config.schemaCompileBurstMsPerTenant);
  }

  /**
   * The door every request of `key` (a tenant, or a webhook route) passes before anything of it is read:
   * at once while the key's refusal bucket holds tokens; past it, a promise that settles once the bucket
   * is back at zero. More than MAX_HELD requests of one key held at once get the 429 at once.
   */
  admit(key: string): Promise<void> | undefined {
    const tokens = this.refusals.peek(key, this.clock.now());
    if (tokens >= 0) return undefined;
    const rate = this.config.refusalsPerSecondPerTenant;
    const held = this.held.get(key) ?? 0;
    if (held >= MAX_HELD)
      throw resourceExhausted(
        `too many refused requests: more than ${rate} per second, and ${MAX_HELD} requests waiting`,
        'refusalsPerSecondPerTenant',
        -tokens / rate,
      );
    this.held.set(key, held + 1);
    const leave = () => {
      const left = (this.held.get(key) ?? 1) - 1;
      if (left <= 0) this.held.delete(key);
      else this.held.set(key, left);
    };
    return this.clock.sleep((-tokens * 1000) / rate).then(leave, (err: unknown) => {
      leave();
      throw err;
    });
  }

  /**
   * Counts a refused request of `key`. The debt is capped at one bucket, so a key's requests wait at
   * most `refusalBurstPerTenant / refusalsPerSecondPerTenant` seconds however many it had refused.
   */
  refused(key: string): void {
    this.refusals.take(key, 1, this.clock.now(), false, -this.config.refusalBurstPerTenant);
  }

  /** Takes one write token of `tenant`, or throws the 429. */
  takeWrite(tenant: string): void {
    const rate = this.config.writesPerSecondPerTenant;
    const { taken, tokens } = this.writes.take(tenant, 1, this.clock.now(), true);
    if (!taken)
      throw resourceExhausted(
        `too many writes: more than ${rate} per second for this tenant`,
        'writesPerSecondPerTenant',
        (1 - tokens) / rate,
      );
  }

  /**
   * Counts `bytes` of a body `tenant` sent; resolves once the tenant's body rate allows the next chunk
   * (at once while its bucket holds bytes), so its bodies are read no faster than the limit.
   */
  paceBody(tenant: string, bytes: number): Promise<void> | undefined {
    const { tokens } = this.bodyBytes.take(tenant, bytes, this.clock.now(), false);
    if (tokens >= 0) return undefined;
    return this.clock.sleep((-tokens * 1000) / this.config.bodyBytesPerSecondPerTenant);
  }

  /**
   * A create slot of `tenant`, or the 429; call the returned function once the create is answered. With
   * `fair` (a create that does not wait for the remote), the slot is handed over only in the tenant's
   * turn: while another tenant holds creates, at most `fairCreatesInFlightPerTenant` of this tenant's run
   * and the rest wait, unread, until one of them ends or the other tenants are done.
   */
  enterCreate(tenant: string, fair = true): (() => void) | Promise<() => void> {
    const limit = this.config.maxCreatesInFlightPerTenant;
    const leave = this.enter(this.creates, tenant, limit, () =>
      resourceExhausted(
        `too many creates in flight: this tenant has ${limit} being handled or waiting`,
        'maxCreatesInFlightPerTenant',
        1,
      ),
    );
    if (!fair) return leave;
    let running = false;
    const release = () => {
      if (running) {
        running = false;
        const left = (this.running.get(tenant) ?? 1) - 1;
        if (left <= 0) this.running.delete(tenant);
        else this.running.set(tenant, left);
      }
      leave();
      this.nextTurns();
    };
    const start = () => {
      running = true;
      this.running.set(tenant, (this.running.get(tenant) ?? 0) + 1);
      return release;
    };
    const waiting = this.turns.get(tenant);
    if (!waiting && this.mayRun(tenant)) return start();
    return new Promise((resolve) => {
      if (waiting) waiting.push(() => resolve(start()));
      else this.turns.set(tenant, [() => resolve(start())]);
    });
  }

  /** Whether one more of `tenant`'s creates may run now: below its share, or no other tenant holds any. */
  private mayRun(tenant: string): boolean {
    if ((this.running.get(tenant) ?? 0) < this.config.fairCreatesInFlightPerTenant) return true;
    return this.creates.size === 1 && this.creates.has(tenant);
  }

  /** Starts the waiting creates whose turn it is now. */
  private nextTurns(): void {
    for (const [tenant, waiting] of this.turns) {
      while (waiting.length > 0 && this.mayRun(tenant)) waiting.shift()!();
      if (waiting.length === 0) this.turns.delete(tenant);
    }
  }

  /** A stream slot of `tenant`, or the 429; call the returned function once the stream has ended. */
  openStream(tenant: string): () => void {
    const limit = this.config.maxStreamsPerTenant;
    return this.enter(this.streams, tenant, limit, () =>
      resourceExhausted(`too many open streams: this tenant has ${limit} open`, 'maxStreamsPerTenant', 1),
    );
  }

  /**
   * Counts a send of one of `tenant`'s SSE streams; a promise means send once it settles: past its
   * stream send rate, the tenant's sends are spread out evenly (the k-th in debt waits k / rate seconds)
   * rather than all its streams sending in one turn of the event loop.
   */
  paceStreamSend(tenant: string): Promise<void> | undefined {
    const { tokens } = this.streamSends.take(tenant, 1, this.clock.now(), false);
    if (tokens >= 0) return undefined;
    return this.clock.sleep((-tokens * 1000) / this.config.streamSendsPerSecondPerTenant);
  }

  /** Streams `tenant` holds open now. */
  openStreams(tenant: string): number {
    return this.streams.get(tenant) ?? 0;
  }

  private enter(counts: Map<string, number>, tenant: string, limit: number, refuse: () => Error): () => void {
    const held = counts.get(tenant) ?? 0;
    if (held >= limit) throw refuse();
    counts.set(tenant, held + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (counts.get(tenant) ?? 1) - 1;
      if (left <= 0) counts.delete(tenant);
      else counts.set(tenant, left);
    };
  }
}

/** Requests of one key held at the door at once; past it the next is refused at once (its socket closed). */
const MAX_HELD = 64;

/** Buckets kept before the full ones (keys idle long enough to have refilled) are swept. */
const MAX_TRACKED = 10_000;
