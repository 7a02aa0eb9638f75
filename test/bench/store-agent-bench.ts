/**
 * The host's SQLite write path without HTTP: per task, createAgentTask then updateAgentTask (SUBMITTED →
 * COMPLETED) with the documents a host send writes, 32 tasks in flight (as bench:host's wrk -c32), on a
 * SQLite file with the default NORMAL + WAL fsync. Prints tasks/s and this process's CPU per task.
 *   npx tsx test/bench/store-agent-bench.ts [src dir of a checkout, default ./src] [seconds, default 4]
 * Alternate two checkouts several times to A/B a store change: this machine drifts minute to minute.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
const root = resolve(process.argv[2] ?? 'src');
const seconds = Number(process.argv[3] ?? 4);
const { SqliteStore } = await import(join(root, 'store/sqlite/sqlite-store.ts'));
const dir = mkdtempSync(join(tmpdir(), 'tb-'));
const store = new SqliteStore({ path: join(dir, 'b.db') });
let n = 0;
async function one(): Promise<void> {
  n++;
  const now = Date.now();
  const id = `task_01KB${String(n).padStart(22, '0')}`;
  const contextId = `ctx_01KB${String(n).padStart(22, '0')}`;
  const msg = { messageId: `run-${n}`, role: 'ROLE_USER', parts: [{ text: 'hi' }], taskId: id, contextId };
  const task = {
    id,
    contextId,
    status: { state: 'TASK_STATE_SUBMITTED', timestamp: new Date(now).toISOString() },
    history: [msg],
    artifacts: [],
  };
  const exec = { inputs: [], runs: 0, trigger: msg, host: 'host_01KB000000000000', pushConfigs: false };
  const record = {
    id,
    owner: 'anonymous',
    tenant: '',
    contextId,
    state: 'TASK_STATE_SUBMITTED',
    statusTimestamp: now,
    task,
    executorState: exec,
    createdAt: now,
    updatedAt: now,
    version: 1,
  };
  const created = await store.createAgentTask(
    record,
    msg.messageId,
    [{ taskId: id, at: now, payload: { task, _v: 1 } }],
    [],
  );
  const t2 = JSON.parse(JSON.stringify(created.task.task));
  const e2 = JSON.parse(JSON.stringify(created.task.executorState));
  t2.status = {
    state: 'TASK_STATE_COMPLETED',
    timestamp: new Date(now + 1).toISOString(),
    message: { messageId: `msg-${n}`, role: 'ROLE_AGENT', parts: [{ text: 'done' }], taskId: id, contextId },
  };
  t2.history.push(t2.status.message);
  e2.runs = 1;
  const next = {
    ...created.task,
    task: t2,
    executorState: e2,
    state: 'TASK_STATE_COMPLETED',
    statusTimestamp: now + 1,
    updatedAt: now + 1,
  };
  await store.updateAgentTask(
    next,
    created.task.version,
    [
      {
        taskId: id,
        at: now + 1,
        payload: { statusUpdate: { taskId: id, contextId, status: t2.status }, _v: 2 },
      },
    ],
    [],
  );
}
async function loop(deadline: number): Promise<void> {
  while (performance.now() < deadline) await one();
}
await Promise.all(Array.from({ length: 32 }, () => loop(performance.now() + 1500))); // warm-up
const n0 = n;
const c0 = process.cpuUsage();
const t0 = performance.now();
await Promise.all(Array.from({ length: 32 }, () => loop(t0 + seconds * 1000)));
const cu = process.cpuUsage(c0);
const tasks = n - n0;
console.log(
  `${root} ${(tasks / ((performance.now() - t0) / 1000)).toFixed(0)} tasks/s  ${((cu.user + cu.system) / tasks).toFixed(1)} µs cpu/task`,
);
await store.close();
rmSync(dir, { recursive: true, force: true });
