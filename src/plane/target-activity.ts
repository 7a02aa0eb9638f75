import type { ObservationSource } from '../core/envelope.ts';

/**
 * What an operator asks about one target, per tenant: when a reconciliation round last covered that
 * tenant's jobs on it, how late each mechanism brought news of them, and the last failure of a round.
 * Kept per tenant because a round runs only while a target has open jobs: showing a tenant the rounds
 * that covered nobody's jobs but another tenant's would tell it that tenant exists. In memory, like the
 * other counters (plane/signals.ts): it starts empty with the process.
 */

/** A round's failure, as an operator reads it (no remote response text beyond the error message). */
export interface TargetError {
  at: number;
  /** What was being done: `reconcile` (the list call of a round). */
  during: string;
  /** The stable error code (core/errors.ts). */
  code: string;
  message: string;
}

export interface TargetDelay {
  count: number;
  p50Ms: number | null;
  maxMs: number | null;
  /** The latest delay measured. */
  lastMs: number | null;
}

export interface TargetActivitySnapshot {
  /** End of the latest reconciliation round that covered this tenant's open jobs on the target. */
  lastReconciledAt: number | null;
  lastError: TargetError | null;
  /** Remote status time → our processing it, per mechanism, for this tenant's jobs on this target. */
  notificationDelay: Partial<Record<ObservationSource, TargetDelay>>;
}

/** Delay samples kept per tenant, target and mechanism: enough for a median without growing. */
const SAMPLES = 256;

class Delays {
  private readonly samples: number[] = [];
  private next = 0;
  count = 0;
  max = 0;
  last: number | null = null;

  add(ms: number): void {
    this.count++;
    this.max = Math.max(this.max, ms);
    this.last = ms;
    if (this.samples.length < SAMPLES) this.samples.push(ms);
    else {
      this.samples[this.next] = ms;
      this.next = (this.next + 1) % SAMPLES;
    }
  }

  snapshot(): TargetDelay {
    const sorted = [...this.samples].sort((a, b) => a - b);
    return {
      count: this.count,
      p50Ms: sorted.length ? sorted[Math.ceil(sorted.length / 2) - 1]! : null,
      maxMs: this.count ? this.max : null,
      lastMs: this.last,
    };
  }
}

interface Entry {
  lastReconciledAt: number | null;
  lastError: TargetError | null;
  delays: Map<ObservationSource, Delays>;
}

export class TargetActivity {
  private readonly entries = new Map<string, Entry>();

  private entry(tenant: string, target: string): Entry {
    const key = `${tenant}\u0000${target}`;
    let e = this.entries.get(key);
    if (!e) this.entries.set(key, (e = { lastReconciledAt: null, lastError: null, delays: new Map() }));
    return e;
  }

  /** A round on `target` ended at `at`, covering the open jobs of these tenants. */
  reconciled(target: string, tenants: Iterable<string>, at: number): void {
    for (const tenant of tenants) this.entry(tenant, target).lastReconciledAt = at;
  }

  /** A round's failure on `target`, charged to the tenants whose jobs it was about. */
  failed(target: string, tenants: Iterable<string>, error: TargetError): void {
    for (const tenant of tenants) this.entry(tenant, target).lastError = error;
  }

  delay(tenant: string, target: string, source: ObservationSource, ms: number): void {
    const delays = this.entry(tenant, target).delays;
    let d = delays.get(source);
    if (!d) delays.set(source, (d = new Delays()));
    d.add(Math.max(0, ms));
  }

  snapshot(tenant: string, target: string): TargetActivitySnapshot {
    const e = this.entries.get(`${tenant}\u0000${target}`);
    const notificationDelay: Partial<Record<ObservationSource, TargetDelay>> = {};
    for (const [source, d] of e?.delays ?? []) notificationDelay[source] = d.snapshot();
    return {
      lastReconciledAt: e?.lastReconciledAt ?? null,
      lastError: e?.lastError ?? null,
      notificationDelay,
    };
  }
}
