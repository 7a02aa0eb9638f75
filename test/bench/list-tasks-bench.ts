/**
 * What one ListTasks page costs as a scope's stored tasks grow, on SQLite and on PostgreSQL: the store's
 * listAgentTasks with pageSize 50, once with no filter (totalSize read from agent_task_counts) and once
 * with `statusTimestampAfter: 0`, a filter that matches every task and so still counts them with
 * COUNT(*). Both return the same totalSize; the ratio is what the counts table saves, and the first
 * column should stay flat as the store grows.
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
    const scanned = await msPerPage(store, { statusTimestampAfter: 0 }, 20);
    console.log(
      `${label.padEnd(9)} ${String(size).padStart(7)} tasks: ${counted.toFixed(2)} ms/page with counts, ` +
        `${scanned.toFixed(2)} ms/page with COUNT(*) (${(scanned / counted).toFixed(1)}x)`,
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
