import type { Clock } from '../core/clock.ts';
import { configError, TaskplaneError } from '../core/errors.ts';

/**
 * Per-tenant fairness on the plane API: one process serves every tenant, so no tenant may take more than
 * its share of the work a request can start. Each bound is per tenant (the API key's tenant) and answers
 * 429 `resource_exhausted` with `Retry-After` past it; nothing is stored for a refused request.
 * docs/security.md lists them with their defaults.
 */
export interface TenantLimitsOptions {
  /**
   * Creates (`POST /v1/tasks`) of one tenant handled at once, body reading and schema compiling
   * included. One more is refused until one finishes. @default 64
   */
  maxCreatesInFlightPerTenant?: number;
  /**
   * Writes (every keyed `POST` under `/v1`) one tenant may make per second, sustained: a token bucket
   * refilled at this rate. @default 200
   */
  writesPerSecondPerTenant?: number;
  /** Size of the write token bucket: the burst a tenant may send at once after being idle. @default 400 */
  writeBurstPerTenant?: number;
  /** SSE streams (`/v1/events`, `/v1/tasks/{id}/events`) one tenant may hold open. @default 500 */
  maxStreamsPerTenant?: number;
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
  writesPerSecondPerTenant: 200,
  writeBurstPerTenant: 400,
  maxStreamsPerTenant: 500,
  bodyBytesPerSecondPerTenant: 2 * 1024 * 1024,
};

/** The byte bucket holds this many seconds of the body rate: a 1 MiB body after a pause is read at once. */
const BODY_BURST_SECONDS = 2;

/** Options → defaults → validated config; a value that is not a positive number names its field. */
export function tenantLimitsConfig(options: TenantLimitsOptions = {}): TenantLimitsConfig {
  const out = { ...DEFAULT_TENANT_LIMITS };
  for (const name of Object.keys(DEFAULT_TENANT_LIMITS) as Array<keyof TenantLimitsConfig>) {
    const value = options[name];
    if (value === undefined) continue;
    const integer = name !== 'writesPerSecondPerTenant' && name !== 'bodyBytesPerSecondPerTenant';
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
  take(key: string, n: number, now: number, whole: boolean): { taken: boolean; tokens: number } {
    const bucket = this.buckets.get(key) ?? { tokens: this.burst, at: now };
    // A clock that stepped back refills nothing rather than draining the bucket.
    bucket.tokens = Math.min(this.burst, bucket.tokens + (Math.max(0, now - bucket.at) * this.rate) / 1000);
    bucket.at = now;
    const taken = !whole || bucket.tokens >= n;
    if (taken) bucket.tokens -= n;
    this.buckets.set(key, bucket);
    if (this.buckets.size > MAX_TRACKED) this.forgetFull(now);
    return { taken, tokens: bucket.tokens };
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
export class TenantLimits {
  readonly config: TenantLimitsConfig;
  private readonly creates = new Map<string, number>();
  private readonly streams = new Map<string, number>();
  private readonly writes: TokenBuckets;
  private readonly bodyBytes: TokenBuckets;

  constructor(
    private readonly clock: Clock,
    options: TenantLimitsOptions = {},
  ) {
    this.config = tenantLimitsConfig(options);
    this.writes = new TokenBuckets(this.config.writesPerSecondPerTenant, this.config.writeBurstPerTenant);
    const byteRate = this.config.bodyBytesPerSecondPerTenant;
    this.bodyBytes = new TokenBuckets(byteRate, byteRate * BODY_BURST_SECONDS);
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

  /** A create slot of `tenant`, or the 429; call the returned function once the create is answered. */
  enterCreate(tenant: string): () => void {
    const limit = this.config.maxCreatesInFlightPerTenant;
    return this.enter(this.creates, tenant, limit, () =>
      resourceExhausted(
        `too many creates in flight: this tenant has ${limit} being handled`,
        'maxCreatesInFlightPerTenant',
        1,
      ),
    );
  }

  /** A stream slot of `tenant`, or the 429; call the returned function once the stream has ended. */
  openStream(tenant: string): () => void {
    const limit = this.config.maxStreamsPerTenant;
    return this.enter(this.streams, tenant, limit, () =>
      resourceExhausted(`too many open streams: this tenant has ${limit} open`, 'maxStreamsPerTenant', 1),
    );
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

/** Buckets kept before the full ones (keys idle long enough to have refilled) are swept. */
const MAX_TRACKED = 10_000;
