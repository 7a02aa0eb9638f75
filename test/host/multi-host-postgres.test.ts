import { afterEach, describe, expect, it } from 'vitest';
import type { RunningHost } from '../../src/host/start-host.ts';
import { PostgresStore } from '../../src/store/postgres/pg-store.ts';
import type { Store } from '../../src/store/store.ts';
import { disposeSchema, freshSchemaName, urlForSchema } from '../support/pg.ts';
import { call, startTestHost, waitForTask } from './in-process.ts';

/**
 * Two host processes' worth of host (two stores, two host ids) on one PostgreSQL schema: work done on
 * one reaches subscribers of the other through the Store's change feed (LISTEN/NOTIFY), a starting host
 * never runs a task a live host runs, an answer taken by one host reaches the execute waiting on the
 * other, and a stopped host's tasks are taken over by the sweep of the one still running.
 */
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function pair(
  leaseMs = 600,
): Promise<{ a: RunningHost; b: RunningHost; storeA: Store; storeB: Store }> {
  const schema = freshSchemaName('tp_host');
  const url = urlForSchema(schema);
  const storeA = await PostgresStore.open({ url, poolMax: 4 });
  const storeB = await PostgresStore.open({ url, poolMax: 4 });
  cleanups.push(async () => {
    await storeA.close();
    await storeB.close();
    await disposeSchema(schema, false);
  });
  const a = await startTestHost(storeA, { hostId: 'host-a', hostLeaseMs: leaseMs });
  cleanups.push(() => a.close());
  const b = await startTestHost(storeB, { hostId: 'host-b', hostLeaseMs: leaseMs });
  cleanups.push(() => b.close());
  return { a, b, storeA, storeB };
}

async function waitUntil(check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error('condition not met');
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function readToEnd(res: Response): Promise<string> {
  return res.text();
}

describe('several hosts on one PostgreSQL', () => {
  it('a subscriber on host B streams work done on host A; B never runs A’s task', async () => {
    const { a, b, storeB } = await pair();
    const { body } = await call(a.url, 'SendMessage', {
      message: {
        messageId: 'mh-1',
        role: 'ROLE_USER',
        parts: [{ data: { durationMs: 2000, steps: 4, artifactChunks: 1 } }],
      },
      configuration: { returnImmediately: true },
    });
    const id = body.result.task.id as string;
    expect(b.recovered).toEqual({ resumed: 0, failed: 0, waiting: 0 });
    const sse = await fetch(`${b.url}/a2a/rest/tasks/${id}:subscribe`, { headers: { 'A2A-Version': '1.0' } });
    const text = await readToEnd(sse);
    expect(text).toMatch(/^id: \d+\ndata: \{"task"/);
    expect(text).toContain('step 4/4');
    expect(text).toContain('TASK_STATE_COMPLETED');
    const events = await storeB.listAgentTaskEvents(id, 0);
    expect(events.filter((e) => JSON.stringify(e.payload).includes('TASK_STATE_COMPLETED')).length).toBe(1);
    expect((await storeB.getAgentTask(id))!.executorState as { runs: number; host: string }).toMatchObject({
      runs: 1,
      host: 'host-a',
    });
  });

  it('an answer sent to host B reaches the execute waiting on host A', async () => {
    const { a, b, storeA } = await pair();
    const first = await call(a.url, 'SendMessage', {
      message: {
        messageId: 'mh-2',
        role: 'ROLE_USER',
        parts: [{ data: { steps: 0, askInput: 'Which edition?', artifactChunks: 1 } }],
      },
    });
    const id = first.body.result.task.id as string;
    expect(first.body.result.task.status.state).toBe('TASK_STATE_INPUT_REQUIRED');
    const answer = await call(b.url, 'SendMessage', {
      message: { messageId: 'mh-2a', role: 'ROLE_USER', taskId: id, parts: [{ text: 'second' }] },
    });
    expect(answer.body.result.task.status.state).toBe('TASK_STATE_COMPLETED');
    const stored = (await storeA.getAgentTask(id))!;
    expect(JSON.stringify(stored.task.artifacts)).toContain('second');
    expect(stored.executorState).toMatchObject({ runs: 1, host: 'host-a' });
  });

  it('a CancelTask on host B stops the execute running on host A', async () => {
    const { a, b, storeA } = await pair();
    const { body } = await call(a.url, 'SendMessage', {
      message: { messageId: 'mh-4', role: 'ROLE_USER', parts: [{ data: { durationMs: 600_000, steps: 2 } }] },
      configuration: { returnImmediately: true },
    });
    const id = body.result.task.id as string;
    await waitForTask(storeA, id, (t) => t.state === 'TASK_STATE_WORKING');
    expect(a.stats().executions).toBe(1);
    const canceled = await call(b.url, 'CancelTask', { id });
    expect(canceled.body.result.status.state).toBe('TASK_STATE_CANCELED');
    await waitUntil(() => a.stats().executions === 0);
  });

  it('a stopped host’s running task is taken over and finished by the other host’s sweep', async () => {
    const { a, b, storeB } = await pair();
    const { body } = await call(a.url, 'SendMessage', {
      message: {
        messageId: 'mh-3',
        role: 'ROLE_USER',
        parts: [{ data: { durationMs: 1200, steps: 3, artifactChunks: 1 } }],
      },
      configuration: { returnImmediately: true },
    });
    const id = body.result.task.id as string;
    await waitForTask(storeB, id, (t) => JSON.stringify(t.task).includes('step 1/3'));
    await a.close();
    await waitForTask(storeB, id, (t) => t.state === 'TASK_STATE_COMPLETED');
    const record = (await storeB.getAgentTask(id))!;
    expect(record.executorState).toMatchObject({ host: 'host-b', runs: 2 });
    expect(JSON.stringify(await storeB.listAgentTaskEvents(id, 0))).toContain(
      'Resumed after an agent host restart',
    );
    void b;
  });
});
