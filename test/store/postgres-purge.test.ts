import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { newEnvelope } from '../../src/core/envelope.ts';
import { PostgresStore } from '../../src/store/postgres/pg-store.ts';
import { TEST_PG_URL, disposeSchema, freshSchemaName, urlForSchema } from '../support/pg.ts';
import { makeTask } from './suite/fixtures.ts';

/**
 * The purge never waits on a writer: a row another transaction holds (an envelope being updated, a host
 * task being written) is skipped and left for the next batch, and the writer is not held up either.
 */
const cleanup: Array<(failed: boolean) => Promise<void>> = [];
afterEach(async (ctx) => {
  const failed = ctx.task.result?.state === 'fail';
  for (const fn of cleanup.splice(0).reverse()) await fn(failed);
});

async function setup(): Promise<{ store: PostgresStore; schema: string; locker: pg.Client }> {
  const schema = freshSchemaName('tp_purge');
  const store = await PostgresStore.open({ url: urlForSchema(schema), poolMax: 4 });
  const locker = new pg.Client({ connectionString: TEST_PG_URL });
  await locker.connect();
  cleanup.push(async (failed) => {
    await locker.end();
    await store.close();
    await disposeSchema(schema, failed);
  });
  return { store, schema, locker };
}

const finished = (id: string) =>
  newEnvelope({
    id,
    tenant: 't',
    connector: 'a2a',
    target: 'x',
    requestKind: 'message',
    input: 'x',
    inputHash: 'sha256:0',
    createdAt: 1000,
    state: 'succeeded',
    retentionUntil: 2000,
  });

describe('postgres: purges skip rows a writer holds', () => {
  it('an envelope locked by another transaction is left for the next batch; the rest go at once', async () => {
    const { store, schema, locker } = await setup();
    for (const id of ['tsk_a', 'tsk_b', 'tsk_c']) await store.createEnvelope(finished(id), []);
    await locker.query('BEGIN');
    await locker.query(`SELECT 1 FROM ${schema}.envelopes WHERE id = 'tsk_b' FOR UPDATE`);
    // Resolves while the lock is held: the purge did not wait for it.
    const gone = await store.purgeEnvelopes(['tsk_a', 'tsk_b', 'tsk_c'], 5000);
    expect(gone.sort()).toEqual(['tsk_a', 'tsk_c']);
    await locker.query('COMMIT');
    expect(await store.purgeEnvelopes(['tsk_b'], 5000)).toEqual(['tsk_b']);
  });

  it('a host task locked by another transaction is skipped; the purge takes the next finished one', async () => {
    const { store, schema, locker } = await setup();
    const held = makeTask({ id: 'task_held', state: 'TASK_STATE_COMPLETED', updatedAt: 1000 });
    const free = makeTask({ id: 'task_free', state: 'TASK_STATE_COMPLETED', updatedAt: 1001 });
    await store.createAgentTask(held, 'm-held', [], []);
    await store.createAgentTask(free, 'm-free', [], []);
    await locker.query('BEGIN');
    await locker.query(`SELECT 1 FROM ${schema}.agent_tasks WHERE id = 'task_held' FOR UPDATE`);
    const first = await store.purgeAgentTasks(5000, 1);
    expect(first.tasks).toEqual(['task_free']);
    await locker.query('COMMIT');
    expect((await store.purgeAgentTasks(5000, 10)).tasks).toEqual(['task_held']);
  });

  it('finds what is due through the retention indexes, not a scan of the table', async () => {
    const { store, schema, locker } = await setup();
    await store.createEnvelope(finished('tsk_x'), []);
    await locker.query(`SET search_path TO ${schema}`);
    // A table with history: two open jobs for each finished one, tasks likewise; statistics gathered.
    await locker.query(
      `INSERT INTO envelopes (id, tenant, connector, target, state, updated_at, version, retention_until, doc)
       SELECT 'tsk_' || i, 't' || (i % 5), 'a2a', 'x', CASE WHEN i % 3 = 0 THEN 'succeeded' ELSE 'running' END,
         i, 1, CASE WHEN i % 3 = 0 THEN 1000 + i END, '{}'::jsonb FROM generate_series(1, 3000) i`,
    );
    await locker.query(
      `INSERT INTO agent_tasks (id, owner, tenant, context_id, state, status_timestamp, created_at, updated_at,
         version, task)
       SELECT 'task_' || i, 'o', '', 'c', CASE WHEN i % 3 = 0 THEN 'TASK_STATE_COMPLETED' ELSE 'TASK_STATE_WORKING' END,
         i, i, i, 1, '{}'::jsonb FROM generate_series(1, 3000) i`,
    );
    await locker.query('ANALYZE envelopes');
    await locker.query('ANALYZE agent_tasks');
    const plan = async (sql: string) =>
      (await locker.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${sql}`)).rows
        .map((r) => r['QUERY PLAN'])
        .join('\n');
    expect(
      await plan(
        `SELECT id FROM envelopes WHERE retention_until <= 5000 AND state = ANY('{succeeded,failed,cancelled,expired,lost}')
         ORDER BY retention_until, id LIMIT 100`,
      ),
    ).toMatch(/envelopes_retention/);
    expect(
      await plan(
        `SELECT id FROM agent_tasks WHERE state IN ('TASK_STATE_COMPLETED', 'TASK_STATE_CANCELED', 'TASK_STATE_FAILED',
         'TASK_STATE_REJECTED') AND updated_at < 5000 ORDER BY updated_at LIMIT 100`,
      ),
    ).toMatch(/agent_tasks_finished/);
  });
});
