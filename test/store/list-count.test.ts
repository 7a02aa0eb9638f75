import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it, onTestFinished } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/pg-store.ts';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { countListed, EXACT_COUNT_LIMIT, type ListCountReads } from '../../src/store/store-query.ts';
import type { AgentTaskStore } from '../../src/store/store.ts';
import { disposeSchema, freshSchemaName, urlForSchema, withPgClient } from '../support/pg.ts';

/**
 * ListTasks' totalSize costs at most EXACT_COUNT_LIMIT index entries whatever is stored: exact below
 * it, exact through the complement for a time filter that leaves few out, an estimate past both.
 */
const scope = { owner: 'alice', tenant: '' };

/** Reads over an in-memory list, recording what was asked, for the decision logic alone. */
function fakeReads(times: number[], opts: { after?: number; total?: number }) {
  const asked: string[] = [];
  const matching = times.filter((t) => t >= (opts.after ?? -Infinity)).sort((a, b) => b - a);
  const reads: ListCountReads = {
    scopeTotal: async () => (asked.push('total'), opts.total ?? times.length),
    head: async (limit) => {
      asked.push('head');
      const h = matching.slice(0, limit);
      return { n: h.length, oldestAt: h.at(-1) ?? null, newestAt: h[0] ?? null };
    },
    olderThanAfter: async (limit) => (
      asked.push('older'),
      Math.min(limit, times.filter((t) => t < (opts.after ?? 0)).length)
    ),
    oldestInScope: async () => (asked.push('oldest'), Math.min(...times)),
  };
  return { reads, asked };
}

describe('countListed', () => {
  const times = Array.from({ length: 1000 }, (_, i) => i);

  it('reads the counts table when the filter is scope and state', async () => {
    const { reads, asked } = fakeReads(times, {});
    expect(await countListed({ ...scope, state: 'x' }, reads, 100)).toEqual({ total: 1000, exact: true });
    expect(asked).toEqual(['total']);
  });

  it('counts exactly below the limit', async () => {
    const { reads } = fakeReads(times, { after: 950 });
    expect(await countListed({ ...scope, statusTimestampAfter: 950 }, reads, 100)).toEqual({
      total: 50,
      exact: true,
    });
  });

  it('a time filter that leaves out few is total minus those', async () => {
    const { reads } = fakeReads(times, { after: 30 });
    expect(await countListed({ ...scope, statusTimestampAfter: 30 }, reads, 100)).toEqual({
      total: 970,
      exact: true,
    });
  });

  it('past both limits, an estimate from the spread of the newest rows, never above the scope total', async () => {
    const { reads } = fakeReads(times, { after: 500 });
    const r = await countListed({ ...scope, statusTimestampAfter: 500 }, reads, 100);
    expect(r.exact).toBe(false);
    expect(Math.abs(r.total - 500)).toBeLessThanOrEqual(10);
    const { reads: ctx } = fakeReads(times, { total: 600 });
    expect((await countListed({ ...scope, contextId: 'c' }, ctx, 100)).total).toBe(600);
  });
});

const N = EXACT_COUNT_LIMIT * 2 + 5_000;
const BIG = EXACT_COUNT_LIMIT + 2_000;

/** Rows t1..tN, status_timestamp 1000+i, the first BIG in context 'big', the rest each alone. */
const insertSql = (table: string, series: string) => `
  INSERT INTO ${table} (id, owner, tenant, context_id, state, status_timestamp, created_at, updated_at, version, task, executor_state)
  SELECT 't' || i, 'alice', '', CASE WHEN i <= ${BIG} THEN 'big' ELSE 'c' || i END,
    CASE WHEN i % 2 = 0 THEN 'TASK_STATE_COMPLETED' ELSE 'TASK_STATE_WORKING' END,
    1000 + i, 1, 1, 1, '{}', NULL FROM ${series}`;

async function checks(store: AgentTaskStore) {
  const total = async (q: object) => (await store.listAgentTasks({ ...scope, pageSize: 10, ...q })).totalSize;
  expect(await total({})).toBe(N);
  // Leaves out 10 rows: exact through the complement.
  expect(await total({ statusTimestampAfter: 1011 })).toBe(N - 10);
  // Half on each side, both past the limit: estimated, close for evenly spread times.
  const half = await total({ statusTimestampAfter: 1000 + N / 2 });
  expect(Math.abs(half - N / 2) / (N / 2)).toBeLessThan(0.05);
  expect(await total({ contextId: 'c' + (BIG + 7) })).toBe(1);
  const big = await total({ contextId: 'big' });
  expect(Math.abs(big - BIG) / BIG).toBeLessThan(0.05);
  expect(
    await total({ contextId: 'big', state: 'TASK_STATE_WORKING', statusTimestampAfter: 1000 + BIG - 100 }),
  ).toBe(50);
  const page = await store.listAgentTasks({ ...scope, contextId: 'big', pageSize: 3 });
  expect(page.tasks.map((t) => t.id)).toEqual([`t${BIG}`, `t${BIG - 1}`, `t${BIG - 2}`]);
}

describe('ListTasks totalSize on stored rows', () => {
  it('SQLite', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'tp-count-')), 'host.db');
    const store = new SqliteStore({ path });
    onTestFinished(() => store.close());
    await store.listAgentTasks(scope);
    const db = new Database(path);
    db.exec(
      insertSql(
        'agent_tasks',
        `(WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ${N}) SELECT i FROM s)`,
      ),
    );
    // The context filter reads the context's own rows (agent_tasks_context), not the whole scope.
    const plan = db
      .prepare(
        `EXPLAIN QUERY PLAN SELECT * FROM agent_tasks WHERE owner = ? AND tenant = ? AND context_id = ?
         ORDER BY status_timestamp DESC, id DESC LIMIT 11`,
      )
      .all('alice', '', 'big') as Array<{ detail: string }>;
    expect(plan.map((p) => p.detail).join(' ')).toMatch(/agent_tasks_context/);
    db.close();
    await checks(store);
  }, 60_000);

  it('PostgreSQL', async () => {
    const schema = freshSchemaName('tp_count');
    const store = await PostgresStore.open({ url: urlForSchema(schema), listen: false });
    onTestFinished(async ({ task }) => {
      await store.close();
      await disposeSchema(schema, task.result?.state === 'fail');
    });
    await withPgClient(async (pg) => {
      await pg.query(insertSql(`${schema}.agent_tasks`, `generate_series(1, ${N}) AS i`));
      await pg.query(`ANALYZE ${schema}.agent_tasks`);
    });
    await checks(store);
  }, 60_000);
});
