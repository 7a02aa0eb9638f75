import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pino from 'pino';
import { VirtualClock, type Clock } from '../../src/core/clock.ts';
import { SeededRandom } from '../../src/core/random.ts';
import { Plane } from '../../src/plane/plane.ts';
import type { PlaneOptions } from '../../src/plane/options.ts';
import { PostgresStore } from '../../src/store/postgres/pg-store.ts';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import type { Store } from '../../src/store/store.ts';
import type { Envelope } from '../../src/core/envelope.ts';
import { FakeRemote } from '../plane/fake-remote.ts';
import { disposeSchema, freshSchemaName, urlForSchema, withPgClient } from '../support/pg.ts';

/** What bench:scale needs of a backend: a fresh store, raw SQL on it, and its removal. */
export interface Backend {
  name: 'sqlite' | 'postgres';
  open(): Promise<Store>;
  /** Runs SQL on a connection of its own (bulk rows the API would take minutes to write). */
  exec(sql: string): Promise<void>;
  dispose(): Promise<void>;
}

export async function sqliteBackend(): Promise<Backend> {
  const dir = mkdtempSync(join(tmpdir(), 'tp-scale-'));
  const path = join(dir, 'plane.db');
  return {
    name: 'sqlite',
    open: async () => new SqliteStore({ path }),
    exec: async (sql) => {
      const db = new Database(path);
      db.pragma('busy_timeout = 60000');
      db.exec(sql);
      db.close();
    },
    dispose: async () => rmSync(dir, { recursive: true, force: true }),
  };
}

export async function postgresBackend(): Promise<Backend> {
  const schema = freshSchemaName('tp_scale');
  const url = urlForSchema(schema);
  return {
    name: 'postgres',
    open: () => PostgresStore.open({ url, poolMax: 8 }),
    exec: (sql) =>
      withPgClient(async (pg) => {
        await pg.query(`SET search_path TO ${schema}`);
        await pg.query(sql);
      }),
    dispose: () => disposeSchema(schema, false),
  };
}

/** `n` finished envelopes written with SQL, ids f1..fn (their docs as the store would read them). */
export function finishedRowsSql(backend: Backend['name'], from: number, to: number): string {
  const series =
    backend === 'postgres'
      ? `generate_series(${from}, ${to}) AS i`
      : `(WITH RECURSIVE s(i) AS (SELECT ${from} UNION ALL SELECT i + 1 FROM s WHERE i < ${to}) SELECT i FROM s)`;
  const doc = `'{"id":"f' || i || '","tenant":"t","connector":"fake","target":"fake","state":"succeeded","remoteId":"old' || i || '","updatedAt":' || i || '}'`;
  return `INSERT INTO envelopes (id, tenant, idempotency_key, connector, target, remote_id, state, updated_at, version, doc)
    SELECT 'f' || i, 't', NULL, 'fake', 'fake', 'old' || i, 'succeeded', i, 1, ${
      backend === 'postgres' ? `(${doc})::jsonb` : doc
    } FROM ${series}`;
}

/**
 * Open envelopes `s<from>`..`s<to>` written with SQL, each a copy of `template` (a job the plane created
 * and saw running) under its own id, idempotency key and remote id `seed-<i>`, running at the remote's
 * `ts`: the rows a plane finds after a restart, written in seconds instead of through the API. The rows
 * are all a plane needs to watch a job (its events are history, read by no watcher).
 */
export function seededRowsSql(
  backend: Backend['name'],
  template: Envelope,
  ts: number,
  from: number,
  to: number,
): string {
  const series =
    backend === 'postgres'
      ? `generate_series(${from}, ${to}) AS i`
      : `(WITH RECURSIVE s(i) AS (SELECT ${from} UNION ALL SELECT i + 1 FROM s WHERE i < ${to}) SELECT i FROM s)`;
  const { version: _version, ...fields } = template;
  const base = {
    ...fields,
    state: 'running',
    nativeState: 'WORKING',
    remoteVersion: ts,
    stateTimestamp: ts,
    idempotencyKey: null,
    remoteId: null,
    id: null,
  };
  const literal = `'${JSON.stringify(base).replaceAll("'", "''")}'`;
  const doc =
    backend === 'postgres'
      ? `${literal}::jsonb || jsonb_build_object('id', 's' || i, 'idempotencyKey', 's' || i, 'remoteId', 'seed-' || i)`
      : `json_set(${literal}, '$.id', 's' || i, '$.idempotencyKey', 's' || i, '$.remoteId', 'seed-' || i)`;
  return `INSERT INTO envelopes (id, tenant, idempotency_key, connector, target, remote_id, state, updated_at, version,
      retention_until, doc)
    SELECT 's' || i, ${sqlText(template.tenant)}, 's' || i, ${sqlText(template.connector)}, ${sqlText(template.target)},
      'seed-' || i, 'running', ${template.updatedAt}, 1, NULL, ${doc} FROM ${series}`;
}

const sqlText = (v: string) => `'${v.replaceAll("'", "''")}'`;

/**
 * A store wrapper counting calls and the lease names renewed, so a round's statements can be read
 * off: the lease round must be one renewal statement for all held leases, not one per job.
 */
export function countingStore(store: Store): {
  store: Store;
  calls: Map<string, number>;
  leaseNames: { n: number };
  /** Envelopes handed back by the reads that return several (listings, reconciliation reads). */
  envelopesRead: { n: number };
} {
  const calls = new Map<string, number>();
  const leaseNames = { n: 0 };
  const envelopesRead = { n: 0 };
  const several = new Set([
    'listEnvelopes',
    'listReconcileDue',
    'findOpenEnvelopesByRemote',
    'listUnwatchedEnvelopes',
  ]);
  const proxy = new Proxy(store, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver) as unknown;
      if (typeof v !== 'function') return v;
      return (...args: unknown[]) => {
        const name = String(prop);
        calls.set(name, (calls.get(name) ?? 0) + 1);
        if (name === 'acquireLeases') leaseNames.n += (args[0] as string[]).length;
        const result = (v as (...a: unknown[]) => unknown).apply(target, args);
        if (several.has(name) && result instanceof Promise)
          return result.then((r: unknown) => {
            envelopesRead.n += Array.isArray(r)
              ? r.length
              : ((r as { items?: unknown[] }).items?.length ?? 0);
            return r;
          });
        return result;
      };
    },
  });
  return { store: proxy, calls, leaseNames, envelopesRead };
}

export const SCALE_OPTIONS: PlaneOptions = {
  reconcile: { intervalMs: 3_600_000 },
  watch: { leaseTtlMs: 30_000 },
};

/** One plane on `store` with a fake remote whose jobs stay running until set otherwise. */
export async function planeOn(
  store: Store,
  clock: Clock,
  options = SCALE_OPTIONS,
  setup: (remote: FakeRemote) => void = () => {},
) {
  const remote = new FakeRemote(clock);
  setup(remote);
  const connector = remote.connector('fake', {});
  const plane = new Plane({
    instanceId: `scale-${Math.random().toString(36).slice(2, 8)}`,
    clock,
    random: new SeededRandom(7),
    store,
    connectors: (t) => (t === 'fake' ? connector : undefined),
    options,
    // SCALE_LOG=warn shows the engine's warnings while looking into a run.
    ...(process.env.SCALE_LOG ? { logger: pino({ level: process.env.SCALE_LOG }) } : {}),
  });
  await plane.start();
  return { plane, remote };
}

export function virtualClock(): VirtualClock {
  return new VirtualClock(1_700_000_000_000);
}

/** Creates `n` jobs, `concurrency` at a time, each started (remote id known) before it resolves. */
export async function createJobs(plane: Plane, n: number, concurrency = 64, prefix = 'j'): Promise<string[]> {
  const ids: string[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        const i = next++;
        const { envelope } = await plane.create(
          { tenant: 't', target: 'fake', input: `${prefix}${i}`, idempotencyKey: `${prefix}${i}` },
          { wait: 'started' },
        );
        ids.push(envelope.id);
      }
    }),
  );
  return ids;
}
