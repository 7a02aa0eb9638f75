import {
  acceptanceLimits,
  type AcceptanceLimits,
  type AcceptanceLimitsOptions,
} from './acceptance-limits.ts';
import { backoffPolicy, type BackoffOptions, type BackoffPolicy } from '../core/backoff.ts';
import { configError } from '../core/errors.ts';

/**
 * Engine options → defaults → validated config. Every default is documented here; units are
 * in the names; a bad value throws a `config` TaskplaneError naming the field (`reconcile.intervalMs: must be > 0`).
 *
 * Which delivery mechanisms the engine uses is configurable because the lab compares configurations
 * (docs/a2a-notes.md, "Delivery mix"): streams and push give latency, reconciliation gives
 * completeness, polling is the fallback when neither fast path is available.
 */
export interface PlaneOptions {
  delivery?: {
    /** Watch each job over the connector's stream (A2A SubscribeToTask) and reattach after drops. @default true */
    stream?: boolean;
    /** Ask the remote to push to `publicUrl` (only when set and the connector can push). @default true */
    push?: boolean;
    /**
     * Poll each job with get(). Also used, whatever this says, for a job that has neither a stream nor
     * push available, so every job has some path besides reconciliation. @default false
     */
    poll?: boolean;
  };
  /** Base URL remotes can reach this plane at; push webhooks go to `<publicUrl>/v1/webhooks/<kind>/<target>`. */
  publicUrl?: string | null;
  /** Per remote call timeout (every connector call also gets the engine's AbortSignal). @default 30000 */
  requestTimeoutMs?: number;
  stream?: {
    /**
     * Reattach backoff after a drop. Full jitter so a network blip does not make every watcher
     * reconnect in the same millisecond. @default { initialIntervalMs: 1000, maximumIntervalMs: 60000 }
     */
    reattach?: BackoffOptions;
    /**
     * When a stream ends while the job waits for input (A2A servers close at INPUT_REQUIRED), resubscribe
     * after this long; 0 parks the watcher until an answer or another source wakes it, leaving the
     * rest to reconciliation (no hot resubscribe loop). @default 0
     */
    waitingRecheckMs?: number;
  };
  poll?: {
    /** First interval; the connector's own guidance (MCP pollIntervalMs) wins when it is larger. @default 15000 */
    intervalMs?: number;
    /** Growth per poll that saw no change (1 = fixed interval). @default 1.5 */
    multiplier?: number;
    /** Largest interval. @default 300000 */
    maximumIntervalMs?: number;
    /** Relative jitter on each interval, in [0, 1): the wait is interval × (1 ± ratio). @default 0.1 */
    jitterRatio?: number;
    /** Stop polling a job this long after creation (reconciliation still covers it); null = never. @default null */
    deadlineMs?: number | null;
    /** Backoff after a failed poll. @default { initialIntervalMs: 1000, maximumIntervalMs: 60000 } */
    errorBackoff?: BackoffOptions;
  };
  reconcile?: {
    /** Run reconciliation at all. @default true */
    enabled?: boolean;
    /** One paged list call per target per interval (ten to fifteen minutes is the usual advice). @default 600000 */
    intervalMs?: number;
    /** Page size asked of listChanged. @default 100 */
    pageSize?: number;
    /**
     * Subtracted from the previous round's start when asking for changes since then, to absorb clock
     * skew between us and the remote. @default 5000
     */
    sinceSkewMs?: number;
    /** Expected job duration when the create request gives none. @default 900000 */
    defaultExpectedDurationMs?: number;
    /** A job past expected duration + this margin is an orphan and is fetched one by one. @default 300000 */
    orphanMarginMs?: number;
    /** A job whose start was never confirmed is retried by reconciliation after this long. @default 30000 */
    startGraceMs?: number;
    /** Lease on a target's reconciliation so several planes sharing a store do not all list. @default intervalMs */
    leaseTtlMs?: number;
    /**
     * The most jobs one round asks about one by one, per target (a protocol with no list, MCP, asks per
     * task). Only jobs not heard of within `intervalMs` are asked about, the longest-unchecked first;
     * those past the bound wait for the next round. @default 500
     */
    maxFetchesPerRound?: number;
    /** How many of a round's one-by-one reads are in flight at once. @default 8 */
    fetchConcurrency?: number;
  };
  /**
   * What to do when the remote no longer knows a job we created (TaskNotFound on our own task):
   * `resubmit` starts it again with the same messageId and keeps tracking it on the same envelope;
   * `escalate` marks it `lost` for a person. It also decides for a start whose answer was lost on a
   * remote that can neither find the job nor deduplicate a resend (plane/lost-policy.ts
   * handleStartResponseLost): `resubmit` sends it again, `escalate` leaves it `unknown`. @default 'resubmit'
   */
  lostPolicy?: 'resubmit' | 'escalate';
  /** After this many resubmissions of one job, escalate instead. @default 3 */
  maxResubmits?: number;
  /**
   * What happens to the open jobs of an API key that is revoked while they run: `keep` lets them finish,
   * `cancel` cancels them. Either way each gets an `actor_revoked` event naming the choice. @default 'keep'
   */
  onActorRevoked?: 'keep' | 'cancel';
  /** Retry of a start whose response was lost or failed in transport. @default { initialIntervalMs: 1000, maximumIntervalMs: 60000 } */
  startRetry?: BackoffOptions;
  /**
   * How long after creation a start may keep failing. Past it, a job whose every start attempt was
   * refused before anything was sent (the remote certainly never got it) is `failed` with reason
   * `start_unreachable`; a job whose start may have reached the remote becomes `unknown` and stays
   * reconciled (never invent an outcome). null = retry for ever. @default 600000
   */
  startDeadlineMs?: number | null;
  webhook?: {
    /**
     * `always`: every new delivery fetches authoritative state with get() (webhooks are wake-up
     * signals: docs/a2a-notes.md, "Delivery mix").
     * `when-incomplete`: use the verified payload when it carries a versioned snapshot, fetch
     * otherwise; saves one request per delivery, safe because stale snapshots lose on version. @default 'always'
     */
    fetchState?: 'always' | 'when-incomplete';
    /**
     * A delivery without a usable snapshot for a job whose stream is attached costs no request at first:
     * the stream should carry the same change. When nothing about the job is heard within this bound
     * after the delivery (a stream held open by a proxy but silent, a remote whose stream stalled), the
     * state is fetched after all. @default 2000
     */
    streamGraceMs?: number;
  };
  /** How many CAS retries one observation gets before giving up (each retry re-reads). @default 20 */
  maxObserveRetries?: number;
  /** Spend caps per tenant in the remote's usage unit; an exhausted one refuses new jobs (plane/budgets.ts). @default {} */
  budgets?: {
    tenants?: Record<string, { limit: number; unit: string }>;
    /**
     * Also stop work already running once a budget is used up: when a job's reported usage passes its
     * own budget, or the tenant's jobs together pass the tenant's, every open job concerned is
     * cancelled (actor `budget`), and its true outcome is still recorded. @default false
     */
    cancelRunning?: boolean;
  };
  /**
   * How much output content each envelope keeps (artifact parts, counted by `contentBytes`). Above a cap
   * an artifact keeps its hash, media type and size, and its content is read through from the remote
   * while the remote still has the job.
   */
  results?: {
    /** Content kept per job, all artifacts together; 0 keeps none. @default 1048576 */
    maxTaskBytes?: number;
    /** Content kept per artifact. @default 1048576 */
    maxArtifactBytes?: number;
  };
  /** Per-job watch leases between planes sharing one store (plane/watch-leases.ts). */
  watch?: {
    /**
     * `auto`: on when the store can be shared by several processes (`capabilities.multiProcess`:
     * PostgreSQL, an SQLite file), off for memory. `on` / `off` force it. @default 'auto'
     */
    leases?: 'auto' | 'on' | 'off';
    /** A dead plane's jobs are taken over this long after its last renewal (renewed every ttl/3). @default 30000 */
    leaseTtlMs?: number;
    /** How often a plane offers to take over jobs nobody watches. @default leaseTtlMs */
    adoptIntervalMs?: number;
  };
  /** Caps on callers' acceptance schemas (plane/acceptance-limits.ts has each default). */
  acceptance?: AcceptanceLimitsOptions;
}

export interface PlaneConfig {
  delivery: { stream: boolean; push: boolean; poll: boolean };
  publicUrl: string | null;
  requestTimeoutMs: number;
  stream: { reattach: BackoffPolicy; waitingRecheckMs: number };
  poll: {
    intervalMs: number;
    multiplier: number;
    maximumIntervalMs: number;
    jitterRatio: number;
    deadlineMs: number | null;
    errorBackoff: BackoffPolicy;
  };
  reconcile: {
    enabled: boolean;
    intervalMs: number;
    pageSize: number;
    sinceSkewMs: number;
    defaultExpectedDurationMs: number;
    orphanMarginMs: number;
    startGraceMs: number;
    leaseTtlMs: number;
    maxFetchesPerRound: number;
    fetchConcurrency: number;
  };
  lostPolicy: 'resubmit' | 'escalate';
  maxResubmits: number;
  onActorRevoked: 'keep' | 'cancel';
  startRetry: BackoffPolicy;
  startDeadlineMs: number | null;
  webhook: { fetchState: 'always' | 'when-incomplete'; streamGraceMs: number };
  maxObserveRetries: number;
  watch: { leases: 'auto' | 'on' | 'off'; leaseTtlMs: number; adoptIntervalMs: number };
  budgets: { tenants: Record<string, { limit: number; unit: string }>; cancelRunning: boolean };
  acceptance: AcceptanceLimits;
  results: { maxTaskBytes: number; maxArtifactBytes: number };
}

function positive(field: string, value: number): number {
  if (!(Number.isFinite(value) && value > 0)) throw configError(field, 'must be a number > 0');
  return value;
}

function nonNegative(field: string, value: number): number {
  if (!(Number.isFinite(value) && value >= 0)) throw configError(field, 'must be a number >= 0');
  return value;
}

function intInRange(field: string, value: number, min: number, max: number): number {
  if (!(Number.isInteger(value) && value >= min && value <= max))
    throw configError(field, `must be an integer in ${min}..${max}`);
  return value;
}

function bool(field: string, value: unknown): boolean {
  if (typeof value !== 'boolean') throw configError(field, 'must be true or false');
  return value;
}

function tenantBudgets(
  input: Record<string, { limit: number; unit: string }>,
): Record<string, { limit: number; unit: string }> {
  const out: Record<string, { limit: number; unit: string }> = {};
  for (const [tenant, b] of Object.entries(input)) {
    const field = `budgets.tenants.${tenant}`;
    if (!b || typeof b.unit !== 'string' || b.unit === '') throw configError(field, 'must be {limit, unit}');
    out[tenant] = { limit: positive(`${field}.limit`, b.limit), unit: b.unit };
  }
  return out;
}

export function planeConfig(options: PlaneOptions = {}): PlaneConfig {
  const d = options.delivery ?? {};
  const s = options.stream ?? {};
  const p = options.poll ?? {};
  const r = options.reconcile ?? {};
  const publicUrl = options.publicUrl ?? null;
  if (publicUrl !== null && !/^https?:\/\/[^/]+/.test(publicUrl)) {
    throw configError('publicUrl', 'must be an http(s) URL');
  }
  const intervalMs = positive('reconcile.intervalMs', r.intervalMs ?? 600_000);
  const lostPolicy = options.lostPolicy ?? 'resubmit';
  if (lostPolicy !== 'resubmit' && lostPolicy !== 'escalate') {
    throw configError('lostPolicy', "must be 'resubmit' or 'escalate'");
  }
  const fetchState = options.webhook?.fetchState ?? 'always';
  if (fetchState !== 'always' && fetchState !== 'when-incomplete') {
    throw configError('webhook.fetchState', "must be 'always' or 'when-incomplete'");
  }
  const jitterRatio = nonNegative('poll.jitterRatio', p.jitterRatio ?? 0.1);
  if (jitterRatio >= 1) throw configError('poll.jitterRatio', 'must be < 1');
  const pollInterval = positive('poll.intervalMs', p.intervalMs ?? 15_000);
  const pollMax = positive('poll.maximumIntervalMs', p.maximumIntervalMs ?? 300_000);
  if (pollMax < pollInterval) throw configError('poll.maximumIntervalMs', 'must be >= poll.intervalMs');
  const multiplier = p.multiplier ?? 1.5;
  if (!(multiplier >= 1)) throw configError('poll.multiplier', 'must be >= 1');
  const deadlineMs = p.deadlineMs ?? null;
  if (deadlineMs !== null) positive('poll.deadlineMs', deadlineMs);
  const onActorRevoked = options.onActorRevoked ?? 'keep';
  if (onActorRevoked !== 'keep' && onActorRevoked !== 'cancel')
    throw configError('onActorRevoked', "must be 'keep' or 'cancel'");
  const maxResubmits = options.maxResubmits ?? 3;
  if (!Number.isInteger(maxResubmits) || maxResubmits < 0)
    throw configError('maxResubmits', 'must be an integer >= 0');
  const maxObserveRetries = options.maxObserveRetries ?? 20;
  if (!Number.isInteger(maxObserveRetries) || maxObserveRetries < 1) {
    throw configError('maxObserveRetries', 'must be an integer >= 1');
  }
  const pageSize = r.pageSize ?? 100;
  if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > 1000) {
    throw configError('reconcile.pageSize', 'must be an integer in 1..1000');
  }
  const w = options.watch ?? {};
  const leases = w.leases ?? 'auto';
  if (leases !== 'auto' && leases !== 'on' && leases !== 'off')
    throw configError('watch.leases', "must be 'auto', 'on' or 'off'");
  const leaseTtlMs = positive('watch.leaseTtlMs', w.leaseTtlMs ?? 30_000);
  const defaultBackoff: BackoffOptions = { initialIntervalMs: 1000, maximumIntervalMs: 60_000 };
  return {
    delivery: {
      stream: bool('delivery.stream', d.stream ?? true),
      push: bool('delivery.push', d.push ?? true),
      poll: bool('delivery.poll', d.poll ?? false),
    },
    publicUrl: publicUrl?.replace(/\/+$/, '') ?? null,
    requestTimeoutMs: positive('requestTimeoutMs', options.requestTimeoutMs ?? 30_000),
    stream: {
      reattach: backoffPolicy({ ...defaultBackoff, ...s.reattach }, 'stream.reattach.'),
      waitingRecheckMs: nonNegative('stream.waitingRecheckMs', s.waitingRecheckMs ?? 0),
    },
    poll: {
      intervalMs: pollInterval,
      multiplier,
      maximumIntervalMs: pollMax,
      jitterRatio,
      deadlineMs,
      errorBackoff: backoffPolicy({ ...defaultBackoff, ...p.errorBackoff }, 'poll.errorBackoff.'),
    },
    reconcile: {
      enabled: bool('reconcile.enabled', r.enabled ?? true),
      intervalMs,
      pageSize,
      sinceSkewMs: nonNegative('reconcile.sinceSkewMs', r.sinceSkewMs ?? 5000),
      defaultExpectedDurationMs: positive(
        'reconcile.defaultExpectedDurationMs',
        r.defaultExpectedDurationMs ?? 900_000,
      ),
      orphanMarginMs: nonNegative('reconcile.orphanMarginMs', r.orphanMarginMs ?? 300_000),
      startGraceMs: nonNegative('reconcile.startGraceMs', r.startGraceMs ?? 30_000),
      leaseTtlMs: positive('reconcile.leaseTtlMs', r.leaseTtlMs ?? intervalMs),
      maxFetchesPerRound: intInRange('reconcile.maxFetchesPerRound', r.maxFetchesPerRound ?? 500, 1, 100_000),
      fetchConcurrency: intInRange('reconcile.fetchConcurrency', r.fetchConcurrency ?? 8, 1, 64),
    },
    lostPolicy,
    maxResubmits,
    onActorRevoked,
    startRetry: backoffPolicy({ ...defaultBackoff, ...options.startRetry }, 'startRetry.'),
    startDeadlineMs:
      options.startDeadlineMs === null
        ? null
        : positive('startDeadlineMs', options.startDeadlineMs ?? 600_000),
    webhook: {
      fetchState,
      streamGraceMs: nonNegative('webhook.streamGraceMs', options.webhook?.streamGraceMs ?? 2_000),
    },
    maxObserveRetries,
    watch: {
      leases,
      leaseTtlMs,
      adoptIntervalMs: positive('watch.adoptIntervalMs', w.adoptIntervalMs ?? leaseTtlMs),
    },
    budgets: {
      tenants: tenantBudgets(options.budgets?.tenants ?? {}),
      cancelRunning: bool('budgets.cancelRunning', options.budgets?.cancelRunning ?? false),
    },
    acceptance: acceptanceLimits(options.acceptance),
    results: {
      maxTaskBytes: nonNegative('results.maxTaskBytes', options.results?.maxTaskBytes ?? 1024 * 1024),
      maxArtifactBytes: nonNegative(
        'results.maxArtifactBytes',
        options.results?.maxArtifactBytes ?? 1024 * 1024,
      ),
    },
  };
}
