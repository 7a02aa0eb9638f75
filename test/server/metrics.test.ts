import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { SystemClock, VirtualClock } from '../../src/core/clock.ts';
import { CryptoRandom } from '../../src/core/random.ts';
import { Plane } from '../../src/plane/plane.ts';
import { createMetrics } from '../../src/server/metrics.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import { FakeRemote } from '../plane/fake-remote.ts';
import { KEY_A, planeApp } from './plane-app-fixture.ts';

/**
 * /metrics as Prometheus and Grafana read it: one prefix, counters typed as counters, HELP written for
 * operators, and latency histograms (start, notification delay, stream recovery) in seconds.
 */
let fx: Awaited<ReturnType<typeof planeApp>>;
beforeAll(async () => {
  fx = await planeApp();
});
afterAll(() => fx.close());

async function scrape(): Promise<string> {
  const res = await fx.fetch('/metrics');
  expect(res.status).toBe(200);
  return res.text();
}

function typeOf(text: string, name: string): string | undefined {
  return new RegExp(`^# TYPE ${name} (\\w+)$`, 'm').exec(text)?.[1];
}

describe('/metrics', () => {
  it('types counts that only grow as counters and counts of tasks now as gauges', async () => {
    const res = await fx.fetch('/v1/tasks?wait=started', {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY_A}`, 'content-type': 'application/json' },
      body: JSON.stringify({ target: 'fake', input: 'x' }),
    });
    expect(res.status).toBe(201);
    const text = await scrape();
    for (const name of [
      'taskplane_requests_total',
      'taskplane_duplicates_absorbed_total',
      'taskplane_stream_drops_total',
      'taskplane_webhooks_rejected_total',
      'taskplane_task_not_found_own_total',
      'taskplane_purged_total',
      'taskplane_purge_export_failures_total',
    ])
      expect(typeOf(text, name), name).toBe('counter');
    for (const name of ['taskplane_tasks', 'taskplane_orphans', 'taskplane_input_required'])
      expect(typeOf(text, name), name).toBe('gauge');
    expect(
      Number(/^taskplane_requests_total\{kind="start"\} (\d+)$/m.exec(text)?.[1]),
    ).toBeGreaterThanOrEqual(1);
  });

  it('exports start latency and notification delay as histograms in seconds', async () => {
    const text = await scrape();
    expect(typeOf(text, 'taskplane_start_latency_seconds')).toBe('histogram');
    expect(typeOf(text, 'taskplane_notification_delay_seconds')).toBe('histogram');
    expect(typeOf(text, 'taskplane_stream_recovery_seconds')).toBe('histogram');
    const buckets = [...text.matchAll(/^taskplane_start_latency_seconds_bucket\{le="([^"]+)"\} (\d+)$/gm)];
    expect(buckets.map((m) => m[1]).slice(0, 3)).toEqual(['0.01', '0.05', '0.1']);
    const counts = buckets.map((m) => Number(m[2]));
    // Cumulative: never decreasing, and +Inf holds every observation.
    expect(counts).toEqual([...counts].sort((a, b) => a - b));
    const count = Number(/^taskplane_start_latency_seconds_count (\d+)$/m.exec(text)?.[1]);
    expect(count).toBeGreaterThanOrEqual(1);
    expect(buckets.at(-1)).toMatchObject({ 1: '+Inf', 2: String(count) });
  });

  it('exports usage, accepted completions and cost per accepted completion per target (no workflow label)', async () => {
    const made: string[] = [];
    for (const input of ['ok-1', 'ok-2', 'bad']) {
      const res = await fx.fetch('/v1/tasks?wait=started', {
        method: 'POST',
        headers: { authorization: `Bearer ${KEY_A}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          target: 'fake',
          input,
          workflowId: 'metrics-wf',
          acceptance: { schema: { type: 'object' } },
        }),
      });
      const created = (await res.json()) as { id: string };
      if (!created.id) throw new Error(JSON.stringify(created));
      made.push(created.id);
    }
    for (const [i, id] of made.entries()) {
      const env = await fx.plane.get('alpha', id);
      const job = fx.remote.jobs.get(env.remoteId!)!;
      await fx.plane.observe(id, {
        ...fx.remote.snapshot(job),
        state: 'succeeded',
        nativeState: 'COMPLETED',
        remoteVersion: job.ts + 1,
        stateTimestamp: job.ts + 1,
        result: i < 2 ? { ok: true } : 'not an object',
        usage: { cents: 10 },
      });
    }
    // A fresh registry: the app's own keeps the usage figures of an earlier scrape for a minute.
    const text = await createMetrics(fx.plane, { defaultMetrics: false }).metrics();
    expect(typeOf(text, 'taskplane_cost_per_accepted_completion')).toBe('gauge');
    expect(text).toMatch(/^taskplane_usage\{target="fake",unit="cents"\} 30$/m);
    expect(text).toMatch(/^taskplane_accepted_completions\{target="fake"\} 2$/m);
    expect(text).toMatch(/^taskplane_cost_per_accepted_completion\{target="fake",unit="cents"\} 15$/m);
    expect(text).not.toContain('metrics-wf');
    const view = (await (
      await fx.fetch('/v1/workflows/metrics-wf', { headers: { authorization: `Bearer ${KEY_A}` } })
    ).json()) as { costPerAcceptedCompletion: Record<string, number> };
    expect(view.costPerAcceptedCompletion).toEqual({ cents: 15 });
  });

  it('reads every task’s usage at most once per usageMaxAgeMs, in the background, and says how old it is', async () => {
    const clock = new VirtualClock(1_700_000_000_000);
    const store = new MemoryStore();
    const plane = new Plane({
      clock,
      random: new CryptoRandom(),
      store,
      connectors: () => new FakeRemote(clock).connector('fake'),
    });
    const usageReads = vi.spyOn(store, 'summarizeUsage');
    const countReads = vi.spyOn(store, 'countEnvelopesByState');
    const registry = createMetrics(plane, { defaultMetrics: false, usageMaxAgeMs: 60_000, clock });
    const age = (text: string) => Number(/^taskplane_usage_age_seconds (\S+)$/m.exec(text)?.[1]);
    // The first scrape waits for the first read; one read serves every usage gauge.
    expect(age(await registry.metrics())).toBe(0);
    expect(usageReads).toHaveBeenCalledTimes(1);
    await clock.advance(30_000);
    expect(age(await registry.metrics())).toBe(30);
    expect(usageReads).toHaveBeenCalledTimes(1);
    // Past the age: this scrape answers with what it has and starts one read, which the next one gets.
    await clock.advance(31_000);
    expect(age(await registry.metrics())).toBe(61);
    expect(usageReads).toHaveBeenCalledTimes(2);
    expect(age(await registry.metrics())).toBe(0);
    expect(usageReads).toHaveBeenCalledTimes(2);
    // Task counts by state are read on every scrape (a row per tenant and state, not a scan).
    expect(countReads).toHaveBeenCalledTimes(4);
  });

  it('lists the open tasks for the orphan and waiting gauges at most once per openJobsMaxAgeMs, in the background', async () => {
    const clock = new VirtualClock(1_700_000_000_000);
    const store = new MemoryStore();
    const plane = new Plane({
      clock,
      random: new CryptoRandom(),
      store,
      connectors: () => new FakeRemote(clock).connector('fake'),
      options: { reconcile: { intervalMs: 3_600_000, orphanMarginMs: 0 } },
    });
    await plane.create(
      { tenant: 't', target: 'fake', input: 'x', expectedDurationMs: 1_000 },
      { wait: 'started' },
    );
    const listings = vi.spyOn(store, 'listEnvelopes');
    const registry = createMetrics(plane, { defaultMetrics: false, openJobsMaxAgeMs: 15_000, clock });
    const age = (text: string) => Number(/^taskplane_open_jobs_age_seconds (\S+)$/m.exec(text)?.[1]);
    const orphans = (text: string) => Number(/^taskplane_orphans (\S+)$/m.exec(text)?.[1]);
    // The first scrape waits for the listing (one page here); one listing serves every gauge.
    let text = await registry.metrics();
    expect([age(text), orphans(text)]).toEqual([0, 0]);
    expect(listings).toHaveBeenCalledTimes(1);
    // The task is past its expected duration now, but these figures are 10 s old and say so: no listing.
    await clock.advance(10_000);
    text = await registry.metrics();
    expect([age(text), orphans(text)]).toEqual([10, 0]);
    expect(listings).toHaveBeenCalledTimes(1);
    // Past the age: this scrape answers with what it has and starts one listing, which the next one gets,
    // with the value a listing at scrape time gives.
    await clock.advance(6_000);
    expect(age(await registry.metrics())).toBe(16);
    expect(listings).toHaveBeenCalledTimes(2);
    text = await registry.metrics();
    expect([age(text), orphans(text)]).toEqual([0, 1]);
    expect(listings).toHaveBeenCalledTimes(2);
    expect((await plane.signals()).orphans).toBe(1);
  });

  it('writes HELP for operators: no document references', async () => {
    const text = await scrape();
    const helps = [...text.matchAll(/^# HELP (\S+) (.*)$/gm)];
    expect(helps.length).toBeGreaterThan(10);
    for (const [, name, help] of helps) {
      expect(help, name).not.toMatch(/docs\/|seed \d|\.md\b/i);
      expect(help!.length, name).toBeGreaterThan(20);
    }
  });

  it('names process metrics once: taskplane_process_…, never taskplane_process_process_…', async () => {
    const clock = new SystemClock();
    const store = new MemoryStore();
    const plane = new Plane({
      clock,
      random: new CryptoRandom(),
      store,
      connectors: () => new FakeRemote(clock).connector('fake'),
    });
    const text = await createMetrics(plane, { defaultMetrics: true }).metrics();
    expect(text).toMatch(/^taskplane_process_cpu_seconds_total /m);
    expect(text).toMatch(/^# TYPE taskplane_process_cpu_seconds_total counter$/m);
    expect(text).not.toContain('process_process_');
    // The example Grafana dashboard queries only names this registry exports.
    const dashboard = readFileSync(new URL('../../docs/grafana-taskplane.json', import.meta.url), 'utf8');
    const used = new Set(
      [...dashboard.matchAll(/taskplane_\w+/g)].map((m) => m[0].replace(/_(bucket|sum|count)$/, '')),
    );
    const exported = new Set([...text.matchAll(/^# TYPE (\S+)/gm)].map((m) => m[1]));
    expect(used.size).toBeGreaterThan(10);
    expect([...used].filter((name) => !exported.has(name))).toEqual([]);
    await store.close();
  });
});
