import Database from 'better-sqlite3';
import { describe, expect, it, onTestFinished } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/pg-store.ts';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import type { Store } from '../../src/store/store.ts';
import { disposeSchema, freshSchemaName, urlForSchema, withPgClient } from '../support/pg.ts';
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
