import type { ObservationSource } from '../core/envelope.ts';
import { TargetActivity } from './target-activity.ts';

/**
 * Lifecycle signals (docs/a2a-notes.md, "Lifecycle signals"): the failures that are
 * invisible in request metrics because every single call succeeds. Counters live in memory and start
 * at zero with the process, per process and per tenant; the store-derived ones (orphans, input waiting by age) are computed by
 * Plane.signals() from the envelopes themselves, so they survive restarts.
 */

/** Seed 004's definition of a request: every call the client makes. Webhooks received are not requests. */
export type RequestKind = 'start' | 'get' | 'subscribe' | 'list' | 'cancel' | 'answer' | 'register_push';

/** Bounded sample of delays for percentiles; the oldest samples are overwritten. */
class DelaySamples {
  private readonly samples: number[] = [];
  private next = 0;
  count = 0;
  sum = 0;
  max = 0;

  constructor(private readonly capacity = 4096) {}

  add(ms: number): void {
    this.count++;
    this.sum += ms;
    this.max = Math.max(this.max, ms);
    if (this.samples.length < this.capacity) this.samples.push(ms);
    else {
      this.samples[this.next] = ms;
      this.next = (this.next + 1) % this.capacity;
    }
  }

  percentile(p: number): number | null {
    if (this.samples.length === 0) return null;
    const sorted = [...this.samples].sort((a, b) => a - b);
    return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? null;
  }
}

/**
 * Upper bounds, in ms, of the latency histograms /metrics exports: from a push on loopback (tens of ms)
 * to a missed notification found by reconciliation (the default interval is 10 min).
 */
export const LATENCY_BUCKETS_MS = [
  10, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 30_000, 60_000, 300_000, 900_000,
] as const;

/** A histogram as Prometheus wants it: cumulative counts per bound of LATENCY_BUCKETS_MS. */
export interface HistogramSnapshot {
  cumulative: number[];
  count: number;
  sumMs: number;
}

/** Fixed-bucket counts: unlike the sample ring, they never forget, so rates over them are exact. */
class LatencyHistogram {
  private readonly counts = LATENCY_BUCKETS_MS.map(() => 0);
  private count = 0;
  private sum = 0;

  add(ms: number): void {
    this.count++;
    this.sum += ms;
    const i = LATENCY_BUCKETS_MS.findIndex((bound) => ms <= bound);
    if (i >= 0) this.counts[i]!++;
  }

  snapshot(): HistogramSnapshot {
    let running = 0;
    return {
      cumulative: this.counts.map((n) => (running += n)),
      count: this.count,
      sumMs: this.sum,
    };
  }
}

/** The process's latency histograms (operators only; /v1/signals keeps its percentiles). */
export interface LatencyHistograms {
  /** Creation to the remote's first answer to the start (resends included). */
  startLatency: HistogramSnapshot;
  /** The remote's status time to our processing it, per mechanism (the notification delay). */
  notificationDelay: Partial<Record<ObservationSource, HistogramSnapshot>>;
  /** A dropped stream to the first snapshot after reattaching. */
  streamRecovery: HistogramSnapshot;
}

export interface DelayStats {
  count: number;
  meanMs: number | null;
  p50Ms: number | null;
  p99Ms: number | null;
  maxMs: number | null;
}

export interface CounterSignals {
  requests: {
    total: number;
    byKind: Record<RequestKind, number>;
    /** Calls tied to no single job (reconciliation list pages). */
    targetLevel: number;
    /** Jobs this process tracked (created or recovered), the denominator of requests per task. */
    tasksTracked: number;
    /** total / tasksTracked; null before any task. */
    perTask: number | null;
  };
  /** Time from the remote's status timestamp to our processing it, per observation source. */
  observationDelay: Partial<Record<ObservationSource, DelayStats>>;
  duplicatesAbsorbed: { webhook: number; observation: number };
  /** Starts sent with a messageId that was sent before (retries after a lost response, resubmissions). */
  reusedMessageIds: number;
  /** TaskNotFound (not_found) on a job we created: the remote lost state. */
  taskNotFoundOwn: number;
  streamDrops: number;
  reattaches: number;
  resubmitted: number;
  escalated: number;
  webhooksRejected: number;
  reconcileRounds: number;
}

/** Counters that are bumped one at a time; each is also kept per tenant when the job's tenant is known. */
export type CounterName =
  | 'duplicatesWebhook'
  | 'duplicatesObservation'
  | 'reusedMessageIds'
  | 'taskNotFoundOwn'
  | 'streamDrops'
  | 'reattaches'
  | 'resubmitted'
  | 'escalated'
  | 'webhooksRejected'
  | 'reconcileRounds';

/** The job a count is about, when there is one: its tenant decides whose view the count lands in. */
export type CountedJob = { id: string; tenant?: string; target?: string } | null;

/** How many finished jobs keep their request count for requestsFor (the lab and tests read it after the end). */
const FINISHED_KEPT = 10_000;

/** One set of tallies: the process's, or one tenant's. */
class Tally {
  readonly byKind: Record<RequestKind, number> = {
    start: 0,
    get: 0,
    subscribe: 0,
    list: 0,
    cancel: 0,
    answer: 0,
    register_push: 0,
  };
  /** Jobs tracked and not yet finished; the finished ones are only counted (memory stays with open jobs). */
  readonly open = new Set<string>();
  finished = 0;
  readonly delays = new Map<ObservationSource, DelaySamples>();
  readonly counts: Record<CounterName, number> = {
    duplicatesWebhook: 0,
    duplicatesObservation: 0,
    reusedMessageIds: 0,
    taskNotFoundOwn: 0,
    streamDrops: 0,
    reattaches: 0,
    resubmitted: 0,
    escalated: 0,
    webhooksRejected: 0,
    reconcileRounds: 0,
  };
  total = 0;
  targetLevel = 0;

  get tracked(): number {
    return this.open.size + this.finished;
  }

  delay(source: ObservationSource, ms: number, capacity: number): void {
    let samples = this.delays.get(source);
    if (!samples) this.delays.set(source, (samples = new DelaySamples(capacity)));
    samples.add(ms);
  }
}

/**
 * The in-memory counters, kept twice: once for the process (the operator's view, /metrics) and once per
 * tenant, so a tenant's /v1/signals shows only what its own jobs cost and suffered. A count about no
 * single job (a reconciliation list page, a webhook refused before we knew whose it was, a round) is
 * the process's only: charging it to any tenant would leak that others exist.
 */
export class SignalCounters {
  private readonly process = new Tally();
  private readonly startLatency = new LatencyHistogram();
  private readonly streamRecovery = new LatencyHistogram();
  private readonly notificationDelay = new Map<ObservationSource, LatencyHistogram>();
  private readonly tenants = new Map<string, Tally>();
  /** envelope id → tenant, learned by track() (create, recovery) or from the job a count names. */
  private readonly tenantOf = new Map<string, string>();
  private readonly perEnvelope = new Map<string, number>();
  /** Request counts of the most recently finished jobs (requestsFor), at most FINISHED_KEPT of them. */
  private readonly finishedRequests = new Map<string, number>();
  /** Per tenant and target: last reconciliation, its failures, notification delays (the targets view). */
  readonly targets = new TargetActivity();

  private tallies(job: CountedJob): Tally[] {
    if (!job) return [this.process];
    const tenant = job.tenant ?? this.tenantOf.get(job.id);
    if (tenant === undefined) return [this.process];
    let t = this.tenants.get(tenant);
    if (!t) this.tenants.set(tenant, (t = new Tally()));
    return [this.process, t];
  }

  request(kind: RequestKind, job: CountedJob): void {
    for (const t of this.tallies(job)) {
      t.total++;
      t.byKind[kind]++;
      if (job === null) t.targetLevel++;
    }
    if (job) this.perEnvelope.set(job.id, (this.perEnvelope.get(job.id) ?? 0) + 1);
  }

  count(name: CounterName, job: CountedJob): void {
    for (const t of this.tallies(job)) t.counts[name]++;
  }

  track(envelopeId: string, tenant: string): void {
    this.tenantOf.set(envelopeId, tenant);
    for (const t of this.tallies({ id: envelopeId, tenant })) t.open.add(envelopeId);
  }

  /**
   * The job reached a terminal state: its per-job entries go, so a long-running plane holds memory for
   * its open jobs only (it stays counted in tasksTracked). A request made for it later (an acceptance
   * check) is still charged to its tenant when the caller names the tenant, as the engine's calls do.
   */
  finished(envelopeId: string, tenant: string): void {
    for (const t of this.tallies({ id: envelopeId, tenant })) if (t.open.delete(envelopeId)) t.finished++;
    this.tenantOf.delete(envelopeId);
    const requests = this.perEnvelope.get(envelopeId);
    if (requests === undefined) return;
    this.perEnvelope.delete(envelopeId);
    this.finishedRequests.set(envelopeId, requests);
    if (this.finishedRequests.size > FINISHED_KEPT)
      this.finishedRequests.delete(this.finishedRequests.keys().next().value!);
  }

  /** Requests made for one job (reconciliation list pages are not charged to any job). */
  requestsFor(envelopeId: string): number {
    return this.perEnvelope.get(envelopeId) ?? this.finishedRequests.get(envelopeId) ?? 0;
  }

  /** Per-job entries held (a test's view of the memory bound). */
  retainedJobs(): number {
    return Math.max(
      this.tenantOf.size,
      this.perEnvelope.size + this.finishedRequests.size,
      this.process.open.size,
    );
  }

  delay(source: ObservationSource, ms: number, job: CountedJob = null): void {
    for (const t of this.tallies(job)) t.delay(source, Math.max(0, ms), 4096);
    const tenant = job ? (job.tenant ?? this.tenantOf.get(job.id)) : undefined;
    if (job?.target !== undefined && tenant !== undefined) this.targets.delay(tenant, job.target, source, ms);
    let h = this.notificationDelay.get(source);
    if (!h) this.notificationDelay.set(source, (h = new LatencyHistogram()));
    h.add(Math.max(0, ms));
  }

  /** A start answered `ms` after the job was created. */
  started(ms: number): void {
    this.startLatency.add(Math.max(0, ms));
  }

  /** A dropped stream delivered again `ms` after the drop. */
  recovered(ms: number): void {
    this.streamRecovery.add(Math.max(0, ms));
  }

  histograms(): LatencyHistograms {
    const notificationDelay: Partial<Record<ObservationSource, HistogramSnapshot>> = {};
    for (const [source, h] of this.notificationDelay) notificationDelay[source] = h.snapshot();
    return {
      startLatency: this.startLatency.snapshot(),
      notificationDelay,
      streamRecovery: this.streamRecovery.snapshot(),
    };
  }

  /** The process's counters, or one tenant's (zeros for a tenant that has none yet). */
  snapshot(tenant?: string): CounterSignals {
    const t = tenant === undefined ? this.process : (this.tenants.get(tenant) ?? new Tally());
    const observationDelay: Partial<Record<ObservationSource, DelayStats>> = {};
    for (const [source, s] of t.delays) {
      observationDelay[source] = {
        count: s.count,
        meanMs: s.count ? s.sum / s.count : null,
        p50Ms: s.percentile(50),
        p99Ms: s.percentile(99),
        maxMs: s.count ? s.max : null,
      };
    }
    const c = t.counts;
    return {
      requests: {
        total: t.total,
        byKind: { ...t.byKind },
        targetLevel: t.targetLevel,
        tasksTracked: t.tracked,
        perTask: t.tracked ? t.total / t.tracked : null,
      },
      observationDelay,
      duplicatesAbsorbed: { webhook: c.duplicatesWebhook, observation: c.duplicatesObservation },
      reusedMessageIds: c.reusedMessageIds,
      taskNotFoundOwn: c.taskNotFoundOwn,
      streamDrops: c.streamDrops,
      reattaches: c.reattaches,
      resubmitted: c.resubmitted,
      escalated: c.escalated,
      webhooksRejected: c.webhooksRejected,
      reconcileRounds: c.reconcileRounds,
    };
  }
}
