import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { VirtualClock } from '../../src/core/clock.ts';
import { hostConfig } from '../../src/host/host-options.ts';
import type { RunningHost } from '../../src/host/start-host.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import type { Store } from '../../src/store/store.ts';
import { call, startTestHost, waitForTask } from './in-process.ts';

const HOUR = 3_600_000;
const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

const send = (id: string, data: Record<string, unknown>) => ({
  message: { messageId: id, role: 'ROLE_USER', parts: [{ data }] },
  configuration: { returnImmediately: true },
});

const stores: Array<[string, () => Store]> = [
  ['memory', () => new MemoryStore()],
  [
    'sqlite',
    () => {
      const dir = mkdtempSync(join(tmpdir(), 'taskplane-host-retention-'));
      cleanup.push(async () => rmSync(dir, { recursive: true, force: true }));
      return new SqliteStore({ path: join(dir, 'host.db') });
    },
  ],
];

describe.each(stores)('host task retention on %s (virtual clock)', (_name, makeStore) => {
  async function host(store: Store, clock: VirtualClock, extra: { taskRetentionMs?: number | null } = {}) {
    const h: RunningHost = await startTestHost(store, {
      clock,
      taskRetentionMs: HOUR,
      purgeIntervalMs: 60_000,
      inputTimeoutMs: 100 * HOUR,
      ...extra,
    });
    cleanup.push(async () => {
      await h.close();
      await store.close();
    });
    return h;
  }

  it('purges a finished task past the retention with its events; open tasks stay; its messageId is free again', async () => {
    const clock = new VirtualClock(Date.parse('2026-01-01T00:00:00Z'));
    const store = makeStore();
    const h = await host(store, clock);
    const done = (await call(h.url, 'SendMessage', send('m-done', { steps: 0 }))).body.result.task
      .id as string;
    const waiting = (await call(h.url, 'SendMessage', send('m-wait', { steps: 0, askInput: 'Which?' }))).body
      .result.task.id as string;
    await waitForTask(store, done, (t) => t.state === 'TASK_STATE_COMPLETED');
    await waitForTask(store, waiting, (t) => t.state === 'TASK_STATE_INPUT_REQUIRED');
    expect((await store.listAgentTaskEvents(done, 0)).length).toBeGreaterThan(0);

    await clock.advance(HOUR - 120_000);
    expect((await call(h.url, 'GetTask', { id: done })).body.result?.id).toBe(done);

    await clock.advance(180_000);
    await waitForTask(store, waiting, () => true);
    await h.purgeExpired(); // the round the timer started may still be on its way: this one waits
    expect(await store.getAgentTask(done)).toBeUndefined();
    expect(await store.listAgentTaskEvents(done, 0)).toEqual([]);
    const got = await call(h.url, 'GetTask', { id: done });
    expect(got.body.error?.code).toBe(-32001); // TaskNotFoundError
    expect((await store.getAgentTask(waiting))?.state).toBe('TASK_STATE_INPUT_REQUIRED');
    expect(h.stats().purged).toBe(1);
    // The purged task's messageId is a new message now: a new task, not the old one.
    const again = (await call(h.url, 'SendMessage', send('m-done', { steps: 0 }))).body.result.task
      .id as string;
    expect(again).not.toBe(done);
  });

  it('keeps finished tasks for ever with taskRetentionMs null', async () => {
    const clock = new VirtualClock(Date.parse('2026-01-01T00:00:00Z'));
    const store = makeStore();
    const h = await host(store, clock, { taskRetentionMs: null });
    const done = (await call(h.url, 'SendMessage', send('m-keep', { steps: 0 }))).body.result.task
      .id as string;
    await waitForTask(store, done, (t) => t.state === 'TASK_STATE_COMPLETED');
    await clock.advance(2 * HOUR); // past the HOUR the other hosts here keep tasks for
    expect(await h.purgeExpired()).toBe(0);
    expect((await store.getAgentTask(done))?.state).toBe('TASK_STATE_COMPLETED');
  });
});

describe('host retention options', () => {
  it('default to 30 days and name their field when wrong', () => {
    expect(hostConfig().taskRetentionMs).toBe(30 * 24 * HOUR);
    expect(hostConfig({ taskRetentionMs: null }).taskRetentionMs).toBeNull();
    expect(() => hostConfig({ taskRetentionMs: -1 })).toThrow(/^taskRetentionMs: /);
    expect(() => hostConfig({ purgeBatchSize: 0 })).toThrow(/^purgeBatchSize: /);
    expect(() => hostConfig({ purgeIntervalMs: 0 })).toThrow(/^purgeIntervalMs: /);
  });
});
