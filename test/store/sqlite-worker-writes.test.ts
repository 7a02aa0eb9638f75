import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, test } from 'vitest';
import { VersionConflictError } from '../../src/core/errors.ts';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import type { AgentTaskRecord } from '../../src/store/store.ts';

/**
 * The write worker (worker-writes.ts): writes run on another thread's connection, reads on the event
 * loop's. The store suite runs on it too (sqlite-store.test.ts); these cover what only the thread split
 * can break.
 */
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function tempPath(): string {
  const dir = mkdtempSync(join(tmpdir(), 'taskplane-worker-'));
  dirs.push(dir);
  return join(dir, 'store.db');
}

function task(i: number): AgentTaskRecord {
  return {
    id: `task_${i}`,
    owner: 'o',
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
    const store = new SqliteStore({ path: tempPath() });
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
    const store = new SqliteStore({ path: tempPath() });
    await store.createAgentTask(task(1), 'm1', [], []);
    const stale = store.updateAgentTask({ ...task(1), state: 'TASK_STATE_WORKING' }, 7, [], []);
    await expect(stale).rejects.toBeInstanceOf(VersionConflictError);
    await expect(stale).rejects.toMatchObject({ code: 'version_conflict', retryable: true });
    await expect(store.updateAgentTask(task(2), 1, [], [])).rejects.toMatchObject({ code: 'not_found' });
    // A failing write rolls back alone: its neighbours in the same batch commit.
    const [ok, bad] = await Promise.allSettled([
      store.createAgentTask(task(3), 'm3', [], []),
      store.updateAgentTask(task(4), 1, [], []),
    ]);
    expect(ok.status).toBe('fulfilled');
    expect(bad.status).toBe('rejected');
    expect(await store.getAgentTask('task_3')).toBeDefined();
    await store.close();
  });

  test('a dead worker fails the writes it held and every later one with unavailable; reads and close still work', async () => {
    const store = new SqliteStore({ path: tempPath() });
    await store.createAgentTask(task(1), 'm1', [], []);
    // Fault injection: end the worker thread as a crash would.
    const worker = (store as unknown as { worker: { worker: { terminate(): Promise<number> } } }).worker
      .worker;
    const held = store.createAgentTask(task(2), 'm2', [], []);
    await worker.terminate();
    await expect(held).rejects.toMatchObject({ code: 'unavailable', retryable: false });
    await expect(store.createAgentTask(task(3), 'm3', [], [])).rejects.toThrow(/write worker stopped/);
    expect((await store.getAgentTask('task_1'))?.id).toBe('task_1');
    await store.close();
  });

  test('an open store does not keep the process alive, and a write in flight does until it is answered', async () => {
    const path = tempPath();
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

  test('ready() resolves once the worker has its connection; a store on :memory: is ready at once', async () => {
    const store = new SqliteStore({ path: tempPath() });
    await expect(store.ready()).resolves.toBeUndefined();
    await store.close();
    const memory = new SqliteStore({ path: ':memory:' });
    await expect(memory.ready()).resolves.toBeUndefined();
    await memory.close();
  });
});
