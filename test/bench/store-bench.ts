// Store benchmark (issue 2): durable envelope transitions per second on SQLite (file, WAL; writes on
// the write worker, the default, or on the event loop with NORMAL + WAL fsync or FULL) and PostgreSQL. Run with `npm run bench:store`. A benchmark, not a test.
//
// - single:  one envelope, updateEnvelope with one event each, awaited one by one (latency-bound:
//            every transition waits for its own commit to reach the disk).
// - batched: CONCURRENCY envelopes, one writer loop each, all in flight at once. The Store port has no
//            batch method; concurrency is what lets SQLite's group commit (and PostgreSQL's own commit
//            grouping and connection pool) share fsyncs. Every transition is still durable when it resolves.
// Each figure is the median of RUNS runs.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { newEnvelope, type Envelope } from '../../src/core/envelope.ts';
import { PostgresStore } from '../../src/store/postgres/pg-store.ts';
import { SqliteStore, type SqliteStoreOptions } from '../../src/store/sqlite/sqlite-store.ts';
import type { Store } from '../../src/store/store.ts';
import { median } from './stats.ts';

const RUNS = 5;
const SINGLE_MS = 250;
const CONCURRENCY = 256;
const BATCHED_MS = 400;
const PG_URL = process.env.TASKPLANE_TEST_PG ?? 'postgres://postgres@127.0.0.1:5432/test';

let idCounter = 0;
function envelope(): Envelope {
  idCounter += 1;
  return newEnvelope({
    id: `bench_${process.pid}_${idCounter}`,
    tenant: 'bench',
    connector: 'a2a',
    target: 'agent',
    requestKind: 'message',
    input: { text: 'x' },
    inputHash: 'h',
    createdAt: 0,
    remoteVersion: 0,
  });
}

/** Applies `count` transitions to one envelope, awaiting each; stops early at `deadline` when given. */
async function transitions(store: Store, count: number, deadline = Infinity): Promise<number> {
  let current = (await store.createEnvelope(envelope(), [])).envelope;
  let done = 0;
  while (done < count && performance.now() < deadline) {
    const next = {
      ...current,
      remoteVersion: (current.remoteVersion ?? 0) + 1,
      updatedAt: current.updatedAt + 1,
    };
    const event = {
      envelopeId: next.id,
      tenant: next.tenant,
      type: 'state_changed' as const,
      at: next.updatedAt,
      data: { v: done },
    };
    current = (await store.updateEnvelope(next, current.version, [event])).envelope;
    done += 1;
  }
  return done;
}

async function single(store: Store): Promise<number> {
  const start = performance.now();
  const done = await transitions(store, Number.MAX_SAFE_INTEGER, start + SINGLE_MS);
  return done / ((performance.now() - start) / 1000);
}

async function batched(store: Store): Promise<number> {
  const start = performance.now();
  const deadline = start + BATCHED_MS;
  const counts = await Promise.all(
    Array.from({ length: CONCURRENCY }, () => transitions(store, Number.MAX_SAFE_INTEGER, deadline)),
  );
  return counts.reduce((a, b) => a + b, 0) / ((performance.now() - start) / 1000);
}

async function measure(open: () => Promise<Store>): Promise<{ single: number; batched: number }> {
  const store = await open();
  try {
    // Warm up: JIT, prepared statements, the pool, and a WAL file grown to its checkpoint size (the first
    // commits into a new WAL also extend the file, which costs an extra metadata sync each).
    await transitions(store, 50);
    await batched(store);
    const s: number[] = [];
    const b: number[] = [];
    for (let i = 0; i < RUNS; i++) s.push(await single(store));
    for (let i = 0; i < RUNS; i++) b.push(await batched(store));
    return { single: median(s), batched: median(b) };
  } finally {
    await store.close();
  }
}

const rows: { backend: string; single: string; batched: string }[] = [];
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');

const dir = mkdtempSync(join(tmpdir(), 'taskplane-bench-'));
try {
  const sqlite = (name: string, options: Omit<SqliteStoreOptions, 'path'>) => async () => {
    const result = await measure(async () => new SqliteStore({ path: join(dir, `${name}.db`), ...options }));
    rows.push({ backend: `sqlite ${name}`, single: fmt(result.single), batched: fmt(result.batched) });
  };
  // The default: writes on the write worker's connection, FULL there (worker-writes.ts).
  await sqlite('write worker (default), group commit', {})();
  await sqlite('write worker, no group commit', { groupCommit: false })();
  // Writes on the event loop: NORMAL with the WAL fsynced on the thread pool, or FULL (fsync in COMMIT).
  await sqlite('event loop, NORMAL + WAL fsync, group commit', { writeThread: 'event-loop' })();
  await sqlite('event loop, FULL, group commit', { writeThread: 'event-loop', synchronous: 'FULL' })();

  const schema = `tp_bench_${process.pid}`;
  const url = new URL(PG_URL);
  url.searchParams.set('schema', schema);
  try {
    const result = await measure(() => PostgresStore.open({ url: url.toString(), poolMax: 16 }));
    rows.push({ backend: 'postgres', single: fmt(result.single), batched: fmt(result.batched) });
  } finally {
    const admin = new pg.Client({ connectionString: PG_URL });
    await admin.connect();
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.end();
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}

console.log(
  `\ndurable envelope transitions/s (median of ${RUNS}; batched = ${CONCURRENCY} writers in flight)\n`,
);
console.table(Object.fromEntries(rows.map((r) => [r.backend, { single: r.single, batched: r.batched }])));
