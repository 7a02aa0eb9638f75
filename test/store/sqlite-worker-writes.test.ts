import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { describe, expect, test } from 'vitest';
import { VersionConflictError } from '../../src/core/errors.ts';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { WorkerWrites } from '../../src/store/sqlite/worker-writes.ts';
import type { AgentTaskRecord } from '../../src/store/store.ts';
import { tempDb } from './support/temp-db.ts';

/**
 * The write worker (worker-writes.ts): writes run on another thread's connection, reads on the event
 * loop's. The store suite runs on it too (sqlite-store.test.ts); these cover what only the thread split
 * can break.
 */
function task(i: number): AgentTaskRecord {
  return {
    id: `task_${i}`,
    owner: 'o',
    tenant: '',
    contextId: 'c',
    state: 'TASK_STATE_SUBMITTED',
    statusTimestamp: i,
    task: { id: `task_${i}`, history: [{ text: 'hi' }] },
    executorState: { runs: 0 },
    createdAt: i,
    updatedAt: i,
    version: 1,
  };
}

describe('SqliteStore with the write worker', () => {
  test('a write the worker has answered is visible at once to reads on the event loop', async () => {
    const store = new SqliteStore({ path: tempDb('taskplane-worker-') });
    await Promise.all(
      Array.from({ length: 200 }, async (_, i) => {
        await store.createAgentTask(
          task(i),
          `m${i}`,
          [{ taskId: `task_${i}`, at: i, payload: { n: i } }],
          [],
        );
        expect((await store.getAgentTask(`task_${i}`))?.version).toBe(1);
        expect(await store.listAgentTaskEvents(`task_${i}`, 0)).toHaveLength(1);
      }),
    );
    await store.close();
  });

  test('store errors cross the thread as the same classes and codes', async () => {
    const store = new SqliteStore({ path: tempDb('taskplane-worker-') });
    await store.createAgentTask(task(1), 'm1', [], []);
    const stale = store.updateAgentTask({ ...task(1), state: 'TASK_STATE_WORKING' }, 7, [], []);
    await expect(stale).rejects.toBeInstanceOf(VersionConflictError);
    await expect(stale).rejects.toMatchObject({ code: 'version_conflict', retryable: true });
    await expect(store.updateAgentTask(task(2), 1, [], [])).rejects.toMatchObject({ code: 'not_found' });
    await store.close();
  });

  test('a dead worker fails the writes it held and every later one with unavailable; reads and close still work', async () => {
    const store = new SqliteStore({ path: tempDb('taskplane-worker-') });
    await store.createAgentTask(task(1), 'm1', [], []);
    // Fault injection: end the worker thread as a crash would.
    const worker = (store as unknown as { writes: { worker: { terminate(): Promise<number> } } }).writes
      .worker;
    const held = store.createAgentTask(task(2), 'm2', [], []);
    await worker.terminate();
    await expect(held).rejects.toMatchObject({ code: 'unavailable', retryable: false });
    await expect(store.createAgentTask(task(3), 'm3', [], [])).rejects.toThrow(/write worker stopped/);
    expect((await store.getAgentTask('task_1'))?.id).toBe('task_1');
    await store.close();
  });

  test('an open store does not keep the process alive, and a write in flight does until it is answered', async () => {
    const path = tempDb('taskplane-worker-');
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', join(import.meta.dirname, 'fixtures', 'unclosed-store.ts'), path],
      { timeout: 30_000 },
    );
    expect(stdout.trim()).toBe('written');
    const db = new Database(path, { readonly: true });
    expect(db.prepare("SELECT value FROM settings WHERE key = 'unclosed'").get()).toEqual({
      value: 'written',
    });
    db.close();
  });

  test('the worker commits with synchronous=FULL (durable before any reader sees it); NORMAL only when walFsync is off', async () => {
    const synchronousOf = async (options: { walFsync?: boolean; synchronous?: 'FULL' | 'NORMAL' }) => {
      const store = new SqliteStore({ path: tempDb('taskplane-worker-'), ...options });
      await store.ready();
      const level = (store as unknown as { writes: WorkerWrites }).writes.synchronous;
      await store.close();
      return level;
    };
    expect(await synchronousOf({})).toBe(2);
    expect(await synchronousOf({ synchronous: 'FULL' })).toBe(2);
    expect(await synchronousOf({ synchronous: 'NORMAL' })).toBe(2);
    expect(await synchronousOf({ walFsync: false })).toBe(1);
  });

  test('a worker that cannot open the database rejects ready() and every write with unavailable', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'taskplane-worker-'));
    const writes = new WorkerWrites(
      {
        path: join(dir, 'no', 'such', 'dir', 'store.db'),
        synchronous: 'FULL',
        busyTimeoutMs: 0,
        groupCommit: true,
      },
      () => undefined,
    );
    await expect(writes.ready).rejects.toMatchObject({ code: 'unavailable', retryable: false });
    await expect(writes.run('putSettingIfAbsent', ['k', 'v'])).rejects.toThrow(/write worker stopped/);
    await writes.close();
  });

  test('a :memory: store writes on the event loop; asking for the worker there is a config error', () => {
    expect(() => new SqliteStore({ path: ':memory:', writeThread: 'worker' })).toThrow(
      expect.objectContaining({ code: 'config', field: 'writeThread' }),
    );
  });
});
