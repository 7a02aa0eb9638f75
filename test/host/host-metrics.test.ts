import pino from 'pino';
import { describe, expect, it, onTestFinished } from 'vitest';
import { EVENT_LOOP_BUCKETS_S, LoopDelayTotals } from '../../src/host/host-metrics.ts';
import { hostMetricsAccess } from '../../src/host/host-app.ts';
import { startHost } from '../../src/host/start-host.ts';

/** The bucket lines of the event loop delay histogram, le → count. */
function buckets(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const m of text.matchAll(/^taskplane_host_event_loop_delay_seconds_bucket\{le="([^"]+)"\} (\d+)$/gm))
    out.set(m[1]!, Number(m[2]));
  return out;
}

async function host(metricsToken?: string) {
  const h = await startHost({
    port: 0,
    db: 'memory:',
    logger: pino({ level: 'silent' }),
    ...(metricsToken ? { metricsToken } : {}),
  });
  onTestFinished(() => h.close());
  return h;
}

describe('host /metrics', () => {
  it('shows a held event loop in the delay histogram', async () => {
    const h = await host();
    const first = await fetch(`${h.url}/metrics`);
    expect(first.status).toBe(200);
    expect(await first.text()).toMatch(/^# TYPE taskplane_host_event_loop_delay_seconds histogram$/m);
    // Let the sampler run a little, then hold the loop for 120 ms (a synchronous handler would).
    await new Promise((r) => setTimeout(r, 100));
    const until = performance.now() + 120;
    while (performance.now() < until) {
      /* held */
    }
    await new Promise((r) => setTimeout(r, 20));
    const text = await (await fetch(`${h.url}/metrics`)).text();
    const b = buckets(text);
    const all = b.get('+Inf')!;
    expect(all).toBeGreaterThan(0);
    // The held turn is a sample above 100 ms: the 0.1 s bucket misses it, +Inf has it.
    expect(b.get('0.1')!).toBeLessThan(all);
    expect(text).toMatch(/^taskplane_host_executions 0$/m);
    expect(text).toMatch(/^taskplane_host_process_cpu_seconds_total /m);
  });

  it('asks for the token when one is set, and is closed beyond loopback without one', async () => {
    const h = await host('metrics-secret');
    expect((await fetch(`${h.url}/metrics`)).status).toBe(401);
    const ok = await fetch(`${h.url}/metrics`, { headers: { authorization: 'Bearer metrics-secret' } });
    expect(ok.status).toBe(200);
    expect(hostMetricsAccess('0.0.0.0', undefined)).toEqual({ kind: 'closed' });
    expect(hostMetricsAccess('127.0.0.1', undefined)).toEqual({ kind: 'open' });
  });

  it('bucket counts only grow, from the sampler percentiles of each interval', () => {
    const totals = new LoopDelayTotals();
    let resets = 0;
    const interval = (values: number[]) => {
      const sorted = [...values].sort((a, b) => a - b);
      const percentiles = new Map<number, number>();
      sorted.forEach((v, i) => percentiles.set(((i + 1) / sorted.length) * 100, v * 1e9));
      return {
        count: sorted.length,
        mean: (sorted.reduce((a, b) => a + b, 0) / sorted.length) * 1e9,
        percentiles,
        reset: () => void resets++,
      };
    };
    totals.take(interval([0.0005, 0.0005, 0.003, 0.3]));
    const le = (bound: number) => totals.buckets[EVENT_LOOP_BUCKETS_S.indexOf(bound)]!;
    expect([le(0.001), le(0.005), le(0.25), le(0.5), totals.count]).toEqual([2, 3, 3, 4, 4]);
    totals.take(interval([0.0001]));
    expect([le(0.001), totals.count]).toEqual([3, 5]);
    expect(totals.sumS).toBeCloseTo(0.3041, 6);
    expect(resets).toBe(2);
  });
});
