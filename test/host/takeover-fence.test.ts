import { afterEach, describe, expect, it } from 'vitest';
import { VirtualClock } from '../../src/core/clock.ts';
import type { RunningHost } from '../../src/host/start-host.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import { call, startTestHost, waitForTask } from './in-process.ts';

/**
 * A host another host found dead (its database session was cut, its lease expired) while it was in fact
 * still running a task: the other host took the task over with a versioned write naming itself. The old
 * host must not write to the task after that, and must stop its execute: at its next write (the fence),
 * or at its next recovery sweep when the execute writes nothing for long. Here the takeover is written
 * straight to the store, as the other host's recovery writes it, so no timing decides the outcome.
 */
const hosts: RunningHost[] = [];
afterEach(async () => {
  await Promise.all(hosts.splice(0).map((h) => h.close()));
});

async function takeOver(store: MemoryStore, id: string, host: string): Promise<number> {
  const rec = (await store.getAgentTask(id))!;
  const { task } = await store.updateAgentTask(
    { ...rec, executorState: { ...rec.executorState, host } },
    rec.version,
    [],
    [],
  );
  return task.version;
}

async function started(durationMs: number, steps: number) {
  const clock = new VirtualClock(Date.parse('2026-01-01T00:00:00Z'));
  const store = new MemoryStore();
  const h = await startTestHost(store, { clock, hostId: 'host-a' });
  hosts.push(h);
  const { body } = await call(h.url, 'SendMessage', {
    message: { messageId: 'fence-1', role: 'ROLE_USER', parts: [{ data: { durationMs, steps } }] },
    configuration: { returnImmediately: true },
  });
  const id = body.result.task.id as string;
  await waitForTask(store, id, (t) => t.state === 'TASK_STATE_WORKING');
  return { clock, store, h, id };
}

describe('a task taken over while its old host still runs it', () => {
  it('the old host’s next write is refused and its execute stops', async () => {
    const { clock, store, h, id } = await started(3000, 3);
    await clock.advance(1000);
    await waitForTask(store, id, (t) => JSON.stringify(t.task).includes('step 1/3'));
    const version = await takeOver(store, id, 'host-b');
    expect(h.stats().executions).toBe(1);
    // The execute wakes for step 2 and tries to write it: refused, and the execute ends here.
    await clock.advance(1000);
    await waitUntil(() => h.stats().executions === 0);
    await clock.advance(5000);
    const rec = (await store.getAgentTask(id))!;
    expect(rec.version).toBe(version);
    expect(rec.state).toBe('TASK_STATE_WORKING');
    expect(rec.executorState).toMatchObject({ host: 'host-b' });
    expect(JSON.stringify(rec.task)).not.toContain('step 2/3');
  });

  it('a recovery sweep stops an execute that writes nothing after the takeover', async () => {
    // One step of ten minutes: the execute sleeps past the sweep (every lease ttl, 30 s) without writing.
    const { clock, store, h, id } = await started(600_000, 1);
    const version = await takeOver(store, id, 'host-b');
    await clock.advance(30_000);
    await waitUntil(() => h.stats().executions === 0);
    await clock.advance(600_000);
    const rec = (await store.getAgentTask(id))!;
    expect(rec.version).toBe(version);
    expect(rec.state).toBe('TASK_STATE_WORKING');
    expect(JSON.stringify(rec.task)).not.toContain('step 1/1');
  });
});

/** Waits on the host's own bookkeeping, which follows the store's answer by a few microtasks. */
async function waitUntil(check: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !check(); i++) await new Promise((r) => setImmediate(r));
  expect(check()).toBe(true);
}
