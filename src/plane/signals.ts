import type { ObservationSource } from '../core/envelope.ts';

/**
 * Lifecycle signals (seed 004, "Detecting lifecycle failures in production"): the failures that are
 * invisible in request metrics because every single call succeeds. Counters live in memory and start
 * at zero with the process; the store-derived ones (orphans, input waiting by age) are computed by
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

export class SignalCounters {
  private readonly byKind: Record<RequestKind, number> = {
    start: 0,
    get: 0,
    subscribe: 0,
    list: 0,
    cancel: 0,
    answer: 0,
    register_push: 0,
  };
  private readonly perEnvelope = new Map<string, number>();
  private readonly tracked = new Set<string>();
  private readonly delays = new Map<ObservationSource, DelaySamples>();
  private total = 0;
  private targetLevel = 0;
  duplicatesWebhook = 0;
  duplicatesObservation = 0;
  reusedMessageIds = 0;
  taskNotFoundOwn = 0;
  streamDrops = 0;
  reattaches = 0;
  resubmitted = 0;
  escalated = 0;
  webhooksRejected = 0;
  reconcileRounds = 0;

  request(kind: RequestKind, envelopeId: string | null): void {
    this.total++;
    this.byKind[kind]++;
    if (envelopeId === null) this.targetLevel++;
    else this.perEnvelope.set(envelopeId, (this.perEnvelope.get(envelopeId) ?? 0) + 1);
  }

  track(envelopeId: string): void {
    this.tracked.add(envelopeId);
  }

  /** Requests made for one job (reconciliation list pages are not charged to any job). */
  requestsFor(envelopeId: string): number {
    return this.perEnvelope.get(envelopeId) ?? 0;
  }

  delay(source: ObservationSource, ms: number): void {
    let samples = this.delays.get(source);
    if (!samples) this.delays.set(source, (samples = new DelaySamples()));
    samples.add(Math.max(0, ms));
  }

  snapshot(): CounterSignals {
    const observationDelay: Partial<Record<ObservationSource, DelayStats>> = {};
    for (const [source, s] of this.delays) {
      observationDelay[source] = {
        count: s.count,
        meanMs: s.count ? s.sum / s.count : null,
        p50Ms: s.percentile(50),
        p99Ms: s.percentile(99),
        maxMs: s.count ? s.max : null,
      };
    }
    return {
      requests: {
        total: this.total,
        byKind: { ...this.byKind },
        targetLevel: this.targetLevel,
        tasksTracked: this.tracked.size,
        perTask: this.tracked.size ? this.total / this.tracked.size : null,
      },
      observationDelay,
      duplicatesAbsorbed: { webhook: this.duplicatesWebhook, observation: this.duplicatesObservation },
      reusedMessageIds: this.reusedMessageIds,
      taskNotFoundOwn: this.taskNotFoundOwn,
      streamDrops: this.streamDrops,
      reattaches: this.reattaches,
      resubmitted: this.resubmitted,
      escalated: this.escalated,
      webhooksRejected: this.webhooksRejected,
      reconcileRounds: this.reconcileRounds,
    };
  }
}
