import Database from 'better-sqlite3';
import { describe, expect, it, onTestFinished } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/pg-store.ts';
import { SQLITE_MIGRATIONS } from '../../src/store/sqlite/sqlite-schema.ts';
import { migrateSqlite } from '../../src/store/sqlite/sqlite-migrate.ts';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import type { Store } from '../../src/store/store.ts';
import { disposeSchema, freshSchemaName, urlForSchema, withPgClient, withPgSchemaAt } from '../support/pg.ts';
import { tempDb } from './support/temp-db.ts';
import { ALICE } from './suite/fixtures.ts';

/**
 * Rolling deploys: processes of the previous version keep running against the schema the new version
 * migrated (src/store/README.md, "Expand, then contract"). Migration 6 only adds: the previous version's
 * own statements for agent tasks (copied here as it sends them, on rows it writes directly) still work
 * beside it, and the counts the new version reads stay right, because triggers keep them whoever writes.
 */
const INSERT = `INSERT INTO agent_tasks (id, owner, tenant, context_id, state, status_timestamp, created_at,
  updated_at, version, task, executor_state) VALUES ($1, 'alice', '', 'c1', 'TASK_STATE_SUBMITTED', 1, 1, 1, 1, '{}', NULL)`;
const UPDATE = `UPDATE agent_tasks SET context_id = 'c1', state = $2, status_timestamp = 2, created_at = 1,
  updated_at = 2, version = version + 1, task = '{}', executor_state = NULL WHERE id = $1 AND version = 1`;

async function expectCounts(store: Store): Promise<void> {
  const total = async (state?: string) =>
    (await store.listAgentTasks({ ...ALICE, pageSize: 1, ...(state ? { state } : {}) })).totalSize;
  expect(await total()).toBe(3);
  expect(await total('TASK_STATE_COMPLETED')).toBe(1);
  expect(await total('TASK_STATE_SUBMITTED')).toBe(2);
}

describe('the previous version beside migration 6', () => {
  it('postgres: its task writes keep the new version’s counts right', async () => {
    const schema = freshSchemaName('tp_expand');
    const store = await PostgresStore.open({ url: urlForSchema(schema), listen: false });
    onTestFinished(async ({ task }) => {
      await store.close();
      await disposeSchema(schema, task.result?.state === 'fail');
    });
    await withPgClient(async (c) => {
      await c.query(`SET search_path TO ${schema}`);
      for (const id of ['a', 'b', 'c']) await c.query(INSERT.replace('$1', `'${id}'`));
      await c.query(UPDATE, ['a', 'TASK_STATE_COMPLETED']);
    });
    await expectCounts(store);
  });

  it('sqlite: its task writes keep the new version’s counts right', async () => {
    const path = tempDb('taskplane-expand-');
    await new SqliteStore({ path }).close();
    const db = new Database(path);
    const sqlite = (sql: string) => sql.replace(/\$\d/g, '?');
    for (const id of ['a', 'b', 'c']) db.prepare(sqlite(INSERT)).run(id);
    db.prepare(sqlite(UPDATE)).run('TASK_STATE_COMPLETED', 'a');
    db.close();
    const store = new SqliteStore({ path });
    onTestFinished(() => store.close());
    await expectCounts(store);
  });
});

/**
 * Migration 13 (envelope_counts): envelopes written before it are counted (the backfill), and envelope
 * writes of the previous version, which knows nothing of the table, keep the counts right (the triggers).
 */
const ENVELOPE_INSERT = `INSERT INTO envelopes (id, tenant, idempotency_key, connector, target, remote_id, state,
  updated_at, version, doc) VALUES ($1, $2, NULL, 'a2a', 'agent-a', NULL, $3, 1, 1, '{}')`;

describe('the previous version beside migration 13', () => {
  const before = (id: number) => id < 13;
  const expected = {
    t1: { running: 1, succeeded: 2 },
    t2: { failed: 1 },
    all: { running: 1, succeeded: 2, failed: 1 },
  };
  async function expectEnvelopeCounts(store: Store, exec: (sql: string) => Promise<void>): Promise<void> {
    expect(await store.countEnvelopesByState('t1')).toEqual(expected.t1);
    expect(await store.countEnvelopesByState('t2')).toEqual(expected.t2);
    expect(await store.countEnvelopesByState()).toEqual(expected.all);
    // What a count reads is the count table, not the envelopes (no scan per /metrics scrape): a row put
    // there by hand is what it answers.
    await exec(`INSERT INTO envelope_counts (tenant, state, slot, n) VALUES ('t9', 'running', 3, 7)`);
    expect(await store.countEnvelopesByState('t9')).toEqual({ running: 7 });
  }

  it('postgres: rows from before it are counted and its writes keep the counts right', async () => {
    const schema = freshSchemaName('tp_expand');
    onTestFinished(({ task }) => disposeSchema(schema, task.result?.state === 'fail'));
    await withPgSchemaAt(schema, before, async (c) => {
      for (const [id, tenant, state] of [
        ['a', 't1', 'running'],
        ['b', 't1', 'running'],
        ['c', 't2', 'failed'],
      ])
        await c.query(ENVELOPE_INSERT, [id, tenant, state]);
    });
    const store = await PostgresStore.open({ url: urlForSchema(schema), listen: false });
    onTestFinished(() => store.close());
    // The previous version, after the migration: an insert, a state change, a same-state rewrite, a purge.
    await withPgClient(async (c) => {
      await c.query(`SET search_path TO ${schema}`);
      await c.query(ENVELOPE_INSERT, ['d', 't1', 'succeeded']);
      await c.query(ENVELOPE_INSERT, ['e', 't1', 'succeeded']);
      await c.query(`UPDATE envelopes SET state = 'succeeded', version = 2 WHERE id = 'a'`);
      await c.query(`UPDATE envelopes SET doc = '{"x":1}', version = 3 WHERE id = 'a'`);
      await c.query(`DELETE FROM envelopes WHERE id = 'e'`);
    });
    await expectEnvelopeCounts(store, (sql) =>
      withPgClient(async (c) => {
        await c.query(`SET search_path TO ${schema}`);
        await c.query(sql);
      }),
    );
  });

  it('sqlite: rows from before it are counted and its writes keep the counts right', async () => {
    const path = tempDb('taskplane-expand-');
    const db = new Database(path);
    db.pragma('journal_mode = WAL');
    migrateSqlite(
      db,
      SQLITE_MIGRATIONS.filter((m) => before(m.id)),
      0,
    );
    const sqlite = (sql: string) => sql.replace(/\$\d/g, '?');
    for (const [id, tenant, state] of [
      ['a', 't1', 'running'],
      ['b', 't1', 'running'],
      ['c', 't2', 'failed'],
    ])
      db.prepare(sqlite(ENVELOPE_INSERT)).run(id, tenant, state);
    db.close();
    await new SqliteStore({ path }).close();
    const old = new Database(path);
    old.prepare(sqlite(ENVELOPE_INSERT)).run('d', 't1', 'succeeded');
    old.prepare(sqlite(ENVELOPE_INSERT)).run('e', 't1', 'succeeded');
    old.exec(`UPDATE envelopes SET state = 'succeeded', version = 2 WHERE id = 'a'`);
    old.exec(`UPDATE envelopes SET doc = '{"x":1}', version = 3 WHERE id = 'a'`);
    old.exec(`DELETE FROM envelopes WHERE id = 'e'`);
    old.close();
    const store = new SqliteStore({ path });
    onTestFinished(() => store.close());
    await expectEnvelopeCounts(store, async (sql) => {
      const db = new Database(path);
      db.exec(sql);
      db.close();
    });
  });
});
