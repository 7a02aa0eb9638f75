// Envelope write cost by schema: CPU per envelope update (the store's own write statement, no events) on
// a database migrated up to 11 (before the reconciliation columns and indexes), up to 12, and to the
// current migration, first on SQLite, then on PostgreSQL. Run with `npm run bench:store-write`
// (BENCH_STORE_WRITE=sqlite or =pg runs one backend; PostgreSQL at TASKPLANE_TEST_PG, else the test
// database). A benchmark, not a test: it prints figures; quote them with the load average (`uptime`).
//
// The table holds ROWS envelopes shaped as a plane's are (newEnvelope's document, about 0.8 KB): most
// finished, some open and started, a few not started. Two writes are measured, each on open jobs in turn:
// - observe: a started job's document changes (remote version, updated time), its state does not: most
//   of a job's writes (observations, stream events, lease and retry bookkeeping);
// - state:   the same with the state moving between running and waiting_for_input, which also fires the
//   envelope count trigger (migration 13) and moves the job between partial indexes.
// Each figure is the median of RUNS batches of BATCH writes, in µs of CPU per write. The schemas' databases
// are open side by side and their batches alternate, so a change of machine load (the figures move with
// it) touches every schema alike: compare rows of one run, not across runs.
// - SQLite: process CPU (user + system) of updateEnvelope's statement on an in-memory database (no fsync).
// - PostgreSQL: the server backend's CPU (/proc/<pid>/schedstat, so the server must run on this machine)
//   for the store's UPDATE, each its own transaction, synchronous_commit off (no wait on the WAL flush),
//   one schema per migration level in one database; also the share of updates that were HOT.
// BENCH_STORE_WRITE_MIGRATIONS=<file> adds a SQLite row for a JSON list of migrations ({id, name, sql}),
// e.g. an earlier version's SQLITE_MIGRATIONS, to set a schema change against the one it replaces;
// BENCH_STORE_WRITE_PG_MIGRATIONS=<file> does the same for PostgreSQL.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import pg from 'pg';
import type { Migration } from '../../src/store/migration.ts';
import { newEnvelope, type Envelope } from '../../src/core/envelope.ts';
import { migratePostgres } from '../../src/store/postgres/pg-migrate.ts';
import { PG_MIGRATIONS } from '../../src/store/postgres/pg-schema.ts';
import { envelopeColumns } from '../../src/store/sql-rows.ts';
import { migrateSqlite } from '../../src/store/sqlite/sqlite-migrate.ts';
import { SQLITE_MIGRATIONS } from '../../src/store/sqlite/sqlite-schema.ts';
import { statementCache } from '../../src/store/sqlite/statement-cache.ts';
import { WRITES } from '../../src/store/sqlite/write-ops.ts';
import { serializeEnvelope } from '../../src/store/sqlite/write-rows.ts';

const ROWS = 5_000;
const OPEN = 500;
const RUNS = 21;
const BATCH = 4_000;
const PG_RUNS = 45;
const PG_BATCH = 250;
const PG_URL = process.env.TASKPLANE_TEST_PG ?? 'postgres://postgres@127.0.0.1:5432/test';
const BACKENDS = (process.env.BENCH_STORE_WRITE ?? 'sqlite,pg').split(',');

function envelope(i: number, state: Envelope['state'], remoteId: string | null): Envelope {
  return {
    ...newEnvelope({
      id: `env_${i}`,
      tenant: `tenant_${i % 4}`,
      connector: 'a2a',
      target: `agent_${i % 3}`,
      requestKind: 'message',
      input: { text: `question ${i}` },
      inputHash: `h${i}`,
      createdAt: 1_700_000_000_000 + i,
      remoteVersion: 0,
    }),
    state,
    remoteId,
    contextId: remoteId && `ctx_${i}`,
    updatedAt: 1_700_000_000_000 + i,
  };
}

/** The ROWS envelopes: the first OPEN are open (a tenth of them not started yet), the rest finished. */
function envelopes(): Envelope[] {
  return Array.from({ length: ROWS }, (_, i) =>
    i < OPEN
      ? envelope(i, 'running', i % 10 === 0 ? null : `remote_${i}`)
      : envelope(i, 'succeeded', `remote_${i}`),
  );
}

/** The open, started jobs of `all`, and the next version of the k-th write to them. */
function writes(all: Envelope[]) {
  const jobs = all.filter((e, i) => i < OPEN && e.remoteId !== null);
  let n = 0;
  return (moveState: boolean): { current: Envelope; next: Envelope } => {
    const k = n % jobs.length;
    const current = jobs[k]!;
    const next: Envelope = {
      ...current,
      version: current.version + 1,
      remoteVersion: (current.remoteVersion ?? 0) + 1,
      updatedAt: current.updatedAt + 1,
      state: moveState ? (current.state === 'running' ? 'waiting_for_input' : 'running') : current.state,
    };
    jobs[k] = next;
    n += 1;
    return { current, next };
  };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

function spread(values: number[]): string {
  const sorted = [...values].sort((a, b) => a - b);
  return `${sorted[0]!.toFixed(1)}–${sorted[sorted.length - 1]!.toFixed(1)}`;
}

function levels(all: readonly Migration[], file: string | undefined): Array<[string, readonly Migration[]]> {
  const latest = Math.max(...all.map((m) => m.id));
  const schemas: Array<[string, readonly Migration[]]> = [11, 12, latest - 1, latest]
    .filter((v, i, a) => a.indexOf(v) === i)
    .map((m) => [`migrations 1-${m}`, all.filter((x) => x.id <= m)]);
  if (file) schemas.push([file, JSON.parse(readFileSync(file, 'utf8')) as Migration[]]);
  return schemas;
}

/** A SQLite database of `migrations` filled with the envelopes, and its write, a batch timed in CPU. */
function sqliteBench(migrations: readonly Migration[]) {
  const db = new Database(':memory:');
  migrateSqlite(db, migrations, 0);
  const c = statementCache(db);
  const all = envelopes();
  db.transaction(() => {
    for (const e of all) WRITES.createEnvelope(c, [], serializeEnvelope(e), [], undefined, null);
  })();
  const write = writes(all);
  const batch = (moveState: boolean) => {
    const start = process.cpuUsage();
    for (let i = 0; i < BATCH; i++) {
      const { current, next } = write(moveState);
      WRITES.updateEnvelope(c, [], serializeEnvelope(next), current.version, []);
    }
    const used = process.cpuUsage(start);
    return (used.user + used.system) / BATCH;
  };
  return { close: () => db.close(), batch, observe: [] as number[], state: [] as number[] };
}

function runSqlite(): void {
  const benches = levels(SQLITE_MIGRATIONS, process.env.BENCH_STORE_WRITE_MIGRATIONS).map(
    ([name, migrations]) => ({ name, ...sqliteBench(migrations) }),
  );
  try {
    for (const b of benches) b.batch(false); // warm up: JIT, prepared statements, page cache
    for (let i = 0; i < RUNS; i++) {
      for (const b of benches) {
        b.observe.push(b.batch(false));
        b.state.push(b.batch(true));
      }
    }
  } finally {
    for (const b of benches) b.close();
  }
  console.log(
    `\nSQLite updateEnvelope, µs CPU per write (median of ${RUNS} batches of ${BATCH}; ${ROWS} envelopes, ${OPEN} open)\n`,
  );
  console.table(
    Object.fromEntries(
      benches.map((b) => [
        b.name,
        { observe: median(b.observe).toFixed(1), state: median(b.state).toFixed(1) },
      ]),
    ),
  );
}

// The statements PostgresStore.createEnvelope and updateEnvelope issue (pg-store.ts).
const PG_INSERT = `INSERT INTO envelopes (tenant, idempotency_key, connector, target, remote_id, state, updated_at,
  version, retention_until, doc, id) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`;
const PG_UPDATE = `UPDATE envelopes SET tenant = $1, idempotency_key = $2, connector = $3, target = $4, remote_id = $5,
           state = $6, updated_at = $7, version = $8, retention_until = $9, doc = $10 WHERE id = $11 AND version = $12`;

/** Nanoseconds the server process `pid` has run on a CPU (the first field of its schedstat). */
function cpuNs(pid: number): number {
  return Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]);
}

/** A PostgreSQL schema of `migrations` filled with the envelopes, and its write, a batch timed in server CPU. */
async function pgBench(schema: string, migrations: readonly Migration[]) {
  const client = new pg.Client({ connectionString: PG_URL, options: `-c search_path=${schema}` });
  await client.connect();
  await migratePostgres(client, schema, migrations, 0);
  await client.query('SET synchronous_commit = off');
  const all = envelopes();
  await client.query('BEGIN');
  for (const e of all) await client.query(PG_INSERT, [...envelopeColumns(e), e.id]);
  await client.query('COMMIT');
  await client.query('VACUUM ANALYZE envelopes');
  const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  const pid = rows[0]!.pid;
  const write = writes(all);
  const batch = async (moveState: boolean) => {
    const start = cpuNs(pid);
    for (let i = 0; i < PG_BATCH; i++) {
      const { current, next } = write(moveState);
      const stored = { ...next, version: current.version + 1 };
      const updated = await client.query(PG_UPDATE, [...envelopeColumns(stored), next.id, current.version]);
      if (updated.rowCount !== 1) throw new Error(`update of ${next.id} matched ${updated.rowCount} rows`);
      next.version = stored.version;
    }
    return (cpuNs(pid) - start) / 1000 / PG_BATCH;
  };
  const hot = async () => {
    // The statistics collector's counters reach the view a moment after the backend reports them.
    await client.query('SELECT pg_stat_force_next_flush()').catch(() => undefined);
    const found = await client.query<{ upd: string; hot: string }>(
      `SELECT n_tup_upd AS upd, n_tup_hot_upd AS hot FROM pg_stat_user_tables
       WHERE schemaname = $1 AND relname = 'envelopes'`,
      [schema],
    );
    const r = found.rows[0];
    return r ? `${((100 * Number(r.hot)) / Math.max(1, Number(r.upd))).toFixed(0)} %` : '?';
  };
  return { client, batch, hot, observe: [] as number[], state: [] as number[] };
}

async function runPostgres(): Promise<void> {
  const prefix = `bench_write_${randomBytes(4).toString('hex')}`;
  const schemas = levels(PG_MIGRATIONS, process.env.BENCH_STORE_WRITE_PG_MIGRATIONS);
  const benches: Array<{ name: string; schema: string } & Awaited<ReturnType<typeof pgBench>>> = [];
  try {
    for (const [i, [name, migrations]] of schemas.entries()) {
      const schema = `${prefix}_${i}`;
      benches.push({ name, schema, ...(await pgBench(schema, migrations)) });
    }
    for (const b of benches) await b.batch(false); // warm up: caches, the relation's pages
    for (let i = 0; i < PG_RUNS; i++) {
      for (const b of benches) {
        b.observe.push(await b.batch(false));
        b.state.push(await b.batch(true));
      }
    }
    console.log(
      `\nPostgreSQL envelope UPDATE, µs server CPU per write (median and range of ${PG_RUNS} batches of ${PG_BATCH}; ${ROWS} envelopes, ${OPEN} open; vs first: median ratio within a run)\n`,
    );
    // Against the first schema: the median of each run's ratio, as a run's batches are seconds apart.
    const ratio = (mine: number[], first: number[]) =>
      `${median(mine.map((v, i) => v / first[i]!)).toFixed(2)}×`;
    const table: Record<string, Record<string, string>> = {};
    for (const b of benches) {
      table[b.name] = {
        observe: median(b.observe).toFixed(1),
        'observe range': spread(b.observe),
        'observe vs first': ratio(b.observe, benches[0]!.observe),
        state: median(b.state).toFixed(1),
        'state range': spread(b.state),
        'state vs first': ratio(b.state, benches[0]!.state),
        'HOT updates': await b.hot(),
      };
    }
    console.table(table);
  } finally {
    for (const b of benches) {
      await b.client.query(`DROP SCHEMA IF EXISTS ${b.schema} CASCADE`).catch(() => undefined);
      await b.client.end();
    }
  }
}

if (BACKENDS.includes('sqlite')) runSqlite();
if (BACKENDS.includes('pg')) await runPostgres();
