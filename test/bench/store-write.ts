// SQLite envelope write cost by schema: CPU per updateEnvelope (the store's own write op and statement,
// no events, no fsync: an in-memory database) on a database migrated up to 11 (before the reconciliation
// columns and indexes), up to 12, and to the current migration. Run with `npm run bench:store-write`.
// A benchmark, not a test: it prints figures; quote them with the load average (`uptime`).
//
// The table holds ROWS envelopes shaped as a plane's are (newEnvelope's document, about 0.8 KB): most
// finished, some open and started, a few not started. Two writes are measured, each on open jobs in turn:
// - observe: a started job's document changes (remote version, updated time), its state does not: most
//   of a job's writes (observations, stream events, lease and retry bookkeeping);
// - state:   the same with the state moving between running and waiting_for_input, which also fires the
//   envelope count trigger (migration 13) and moves the job between partial indexes.
// Each figure is the median of RUNS batches of BATCH writes, in µs of process CPU (user + system) per
// write. The schemas' databases are open side by side and their batches alternate, so a change of machine
// load (the figures move with it) touches every schema alike: compare rows of one run, not across runs.
// BENCH_STORE_WRITE_MIGRATIONS=<file> adds a row for a JSON list of migrations ({id, name, sql}), e.g.
// an earlier version's SQLITE_MIGRATIONS, to set a schema change against the one it replaces.
import { readFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import type { Migration } from '../../src/store/migration.ts';
import { newEnvelope, type Envelope } from '../../src/core/envelope.ts';
import { migrateSqlite } from '../../src/store/sqlite/sqlite-migrate.ts';
import { SQLITE_MIGRATIONS } from '../../src/store/sqlite/sqlite-schema.ts';
import { statementCache } from '../../src/store/sqlite/statement-cache.ts';
import { WRITES } from '../../src/store/sqlite/write-ops.ts';
import { serializeEnvelope } from '../../src/store/sqlite/write-rows.ts';

const ROWS = 5_000;
const OPEN = 500;
const RUNS = 21;
const BATCH = 4_000;

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

function open(migrations: readonly Migration[]): Database.Database {
  const db = new Database(':memory:');
  migrateSqlite(db, migrations, 0);
  return db;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/** A database of `migrations` filled with ROWS envelopes, and its two writes, each a batch timed in CPU. */
function bench(migrations: readonly Migration[]) {
  const db = open(migrations);
  const c = statementCache(db);
  const jobs: Envelope[] = [];
  db.transaction(() => {
    for (let i = 0; i < ROWS; i++) {
      // The first OPEN are open (a tenth of them not started yet), the rest finished.
      const e =
        i < OPEN
          ? envelope(i, 'running', i % 10 === 0 ? null : `remote_${i}`)
          : envelope(i, 'succeeded', `remote_${i}`);
      WRITES.createEnvelope(c, [], serializeEnvelope(e), [], undefined, null);
      if (i < OPEN && e.remoteId !== null) jobs.push(e);
    }
  })();
  let n = 0;
  const write = (moveState: boolean) => {
    const k = n % jobs.length;
    const current = jobs[k]!;
    const next: Envelope = {
      ...current,
      version: current.version + 1,
      remoteVersion: (current.remoteVersion ?? 0) + 1,
      updatedAt: current.updatedAt + 1,
      state: moveState ? (current.state === 'running' ? 'waiting_for_input' : 'running') : current.state,
    };
    WRITES.updateEnvelope(c, [], serializeEnvelope(next), current.version, []);
    jobs[k] = next;
    n += 1;
  };
  const batch = (moveState: boolean) => {
    const start = process.cpuUsage();
    for (let i = 0; i < BATCH; i++) write(moveState);
    const used = process.cpuUsage(start);
    return (used.user + used.system) / BATCH;
  };
  return { db, batch, observe: [] as number[], state: [] as number[] };
}

const latest = Math.max(...SQLITE_MIGRATIONS.map((m) => m.id));
const schemas: Array<[string, readonly Migration[]]> = [11, 12, latest]
  .filter((v, i, a) => a.indexOf(v) === i)
  .map((m) => [`migrations 1-${m}`, SQLITE_MIGRATIONS.filter((x) => x.id <= m)]);
const extra = process.env.BENCH_STORE_WRITE_MIGRATIONS;
if (extra) schemas.push([extra, JSON.parse(readFileSync(extra, 'utf8')) as Migration[]]);

const benches = schemas.map(([name, migrations]) => ({ name, ...bench(migrations) }));
try {
  for (const b of benches) b.batch(false); // warm up: JIT, prepared statements, page cache
  for (let i = 0; i < RUNS; i++) {
    for (const b of benches) {
      b.observe.push(b.batch(false));
      b.state.push(b.batch(true));
    }
  }
} finally {
  for (const b of benches) b.db.close();
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
