import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import { Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * The host's /metrics in Prometheus text format: the process (prom-client's defaults) and how long the
 * event loop was held, as a histogram, because a held loop stalls every request of the process at once
 * (a p99 spike that no single handler shows). Latency histograms of requests would only show the stall
 * after the fact; this one shows that the loop itself was the cause.
 */
/** Upper bounds in seconds: a healthy loop sits below 1–2 ms, stalls worth finding are 10 ms and up. */
export const EVENT_LOOP_BUCKETS_S = [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1];

export interface HostMetrics {
  registry: Registry;
  /** Stops the sampler (the process is closing). */
  close(): void;
}

export interface HostMetricsSources {
  /** Executions running in this process right now. */
  executions(): number;
  /** Open SSE subscribers (SubscribeToTask, SendStreamingMessage, MCP listeners). */
  subscribers(): number;
}

/**
 * `resolutionMs`: the sampler's timer period (perf_hooks monitorEventLoopDelay); a stall shorter than
 * it can be missed, one longer is measured to the nanosecond. @default 5
 */
export function createHostMetrics(
  sources: HostMetricsSources,
  options: { defaultMetrics?: boolean; resolutionMs?: number } = {},
): HostMetrics {
  const registry = new Registry();
  if (options.defaultMetrics ?? true)
    collectDefaultMetrics({ register: registry, prefix: 'taskplane_host_' });
  const resolutionMs = options.resolutionMs ?? 5;
  const delay = monitorEventLoopDelay({ resolution: resolutionMs });
  delay.enable();
  const totals = new LoopDelayTotals(resolutionMs / 1000);
  new LoopDelayHistogram(registry, () => totals.take(delay));
  new Gauge({
    name: 'taskplane_host_executions',
    help: 'Agent executions running in this host process',
    registers: [registry],
    collect() {
      this.set(sources.executions());
    },
  });
  new Gauge({
    name: 'taskplane_host_stream_subscribers',
    help: 'Open task streams served by this host process',
    registers: [registry],
    collect() {
      this.set(sources.subscribers());
    },
  });
  return { registry, close: () => delay.disable() };
}

/**
 * Cumulative bucket counts over the process's life, fed from the perf_hooks histogram: each scrape adds
 * what was sampled since the previous one and resets the sampler, so counts only grow (a Prometheus
 * histogram is a set of counters). The sampler keeps percentiles, not buckets: a bucket's share is the
 * highest percentile whose value lies at or below its bound, exact to the sampler's percentile steps.
 */
export class LoopDelayTotals {
  readonly buckets = EVENT_LOOP_BUCKETS_S.map(() => 0);
  count = 0;
  sumS = 0;

  /**
   * `timerS`: the sampler's own period. perf_hooks records the time between two of its timer turns,
   * which is the period plus the delay; the period is taken off so a free loop reads 0, not 5 ms.
   */
  constructor(private readonly timerS = 0) {}

  take(h: Pick<IntervalHistogram, 'count' | 'mean' | 'percentiles' | 'reset'>): LoopDelayTotals {
    const n = h.count;
    if (n > 0) {
      const points = [...h.percentiles.entries()].sort((a, b) => a[0] - b[0]);
      EVENT_LOOP_BUCKETS_S.forEach((bound, i) => {
        let share = 0;
        for (const [p, ns] of points) if (ns / 1e9 - this.timerS <= bound) share = p / 100;
        this.buckets[i]! += Math.round(share * n);
      });
      this.count += n;
      this.sumS += Math.max(0, h.mean / 1e9 - this.timerS) * n;
    }
    h.reset();
    return this;
  }
}

/**
 * A prom-client Histogram whose values come from LoopDelayTotals at scrape time (it is never observed
 * directly: the samples are taken by perf_hooks, off the JavaScript thread's own timers).
 */
class LoopDelayHistogram extends Histogram {
  constructor(
    registry: Registry,
    private readonly read: () => LoopDelayTotals,
  ) {
    super({ name: LOOP_DELAY, help: LOOP_DELAY_HELP, buckets: EVENT_LOOP_BUCKETS_S, registers: [registry] });
  }

  // What prom-client's registry reads for the text format (its get() reads it too).
  async getForPromString() {
    const t = this.read();
    return {
      name: LOOP_DELAY,
      help: LOOP_DELAY_HELP,
      type: 'histogram',
      aggregator: 'sum',
      values: [
        ...EVENT_LOOP_BUCKETS_S.map((le, i) => ({
          labels: { le },
          value: t.buckets[i]!,
          metricName: `${LOOP_DELAY}_bucket`,
        })),
        { labels: { le: '+Inf' }, value: t.count, metricName: `${LOOP_DELAY}_bucket` },
        { labels: {}, value: t.sumS, metricName: `${LOOP_DELAY}_sum` },
        { labels: {}, value: t.count, metricName: `${LOOP_DELAY}_count` },
      ],
    };
  }
}

const LOOP_DELAY = 'taskplane_host_event_loop_delay_seconds';
const LOOP_DELAY_HELP =
  'Event loop delay samples (perf_hooks monitorEventLoopDelay): how long a timer waited for a held loop';
