/**
 * What one ListTasks page costs as a scope's stored tasks grow, on SQLite and on PostgreSQL: the store's
 * listAgentTasks with pageSize 50, with no filter (totalSize read from agent_task_counts), with
 * `statusTimestampAfter: 0` (matches every task: counted through the rows it leaves out), with a time
 * filter matching half the tasks (counted up to the exact-count limit, then estimated), and with a
 * contextId holding 1% of the tasks. Every column should stay flat as the store grows.
 *   npx tsx test/bench/list-tasks-bench.ts [sizes, default 10000,100000]
 */
import { rmSync } from 'node:fs';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore } from '../../src/store/open-store.ts';
import type { Store } from '../../src/store/store.ts';
import { disposeSchema, freshSchemaName, urlForSchema } from '../support/pg.ts';

const sizes = (process.argv[2] ?? '10000,100000').split(',').map(Number);
const scope = { owner: 'alice', tenant: '' };

async function fill(store: Store, from: number, to: number): Promise<void> {
  const batch: Promise<unknown>[] = [];
  for (let i = from; i < to; i++) {
    const state = i % 3 ? 'TASK_STATE_COMPLETED' : 'TASK_STATE_WORKING';
    const task = { id: `t${i}`, ...scope, contextId: `c${i % 100}`, state, statusTimestamp: 1000 + i };
    const record = {
      ...task,
      task: { id: task.id },
      executorState: null,
      createdAt: 1,
      updatedAt: 1,
      version: 1,
    };
    batch.push(store.createAgentTask(record, `m${i}`, [], []));
    if (batch.length >= 500) await Promise.all(batch.splice(0));
  }
  await Promise.all(batch);
}

async function msPerPage(store: Store, filter: object, reps: number): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < reps; i++) await store.listAgentTasks({ ...scope, pageSize: 50, ...filter });
  return (performance.now() - t0) / reps;
}

async function run(label: string, store: Store): Promise<void> {
  let stored = 0;
  for (const size of sizes) {
    await fill(store, stored, size);
    stored = size;
    await msPerPage(store, {}, 20);
    const counted = await msPerPage(store, {}, 200);
    const all = await msPerPage(store, { statusTimestampAfter: 0 }, 20);
    const half = await msPerPage(store, { statusTimestampAfter: 1000 + size / 2 }, 20);
    const context = await msPerPage(store, { contextId: 'c7' }, 20);
    console.log(
      `${label.padEnd(9)} ${String(size).padStart(7)} tasks: ms/page ${counted.toFixed(2)} no filter, ` +
        `${all.toFixed(2)} time filter matching all, ${half.toFixed(2)} matching half, ` +
        `${context.toFixed(2)} one context of ${size / 100}`,
    );
  }
  await store.close();
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'tp-list-'));
  try {
    await run('sqlite', await openStore(`sqlite:${join(dir, 'list.db')}`));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const schema = freshSchemaName('tp_listbench');
  try {
    await run('postgres', await openStore(urlForSchema(schema)));
  } finally {
    await disposeSchema(schema, false);
  }
}

void main();
