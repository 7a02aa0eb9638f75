/**
 * `npm run bench:scale`: how cost grows with what a plane holds and with instances, on PostgreSQL and
 * SQLite. A benchmark, not a test: it prints a table, asserts nothing, and its wall-clock figures mean
 * little on a busy machine (CPU time, statement counts and ratios within one run are the figures to read;
 * the load average is printed beside them).
 *
 * 1. Open tracked jobs per plane: RSS and heap per 1,000 open jobs (after a GC), and per lease round
 *    (every ttl/3, virtual clock) the CPU per 1,000 open jobs and the store statements it issued
 *    (renewal must be one statement for every held lease, not one per job).
 * 1b. The same with the open jobs written with SQL (as a restart finds them) and taken up by a plane
 *    starting on them: take-up time, CPU and statements, then memory and the lease round; the fake
 *    remote answers `running` for the seeded ids without a record per job, and its own share of the
 *    heap (the stream objects it hands out) is measured alone and printed last.
 * 2. A reconciliation pass against how many jobs changed since the previous one, with 2k and 20k quiet
 *    open jobs and 10k and 1M finished jobs stored beside them (written with SQL): it must grow with
 *    neither, only with the changed (and the envelopes it reads say so).
 * 3. Jobs per second through 1, 2 and 3 plane processes on one PostgreSQL schema.
 * 4. Host sends and GetTask, PostgreSQL next to SQLite (wrk, 32 connections), when wrk is installed.
 * 5. What one /metrics scrape costs against 20k and 100k stored envelopes (SCALE_SCRAPE; only when
 *    named: SCALE_ONLY=scrape): counts by state, the usage read, whole scrapes.
 * 6. One watch-lease adoption round of a plane whose peer (a live plane) holds the lease of every one
 *    of 2k and 20k open jobs (SCALE_ADOPT; only when named: SCALE_ONLY=adopt): the round's CPU, wall
 *    time, the envelopes it read and its lease statements. It should adopt nothing and read nothing.
 *
 *   npm run bench:scale                    # open 1k,10k; stored 10k,1M
 *   SCALE_OPEN=1000,10000,100000 SCALE_STORED=10000 npm run bench:scale
 *   SCALE_ONLY=open,takeup,reconcile,planes,host  # a subset of the sections
 *   SCALE_ONLY=reconcile SCALE_RECONCILE_OPEN=2000,20000 SCALE_STORED=10000,1000000 npm run bench:scale
 *   SCALE_ONLY=takeup SCALE_SEEDED=1000,10000,100000 npm run bench:scale   # seeded open jobs only
 *   SCALE_ONLY=adopt SCALE_ADOPT=2000,20000 npm run bench:scale   # adoption rounds only
 *   SCALE_BACKENDS=sqlite                  # one backend (postgres,sqlite by default)
 * 100,000 seeded jobs need a larger heap: node --max-old-space-size=4096 --expose-gc --import tsx …
 * Run with --expose-gc (the npm script does) so memory is read after a collection.
 */
import { execFile } from 'node:child_process';
import { setMaxListeners } from 'node:events';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { VirtualClock } from '../../src/core/clock.ts';
import type { Envelope } from '../../src/core/envelope.ts';
import { FakeRemote, SEEDED_TS } from '../plane/fake-remote.ts';
import { median } from './stats.ts';
import { createMetrics } from '../../src/server/metrics.ts';
import { CachedReadsByKey } from '../../src/server/cached-read.ts';
import { spawnHost, spawnProcess, type TestProcess } from '../support/process.ts';
import { disposeSchema, freshSchemaName, urlForSchema } from '../support/pg.ts';
import {
  countingStore,
  createJobs,
  finishedRowsSql,
  planeOn,
  postgresBackend,
  SCALE_OPTIONS,
  seededRowsSql,
  sqliteBackend,
  virtualClock,
  type Backend,
} from './scale-store.ts';

const list = (v: string | undefined, d: string) => (v ?? d).split(',').filter(Boolean).map(Number);
const OPEN = list(process.env.SCALE_OPEN, '1000,10000');
const SEEDED = list(process.env.SCALE_SEEDED, '1000,10000');
const SCRAPE = list(process.env.SCALE_SCRAPE, '20000,100000');
const STORED = list(process.env.SCALE_STORED, '10000,1000000');
const ADOPT = list(process.env.SCALE_ADOPT, '2000,20000');
const RECONCILE_OPEN = list(process.env.SCALE_RECONCILE_OPEN, '2000,20000');
const BACKENDS = new Set((process.env.SCALE_BACKENDS ?? 'postgres,sqlite').split(','));
const ONLY = new Set((process.env.SCALE_ONLY ?? 'open,takeup,reconcile,planes,host').split(','));
const PLANE_JOBS = Number(process.env.SCALE_PLANE_JOBS ?? 1000);
const WRK_SECONDS = Number(process.env.SCALE_WRK_SECONDS ?? 5);
const rows: string[][] = [];
const row = (...cells: Array<string | number>) => {
  const r = cells.map(String);
  rows.push(r);
  console.log(r.join('  |  '));
};
const load = () => loadavg()[0]!.toFixed(1);
const gc = () => (globalThis as { gc?: () => void }).gc?.();
const cpuMs = (since: NodeJS.CpuUsage) => {
  const c = process.cpuUsage(since);
  return (c.user + c.system) / 1000;
};
const settle = () => new Promise((r) => setTimeout(r, 50));
/** Until the process is idle (under 5 ms of CPU in 200 ms, at most 20 s): earlier work off the clock. */
async function idle(): Promise<void> {
  for (const end = Date.now() + 20_000; Date.now() < end;) {
    const c0 = process.cpuUsage();
    await new Promise((r) => setTimeout(r, 200));
    if (cpuMs(c0) < 5) return;
  }
}

async function until(what: string, holds: () => boolean, ms = 120_000): Promise<void> {
  const end = Date.now() + ms;
  while (!holds()) {
    if (Date.now() > end) throw new Error(`bench: timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Section 1: open jobs, memory and the lease round. */
async function openJobs(make: () => Promise<Backend>): Promise<void> {
  const backend = await make();
  const counted = countingStore(await backend.open());
  const clock = virtualClock();
  const { plane } = await planeOn(counted.store, clock);
  gc();
  const rss0 = process.memoryUsage().rss;
  const heap0 = process.memoryUsage().heapUsed;
  let open = 0;
  for (const n of OPEN) {
    const t0 = performance.now();
    const cpu0 = process.cpuUsage();
    await createJobs(plane, n - open, 64, `o${open}-`);
    const createCpu = cpuMs(cpu0);
    const createS = (performance.now() - t0) / 1000;
    open = n;
    await settle();
    gc();
    const m = process.memoryUsage();
    const { roundCpu, renewals, single, leasesEach, reads } = await leaseRounds(counted, clock, open);
    row(
      `open ${backend.name}`,
      `${n} open`,
      `RSS ${((m.rss - rss0) / 2 ** 20 / (n / 1000)).toFixed(1)} MiB/1k`,
      `heap ${((m.heapUsed - heap0) / 2 ** 20 / (n / 1000)).toFixed(1)} MiB/1k`,
      `create ${(createCpu / (n - (OPEN[OPEN.indexOf(n) - 1] ?? 0))).toFixed(2)} ms CPU/job (${((n - (OPEN[OPEN.indexOf(n) - 1] ?? 0)) / createS).toFixed(0)}/s)`,
      `lease round ${(roundCpu / (n / 1000)).toFixed(1)} ms CPU/1k`,
      `${renewals} renew stmt/round, ${leasesEach} leases each, ${single} single-lease writes, ${reads} job reads`,
      `load ${load()}`,
    );
  }
  await plane.stop();
  await counted.store.close();
  await backend.dispose();
}

/**
 * Three lease rounds (ttl/3 apart on the virtual clock) of a plane holding `open` jobs: CPU per round,
 * renewal statements per round and leases in each, single-lease writes and job reads per round.
 */
async function leaseRounds(counted: ReturnType<typeof countingStore>, clock: VirtualClock, open: number) {
  counted.calls.clear();
  counted.leaseNames.n = 0;
  const cpu1 = process.cpuUsage();
  // In steps: a round's timer is armed only once the previous round's statements came back.
  for (let r = 1; r <= 3; r++) {
    const end = Date.now() + 300_000;
    while ((counted.calls.get('acquireLeases') ?? 0) < r) {
      if (Date.now() > end) throw new Error('bench: no lease round');
      // Past the list's skew allowance (reconcile.sinceSkewMs, 5 s), so a pass lists what changed since the
      // previous one, not also the jobs created just before it.
      await clock.advance(10_000);
      await settle();
    }
  }
  await until(
    'the rechecks',
    () => (counted.calls.get('envelopeVersions') ?? 0) >= 3 * Math.ceil(open / 1000),
  );
  const renewals = (counted.calls.get('acquireLeases') ?? 0) / 3;
  return {
    roundCpu: cpuMs(cpu1) / 3,
    renewals,
    leasesEach: (counted.leaseNames.n / Math.max(1, renewals * 3)).toFixed(0),
    single: ((counted.calls.get('acquireLease') ?? 0) / 3).toFixed(1),
    reads: ((counted.calls.get('getEnvelope') ?? 0) / 3).toFixed(0),
  };
}

/**
 * Section 1b: open jobs written with SQL (seededRowsSql), taken up by a plane starting on them as after
 * a restart: the time and statements to take them all up, then memory and the lease round as in
 * section 1. The fake remote knows the seeded jobs as running without a record per job; its share of
 * memory (the open stream objects it hands out) is measured alone (fakeShare) and printed last.
 */
async function takeUp(make: () => Promise<Backend>, n: number): Promise<void> {
  const backend = await make();
  const template = await templateEnvelope(backend);
  const t0 = performance.now();
  const chunk = 50_000;
  for (let from = 1; from <= n; from += chunk)
    await backend.exec(seededRowsSql(backend.name, template, SEEDED_TS, from, Math.min(n, from + chunk - 1)));
  if (backend.name === 'postgres') await backend.exec('ANALYZE envelopes');
  const seedS = (performance.now() - t0) / 1000;
  const counted = countingStore(await backend.open());
  const clock = virtualClock();
  await settle();
  gc();
  const rss0 = process.memoryUsage().rss;
  const heap0 = process.memoryUsage().heapUsed;
  const cpu0 = process.cpuUsage();
  const w0 = performance.now();
  counted.calls.clear();
  let remote: FakeRemote | undefined;
  const { plane } = await planeOn(counted.store, clock, SCALE_OPTIONS, (r) => {
    r.seededPrefix = 'seed-';
    remote = r;
  });
  const startedS = (performance.now() - w0) / 1000;
  let shown = Date.now();
  await until(
    'every seeded job streamed',
    () => {
      if (Date.now() - shown > 10_000) {
        shown = Date.now();
        const by = new Map<string, number>();
        for (const st of Object.values(plane.watcherStates())) by.set(st, (by.get(st) ?? 0) + 1);
        console.log(`  … ${remote!.seededStreams} of ${n} streaming; watchers ${JSON.stringify([...by])}`);
      }
      return remote!.seededStreams >= n;
    },
    1_800_000,
  );
  await until(
    'every watcher attached',
    () => Object.values(plane.watcherStates()).filter((st) => st === 'attached').length >= n,
    600_000,
  );
  const takeS = (performance.now() - w0) / 1000;
  const takeCpu = cpuMs(cpu0);
  const takeCalls = [...counted.calls].sort((a, b) => b[1] - a[1]);
  await settle();
  gc();
  const m = process.memoryUsage();
  const { roundCpu, renewals, single, leasesEach, reads } = await leaseRounds(counted, clock, n);
  row(
    `take-up ${backend.name}`,
    `${n} open (seeded in ${seedS.toFixed(1)} s)`,
    `RSS ${((m.rss - rss0) / 2 ** 20 / (n / 1000)).toFixed(1)} MiB/1k`,
    `heap ${((m.heapUsed - heap0) / 2 ** 20 / (n / 1000)).toFixed(1)} MiB/1k (the fake agent's share included)`,
    `take-up ${takeS.toFixed(1)} s (start() ${startedS.toFixed(1)} s), ${(takeCpu / (n / 1000)).toFixed(0)} ms CPU/1k`,
    `statements at take-up: ${takeCalls.map(([k, v]) => `${k} ${v}`).join(', ')}`,
    `lease round ${(roundCpu / (n / 1000)).toFixed(1)} ms CPU/1k`,
    `${renewals} renew stmt/round, ${leasesEach} leases each, ${single} single-lease writes, ${reads} job reads`,
    `load ${load()}`,
  );
  await plane.stop();
  await counted.store.close();
  await backend.dispose();
}

/** One job the plane created through the API and saw running, removed again: the seeded rows' model. */
async function templateEnvelope(backend: Backend): Promise<Envelope> {
  const store = await backend.open();
  const clock = virtualClock();
  const { plane, remote } = await planeOn(store, clock);
  const [id] = await createJobs(plane, 1, 1, 'template');
  const remoteId = (await store.getEnvelope(id!))!.remoteId!;
  remote.set(remoteId, 'running');
  await until('the template running', () => plane.watcherStates()[id!] === 'attached');
  await settle();
  await plane.stop();
  const env = (await store.getEnvelope(id!))!;
  await store.close();
  await backend.exec(
    `DELETE FROM envelope_events WHERE envelope_id = '${id!}'; DELETE FROM envelopes WHERE id = '${id!}'`,
  );
  return env;
}

/**
 * The fake remote's own heap per 1,000 seeded jobs with an open stream each (what it allocates for a
 * stream, read back with nothing of the plane's around): subtract it from section 1b's heap figures.
 */
async function fakeShare(n = 10_000): Promise<number> {
  const remote = new FakeRemote(virtualClock());
  remote.seededPrefix = 'seed-';
  const connector = remote.connector('fake');
  const stop = new AbortController();
  setMaxListeners(0, stop.signal); // one signal for every stream here (the plane gives each its own)
  gc();
  const heap0 = process.memoryUsage().heapUsed;
  const pending: Array<Promise<unknown>> = [];
  for (let i = 1; i <= n; i++) {
    const it = connector.observe!(`seed-${i}`, null, stop.signal)[Symbol.asyncIterator]();
    await it.next();
    pending.push(it.next().catch(() => undefined));
  }
  await settle();
  gc();
  const per1k = (process.memoryUsage().heapUsed - heap0) / 2 ** 20 / (n / 1000);
  stop.abort();
  await Promise.all(pending);
  return per1k;
}

/** Section 2: a reconciliation pass against changed jobs, beside many finished ones. */
async function reconcilePasses(
  make: () => Promise<Backend>,
  stored: number,
  openJobs: number,
): Promise<void> {
  const backend = await make();
  const t0 = performance.now();
  await (await backend.open()).close(); // migrations
  const chunk = 250_000;
  for (let from = 1; from <= stored; from += chunk)
    await backend.exec(finishedRowsSql(backend.name, from, Math.min(stored, from + chunk - 1)));
  if (backend.name === 'postgres') await backend.exec('ANALYZE envelopes');
  const fillS = (performance.now() - t0) / 1000;
  const counted = countingStore(await backend.open());
  const clock = virtualClock();
  // Nothing but reconciliation learns of changes here: no stream, no push, and the poll every job falls
  // back to stops at once (its deadline). The passes are run by hand (the loop is off, so none of its
  // own overlaps a measured one), and no watch-lease round (every ttl/3) falls in the minute they span.
  const { plane, remote } = await planeOn(counted.store, clock, {
    reconcile: { enabled: false, intervalMs: 3_600_000 },
    watch: { leaseTtlMs: 600_000 },
    delivery: { stream: false, push: false },
    poll: { deadlineMs: 1 },
  });
  await createJobs(plane, openJobs, 64, 'r');
  await clock.advance(10_000);
  await plane.reconcileNow('fake'); // the first pass lists from the oldest job
  let remoteIds = [...remote.jobs.keys()];
  for (const changed of [0, 10, 100, 1000]) {
    // Past the list's skew allowance (reconcile.sinceSkewMs, 5 s), so a pass lists what changed since the
    // previous one, not also the jobs created just before it.
    await clock.advance(10_000);
    for (const id of remoteIds.slice(0, changed)) remote.set(id, 'succeeded');
    remoteIds = remoteIds.slice(changed);
    await idle();
    counted.calls.clear();
    counted.envelopesRead.n = 0;
    const cpu0 = process.cpuUsage();
    const w0 = performance.now();
    const [report] = await plane.reconcileNow();
    const wall = performance.now() - w0;
    row(
      `reconcile ${backend.name}`,
      `${stored} finished stored, ${openJobs} open`,
      `${changed} changed → ${report!.changed} recorded`,
      `${cpuMs(cpu0).toFixed(0)} ms CPU, ${wall.toFixed(0)} ms wall`,
      `${counted.calls.get('listEnvelopes') ?? 0} open-job pages, ${counted.envelopesRead.n} envelopes read`,
      `fill ${fillS.toFixed(0)} s`,
      `load ${load()}`,
    );
  }
  await plane.stop();
  await counted.store.close();
  await backend.dispose();
}

/**
 * Section 5: what one /metrics scrape costs against `stored` envelopes (finished ones written with SQL,
 * 1,000 open among them): the COUNT(*) by state a scrape ran before envelope_counts, the count it reads
 * now, the read of every task's usage (now once per usageMaxAgeMs, in the background), the listing of the
 * open jobs (now once per openJobsMaxAgeMs, in the background), whole scrapes after the first, and GET
 * /v1/costs's read of one tenant's tasks against its kept figures. CPU of this process (PostgreSQL's own
 * is in its server) and wall time, median of 9.
 */
async function scrapeCost(make: () => Promise<Backend>, stored: number): Promise<void> {
  const backend = await make();
  await (await backend.open()).close(); // migrations
  const chunk = 250_000;
  for (let from = 1; from <= stored; from += chunk)
    await backend.exec(finishedRowsSql(backend.name, from, Math.min(stored, from + chunk - 1)));
  await backend.exec(seededRowsSql(backend.name, await templateEnvelope(backend), SEEDED_TS, 1, 1000));
  if (backend.name === 'postgres') await backend.exec('ANALYZE envelopes');
  const store = await backend.open();
  const clock = virtualClock();
  // The open rows are running jobs to the fake remote: their watchers attach and go quiet before
  // anything is measured.
  let remote: FakeRemote | undefined;
  const { plane } = await planeOn(store, clock, SCALE_OPTIONS, (r) => {
    r.seededPrefix = 'seed-';
    remote = r;
  });
  await until('the open jobs streamed', () => remote!.seededStreams >= 1000);
  await plane.reconcileNow();
  await settle();
  const registry = createMetrics(plane, { defaultMetrics: false, clock });
  const raw = (sql: string) =>
    backend.name === 'postgres'
      ? (store as unknown as { query(s: string, p: unknown[]): Promise<unknown[]> }).query(sql, [])
      : (store as unknown as { conn: { q(s: string): { all(): unknown[] } } }).conn.q(sql).all();
  const measure = async (fn: () => unknown) => {
    const runs: Array<[number, number]> = [];
    for (let i = 0; i < 9; i++) {
      const cpu0 = process.cpuUsage();
      const w0 = performance.now();
      await fn();
      runs.push([cpuMs(cpu0), performance.now() - w0]);
    }
    const mid = (k: 0 | 1) => median(runs.map((r) => r[k])).toFixed(1);
    return `${mid(0)} ms CPU / ${mid(1)} ms wall`;
  };
  await registry.metrics(); // the first scrape waits for the first usage and open-job reads
  // GET /v1/costs for tenant `t` (every stored row is its): the read it ran per request, and what a
  // request costs now that the figures are kept per tenant (workflow-routes.ts).
  const costs = new CachedReadsByKey((tenant) => plane.usageByTarget(tenant), 30_000, clock);
  await costs.get('t');
  row(
    `scrape ${backend.name}`,
    `${stored + 1000} envelopes (1000 open)`,
    `COUNT(*) by state (before): ${await measure(() => raw('SELECT state, COUNT(*) AS n FROM envelopes GROUP BY state'))}`,
    `counts now: ${await measure(() => store.countEnvelopesByState())}`,
    `usage read: ${await measure(() => plane.usageByTarget())}`,
    `open-job listing (per scrape before, now in the background): ${await measure(() => plane.openJobSignals())}`,
    `whole scrape now: ${await measure(() => registry.metrics())}`,
    `costs request before (tenant read): ${await measure(() => plane.usageByTarget('t'))}`,
    `costs request now: ${await measure(() => costs.get('t'))}`,
    `load ${load()}`,
  );
  await plane.stop();
  await store.close();
  await backend.dispose();
}

/**
 * Section 6: one adoption round (plane/watch-leases.ts) of a plane whose peer holds every lease: `n` open
 * jobs written with SQL, taken up by a first plane (so it holds their leases and streams them), and a
 * second plane on its own virtual clock and store connection whose adoption rounds (every second of its
 * clock; leases of ten minutes, so none expires meanwhile) are timed one by one: the CPU of this process
 * and the wall time from the round's timer to its end, median of 5, with the envelopes it read and its
 * lease statements. PostgreSQL's tables are vacuumed first, as autovacuum keeps them.
 */
async function adoptionRounds(make: () => Promise<Backend>, n: number): Promise<void> {
  const backend = await make();
  const template = await templateEnvelope(backend);
  const chunk = 50_000;
  for (let from = 1; from <= n; from += chunk)
    await backend.exec(seededRowsSql(backend.name, template, SEEDED_TS, from, Math.min(n, from + chunk - 1)));
  const long = { reconcile: { intervalMs: 3_600_000 }, watch: { leaseTtlMs: 600_000 } };
  let remote: FakeRemote | undefined;
  const holderStore = await backend.open();
  const { plane: holder } = await planeOn(holderStore, virtualClock(), long, (r) => {
    r.seededPrefix = 'seed-';
    remote = r;
  });
  await until('every seeded job streamed', () => remote!.seededStreams >= n, 1_800_000);
  if (backend.name === 'postgres')
    for (const t of ['envelopes', 'leases']) await backend.exec(`VACUUM ANALYZE ${t}`);
  const counted = countingStore(await backend.open());
  const clock = virtualClock();
  const { plane } = await planeOn(counted.store, clock, {
    ...long,
    watch: { leaseTtlMs: 600_000, adoptIntervalMs: 1_000 },
  });
  const adopt = (plane as unknown as { leaseLoops: Array<{ rounds: number }> }).leaseLoops[1]!;
  const runs: Array<{ cpu: number; wall: number; read: number; claims: number }> = [];
  for (let i = 0; i < 5; i++) {
    await idle();
    counted.calls.clear();
    counted.envelopesRead.n = 0;
    const rounds = adopt.rounds;
    const cpu0 = process.cpuUsage();
    const w0 = performance.now();
    await clock.advance(1_000);
    await until('the adoption round', () => adopt.rounds > rounds, 600_000);
    runs.push({
      cpu: cpuMs(cpu0),
      wall: performance.now() - w0,
      read: counted.envelopesRead.n,
      claims: counted.calls.get('acquireLeases') ?? 0,
    });
  }
  const mid = (k: 'cpu' | 'wall') => median(runs.map((r) => r[k])).toFixed(0);
  row(
    `adopt ${backend.name}`,
    `${n} open, every lease a live peer's`,
    `round ${mid('cpu')} ms CPU, ${mid('wall')} ms wall (median of 5)`,
    `${runs[0]!.read} envelopes read, ${runs[0]!.claims} lease statements, ${Object.keys(plane.watcherStates()).length} adopted`,
    `load ${load()}`,
  );
  await plane.stop();
  await counted.store.close();
  await holder.stop();
  await holderStore.close();
  await backend.dispose();
}

/** Section 3: jobs/s through k plane processes on one schema. */
async function planeInstances(): Promise<void> {
  const worker = fileURLToPath(new URL('./scale-plane-worker.ts', import.meta.url));
  const tsx = fileURLToPath(new URL('../../node_modules/tsx/dist/cli.mjs', import.meta.url));
  for (const k of [1, 2, 3]) {
    const schema = freshSchemaName('tp_scale_planes');
    const url = urlForSchema(schema);
    const procs: TestProcess[] = [];
    const go = join(mkdtempSync(join(tmpdir(), 'tp-scale-go-')), 'go');
    // One at a time: the first migrates the schema.
    for (let i = 0; i < k; i++)
      procs.push(
        await spawnProcess(process.execPath, [tsx, worker, url, String(PLANE_JOBS), `w${i}`, go], {
          ready: /^ready$/,
          readyTimeoutMs: 120_000,
        }),
      );
    writeFileSync(go, '');
    const results = await Promise.all(
      procs.map(async (p) => {
        const m = await p.waitForLine(/^(\{.*\})$/, 300_000);
        await p.exited;
        return JSON.parse(m[1]!) as { elapsedMs: number; cpuMs: number };
      }),
    );
    const wall = Math.max(...results.map((r) => r.elapsedMs)) / 1000;
    const cpu = results.reduce((a, r) => a + r.cpuMs, 0) / (k * PLANE_JOBS);
    row(
      `planes postgres`,
      `${k} instance${k > 1 ? 's' : ''}`,
      `${((k * PLANE_JOBS) / wall).toFixed(0)} jobs/s (${k * PLANE_JOBS} jobs, create → succeeded)`,
      `${cpu.toFixed(2)} ms plane CPU/job`,
      `load ${load()}`,
    );
    await disposeSchema(schema, false);
  }
}

/** Section 4: the host's sends and GetTask, one backend after the other, wrk at 32 connections. */
async function hostBackends(): Promise<void> {
  if (!existsSync('/usr/bin/wrk')) {
    row('host', 'skipped: wrk is not installed (apt-get install wrk)');
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), 'tp-scale-host-'));
  const schema = freshSchemaName('tp_scale_host');
  for (const [name, db] of [
    ['sqlite', `sqlite:${dir}/host.db`],
    ['postgres', urlForSchema(schema)],
  ] as const) {
    const { proc, url } = await spawnHost(['--port', '0', '--db', db, '--log-level', 'warn']);
    const rpc = `${url}/a2a/jsonrpc`;
    await wrk(rpc, 'send', 2, `warm-${name}`);
    const send = await wrk(rpc, 'send', WRK_SECONDS, `s-${name}`);
    const created = (await (
      await fetch(rpc, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'a2a-version': '1.0' },
        body: `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"get-${name}","role":"ROLE_USER","parts":[{"text":"hi"}]},"configuration":{"returnImmediately":true}}}`,
      })
    ).json()) as { result: { task: { id: string } } };
    const get = await wrk(
      rpc,
      'get',
      WRK_SECONDS,
      'g',
      `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"${created.result.task.id}"}}`,
    );
    const delay = await loopDelayP99(url);
    row(
      `host ${name}`,
      `sends ${send.rps.toFixed(0)}/s p99 ${send.p99.toFixed(1)} ms`,
      `GetTask ${get.rps.toFixed(0)}/s p99 ${get.p99.toFixed(1)} ms`,
      `event loop delay max bucket ${delay}`,
      `load ${load()}`,
    );
    await proc.stop();
  }
  rmSync(dir, { recursive: true, force: true });
  await disposeSchema(schema, false);
}

/** The highest event-loop delay bucket that holds samples, from the host's /metrics. */
async function loopDelayP99(url: string): Promise<string> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const b = [...text.matchAll(/^taskplane_host_event_loop_delay_seconds_bucket\{le="([^"]+)"\} (\d+)$/gm)];
  const total = Number(b.at(-1)?.[2] ?? 0);
  const p99 = b.find((m) => Number(m[2]) >= total * 0.99);
  return p99 ? `p99 ≤ ${p99[1]} s (${total} samples)` : 'no samples';
}

function wrk(
  url: string,
  mode: 'send' | 'get',
  seconds: number,
  prefix: string,
  body = '{}',
): Promise<{ rps: number; p99: number }> {
  const script = fileURLToPath(new URL('./wrk-a2a.lua', import.meta.url));
  const args = ['-t1', '-c32', `-d${seconds}s`, '--timeout', '10s', '--latency', '-s', script, url];
  return new Promise((resolve, reject) =>
    execFile(
      '/usr/bin/wrk',
      args,
      { env: { ...process.env, BENCH_MODE: mode, BENCH_BODY: body, BENCH_PREFIX: prefix } },
      (err, stdout) => {
        if (err) return reject(err);
        const rps = /Requests\/sec:\s+([\d.]+)/.exec(stdout);
        const p99 = /^\s+99%\s+([\d.]+)(us|ms|s)$/m.exec(stdout);
        if (!rps || !p99) return reject(new Error(`wrk output not understood:\n${stdout}`));
        const scale = { us: 0.001, ms: 1, s: 1000 }[p99[2] as 'us' | 'ms' | 's'];
        resolve({ rps: Number(rps[1]), p99: Number(p99[1]) * scale });
      },
    ),
  );
}

async function main(): Promise<void> {
  console.log(
    `bench:scale  open ${OPEN.join(',')}  seeded ${SEEDED.join(',')}  stored ${STORED.join(',')}  load ${load()}`,
  );
  if (!(globalThis as { gc?: unknown }).gc)
    console.log('(run with --expose-gc for memory after a collection)');
  const makers = { postgres: postgresBackend, sqlite: sqliteBackend };
  for (const make of Object.entries(makers).flatMap(([name, m]) => (BACKENDS.has(name) ? [m] : []))) {
    if (ONLY.has('open')) await openJobs(make);
    if (ONLY.has('takeup')) for (const n of SEEDED) await takeUp(make, n);
    if (ONLY.has('reconcile'))
      for (const s of STORED) for (const o of RECONCILE_OPEN) await reconcilePasses(make, s, o);
    if (ONLY.has('scrape')) for (const s of SCRAPE) await scrapeCost(make, s);
    if (ONLY.has('adopt')) for (const n of ADOPT) await adoptionRounds(make, n);
  }
  // Last: what it allocates and frees would stay in the RSS the sections above start from.
  if (ONLY.has('takeup'))
    row('take-up', `the fake agent's own heap: ${(await fakeShare()).toFixed(2)} MiB/1k seeded streams`);
  if (ONLY.has('planes')) await planeInstances();
  if (ONLY.has('host')) await hostBackends();
  console.log('\n' + rows.map((r) => '| ' + r.join(' | ') + ' |').join('\n'));
}

await main();
process.exit(0);
