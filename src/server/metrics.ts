import { Counter, Gauge, Registry, collectDefaultMetrics, type Metric } from 'prom-client';
import { SystemClock, type Clock } from '../core/clock.ts';
import { CachedRead } from './cached-read.ts';
import type { Plane } from '../plane/plane.ts';
import { costPerAccepted } from '../plane/workflow-budgets.ts';
import type { TargetUsage } from '../store/store.ts';
import { LATENCY_BUCKETS_MS, type HistogramSnapshot } from '../plane/signals.ts';
import type { OpenJobSignals } from '../plane/signal-report.ts';

type Signals = Awaited<ReturnType<Plane['signals']>>;

/**
 * /metrics in Prometheus text format, the operator's view: the whole process, all tenants together
 * (/v1/signals shows a tenant only its own jobs). Values are read at scrape time from plane.signals()
 * (counters in memory, and the count table for jobs by state) and plane.latencyHistograms(); the gauges
 * derived from the open jobs (orphans, input and authorization waits) from a listing of them kept for
 * openJobsMaxAgeMs, and the usage figures from a read kept for usageMaxAgeMs: no scrape's own cost grows
 * with the jobs open or stored. Counts that only grow while the process runs are
 * counters (they restart at zero with it, which rate() handles); counts of jobs as they are now are
 * gauges; latencies are histograms in seconds, so Grafana's histogram_quantile works.
 * docs/grafana-taskplane.json is a dashboard built on these names.
 */
export interface MetricsOptions {
  /** prom-client's process metrics. @default true */
  defaultMetrics?: boolean;
  /**
   * How old the usage, accepted-completion and cost figures may be before a scrape refreshes them in
   * the background: they come from one read of every task's usage, which grows with the tasks stored,
   * so scrapes do not run it each time. `taskplane_usage_age_seconds` says how old they are.
   * @default 60000
   */
  usageMaxAgeMs?: number;
  /**
   * How old the orphan, input-required and auth-required gauges may be before a scrape refreshes them in
   * the background: they come from a listing of every open job, which grows with the jobs open, so
   * scrapes do not run it each time. `taskplane_open_jobs_age_seconds` says how old they are.
   * @default 15000
   */
  openJobsMaxAgeMs?: number;
  /** For the age of the usage and open-job figures. @default a SystemClock */
  clock?: Pick<Clock, 'now'>;
}

export function createMetrics(plane: Plane, options: MetricsOptions = {}): Registry {
  const registry = new Registry();
  // prom-client's own names already start with process_ / nodejs_: the prefix only adds ours.
  if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: registry, prefix: 'taskplane_' });
  const clock = options.clock ?? new SystemClock();
  // The gauges derived from the open jobs: one listing of every open job, kept for openJobsMaxAgeMs and
  // refreshed in the background (its age a gauge of its own), as the usage read below. Read per scrape it
  // would hold the event loop for a time that grows with the open jobs; a scrape must not.
  const openJobsCache = new CachedRead(
    () => plane.openJobSignals(),
    options.openJobsMaxAgeMs ?? 15_000,
    clock,
  );
  let openJobsPending: Promise<{ value: OpenJobSignals; ageMs: number }> | null = null;
  const openJobsRead = () => (openJobsPending ??= openJobsCache.get());
  let pending: Promise<Signals> | null = null;
  // One signals() per scrape however many metrics ask.
  const signals = () => (pending ??= openJobsRead().then((open) => plane.signals(undefined, open.value)));
  // Usage and acceptance per target: one aggregate read of every task's usage, shared by the three gauges
  // below and kept for usageMaxAgeMs (refreshed in the background, its age a gauge of its own): the read
  // grows with the tasks stored, a scrape must not. Per target only:
  // a workflow label would grow without bound (per-workflow figures are at GET /v1/workflows/{id}).
  const usageCache = new CachedRead(() => plane.usageByTarget(), options.usageMaxAgeMs ?? 60_000, clock);
  let usagePending: Promise<{ value: TargetUsage[]; ageMs: number }> | null = null;
  const usageRead = () => (usagePending ??= usageCache.get());
  const usage = async () => (await usageRead()).value;
  // Each scrape reads afresh: the reads above are shared by one scrape's metrics, never kept for the next
  // (a reset on a timer missed scrapes that came before the timer phase, as in-process requests do).
  const scrape = registry.metrics.bind(registry);
  registry.metrics = () => {
    pending = null;
    openJobsPending = null;
    usagePending = null;
    return scrape();
  };
  const usageGauge = (
    name: string,
    help: string,
    labelNames: string[],
    fill: (g: Gauge, rows: TargetUsage[]) => void,
  ) =>
    new Gauge({
      name,
      help,
      labelNames,
      registers: [registry],
      async collect() {
        this.reset();
        fill(this, await usage());
      },
    });
  usageGauge(
    'taskplane_usage',
    'Usage the remotes reported, summed over every task of a target, per unit (cents, tokens, as the remote counts)',
    ['target', 'unit'],
    (g, rows) => {
      for (const r of rows)
        for (const [unit, n] of Object.entries(r.usage)) g.set({ target: r.target, unit }, n);
    },
  );
  usageGauge(
    'taskplane_accepted_completions',
    'Tasks of a target whose output was accepted (by its checks, a verifier or a person)',
    ['target'],
    (g, rows) => {
      for (const r of rows) g.set({ target: r.target }, r.accepted);
    },
  );
  usageGauge(
    'taskplane_cost_per_accepted_completion',
    "Everything a target's tasks spent over the tasks accepted, per usage unit; absent until one is accepted",
    ['target', 'unit'],
    (g, rows) => {
      for (const r of rows)
        for (const [unit, n] of Object.entries(costPerAccepted(r.usage, r.accepted) ?? {}))
          g.set({ target: r.target, unit }, n);
    },
  );

  new Gauge({
    name: 'taskplane_usage_age_seconds',
    help: 'How old the usage, accepted-completion and cost figures are (one read of every task, refreshed in the background)',
    registers: [registry],
    async collect() {
      this.set((await usageRead()).ageMs / 1000);
    },
  });

  new Gauge({
    name: 'taskplane_open_jobs_age_seconds',
    help: 'How old the orphan, input-required and auth-required figures are (one read of every open task, refreshed in the background)',
    registers: [registry],
    async collect() {
      this.set((await openJobsRead()).ageMs / 1000);
    },
  });

  const gauge = (name: string, help: string, labelNames: string[], fill: (g: Gauge, s: Signals) => void) =>
    new Gauge({
      name,
      help,
      labelNames,
      registers: [registry],
      async collect() {
        this.reset();
        fill(this, await signals());
      },
    });
  // A counter whose value the plane keeps: reset, then set by one inc per label set at scrape time.
  const counter = (
    name: string,
    help: string,
    labelNames: string[],
    values: (s: Signals) => Array<[Record<string, string>, number]>,
  ) =>
    new Counter({
      name,
      help,
      labelNames,
      registers: [registry],
      async collect() {
        this.reset();
        for (const [labels, n] of values(await signals())) this.inc(labels, n);
      },
    });

  // Read from the sweeper directly: no store scan needed.
  new Counter({
    name: 'taskplane_purged_total',
    help: 'Finished tasks purged past their retention (with their events and stored artifacts)',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(plane.retentionStats().purged);
    },
  });
  new Counter({
    name: 'taskplane_purge_export_failures_total',
    help: 'Batches of expired tasks left in place because their export before purge failed',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(plane.retentionStats().exportFailures);
    },
  });
  gauge(
    'taskplane_tasks',
    'Tasks tracked, by normalized state (terminal ones included)',
    ['state'],
    (g, s) => {
      for (const [state, n] of Object.entries(s.byState)) g.set({ state }, n ?? 0);
    },
  );
  gauge(
    'taskplane_orphans',
    'Unfinished tasks past their expected duration plus the margin: nobody is telling us about them',
    [],
    (g, s) => g.set(s.orphans),
  );
  gauge(
    'taskplane_input_required',
    'Tasks waiting for a person to answer, by how long they have waited (under1m, under5m, under15m, over15m)',
    ['age'],
    (g, s) => {
      for (const [age, n] of Object.entries(s.inputRequiredByAge)) g.set({ age }, n);
    },
  );
  gauge(
    'taskplane_auth_required',
    'Tasks waiting for someone to authorize them, by how long they have waited',
    ['age'],
    (g, s) => {
      for (const [age, n] of Object.entries(s.authRequiredByAge)) g.set({ age }, n);
    },
  );
  gauge(
    'taskplane_requests_per_task',
    'Remote calls made per task tracked since this process started (the cost of keeping hold of a task)',
    [],
    (g, s) => g.set(s.requests.perTask ?? 0),
  );
  counter(
    'taskplane_requests_total',
    'Remote calls made to agents and APIs, by kind (start, get, subscribe, list, cancel, answer, register_push)',
    ['kind'],
    (s) => Object.entries(s.requests.byKind).map(([kind, n]) => [{ kind }, n]),
  );
  counter(
    'taskplane_duplicates_absorbed_total',
    'Repeated webhook deliveries and observations recognized and ignored (at-least-once delivery working)',
    ['kind'],
    (s) => [
      [{ kind: 'webhook' }, s.duplicatesAbsorbed.webhook],
      [{ kind: 'observation' }, s.duplicatesAbsorbed.observation],
    ],
  );
  const simple: Array<[string, string, (s: Signals) => number]> = [
    [
      'taskplane_reused_message_ids_total',
      'Starts sent again with the same messageId (after a lost answer or to resubmit a lost task)',
      (s) => s.reusedMessageIds,
    ],
    [
      'taskplane_task_not_found_own_total',
      'Tasks we created that the agent answered TaskNotFound for: the agent lost its state',
      (s) => s.taskNotFoundOwn,
    ],
    ['taskplane_stream_drops_total', 'Event streams that broke before the task ended', (s) => s.streamDrops],
    [
      'taskplane_stream_reattaches_total',
      'Streams reattached (SubscribeToTask or the protocol equivalent) after a drop',
      (s) => s.reattaches,
    ],
    [
      'taskplane_resubmitted_total',
      'Lost tasks started again under the same idempotency key (lost policy resubmit)',
      (s) => s.resubmitted,
    ],
    [
      'taskplane_escalated_total',
      'Lost tasks handed to a person instead of resubmitted (lost policy escalate)',
      (s) => s.escalated,
    ],
    [
      'taskplane_webhooks_rejected_total',
      'Webhooks refused for a bad signature or token (misconfiguration or someone probing)',
      (s) => s.webhooksRejected,
    ],
    [
      'taskplane_reconcile_rounds_total',
      'Reconciliation rounds run (the slow path that finds missed notifications)',
      (s) => s.reconcileRounds,
    ],
  ];
  for (const [name, help, get] of simple) counter(name, help, [], (s) => [[{}, get(s)]]);

  registry.registerMetric(
    histogram(
      'taskplane_start_latency_seconds',
      "Time from a task's creation to the agent's first answer to its start (retries included)",
      () => [[{}, plane.latencyHistograms().startLatency]],
    ),
  );
  registry.registerMetric(
    histogram(
      'taskplane_notification_delay_seconds',
      "Time from the agent's status change to the plane processing it, by how it arrived (stream, push, poll, reconcile)",
      () =>
        Object.entries(plane.latencyHistograms().notificationDelay).map(([source, h]) => [{ source }, h!]),
    ),
  );
  registry.registerMetric(
    histogram(
      'taskplane_stream_recovery_seconds',
      'Time from a stream dropping to the first update after reattaching',
      () => [[{}, plane.latencyHistograms().streamRecovery]],
    ),
  );
  return registry;
}

/**
 * A histogram the plane already keeps (fixed buckets in ms), exported as Prometheus wants it: cumulative
 * `_bucket{le}` in seconds, `_sum`, `_count`. prom-client's Histogram only counts its own observe()
 * calls, so this is a small metric of our own in the shape its registry reads.
 */
function histogram(
  name: string,
  help: string,
  read: () => Array<[Record<string, string>, HistogramSnapshot]>,
): Metric {
  return {
    name,
    help,
    type: 'histogram',
    aggregator: 'sum',
    get: () => {
      const values: Array<{ metricName: string; labels: Record<string, string | number>; value: number }> =
        [];
      for (const [labels, h] of read()) {
        LATENCY_BUCKETS_MS.forEach((bound, i) =>
          values.push({
            metricName: `${name}_bucket`,
            labels: { ...labels, le: bound / 1000 },
            value: h.cumulative[i]!,
          }),
        );
        values.push({ metricName: `${name}_bucket`, labels: { ...labels, le: '+Inf' }, value: h.count });
        values.push({ metricName: `${name}_sum`, labels, value: h.sumMs / 1000 });
        values.push({ metricName: `${name}_count`, labels, value: h.count });
      }
      return { name, help, type: 'histogram', aggregator: 'sum', values };
    },
    reset: () => {},
  } as unknown as Metric;
}
