import { statSync } from 'node:fs';
import Database from 'better-sqlite3';
import { describe, expect, test, vi } from 'vitest';
import { TaskplaneError } from '../../src/core/errors.ts';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { WriteBatcher, type WalSyncer } from '../../src/store/sqlite/write-batcher.ts';
import type { AgentTaskRecord, ChangeNotice } from '../../src/store/store.ts';
import { tempDb } from './support/temp-db.ts';

/**
 * synchronous=NORMAL plus an fsync of the WAL off the event loop (write-batcher.ts) must acknowledge a
 * write exactly when FULL would: after its commit is on disk. A power loss cannot be staged in a test, so
 * these check the order of events with a syncer the test completes by hand, and that the file the store
 * fsyncs stays the WAL SQLite writes.
 */
/** A syncer whose fsyncs the test completes (or fails) by hand. */
class ManualSyncer implements WalSyncer {
  pending: Array<(err: Error | null) => void> = [];
  sync(done: (err: Error | null) => void): void {
    this.pending.push(done);
  }
  finish(err: Error | null = null, index = 0): void {
    const [done] = this.pending.splice(index, 1);
    if (!done) throw new Error('no fsync in flight');
    done(err);
  }
}

function batcherOn(path: string, minSyncGapMs = 0) {
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec('CREATE TABLE t (x INTEGER)');
  const syncer = new ManualSyncer();
  const notices: ChangeNotice[] = [];
  const batcher = new WriteBatcher(db, {
    groupCommit: true,
    onCommit: (n) => notices.push(...n),
    translate: (err) => err,
    syncer,
    minSyncGapMs,
    syncFailed: (err) => new TaskplaneError('unavailable', 'fsync failed', { cause: err, retryable: false }),
  });
  const insert = (x: number) =>
    batcher.run((n) => {
      db.prepare('INSERT INTO t (x) VALUES (?)').run(x);
      n.push({ kind: 'agentTask', id: String(x), seq: x });
      return x;
    });
  const rows = () => (db.prepare('SELECT x FROM t ORDER BY x').all() as { x: number }[]).map((r) => r.x);
  return { db, batcher, syncer, notices, insert, rows };
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('WriteBatcher with a WAL syncer', () => {
  test('a write resolves, and its notices go out, only after the fsync that follows its commit', async () => {
    const { batcher, syncer, notices, insert, rows, db } = batcherOn(tempDb('taskplane-durability-'));
    let resolved = false;
    const write = insert(1).then((v) => ((resolved = true), v));
    await turn();
    await turn();
    expect(rows()).toEqual([1]); // committed (in the WAL) …
    expect(syncer.pending).toHaveLength(1); // … an fsync is running …
    expect(resolved).toBe(false); // … and nobody has been told
    expect(notices).toEqual([]);
    let read = false;
    const visible = batcher.visible('read after the commit').then(() => (read = true));
    await turn();
    expect(read).toBe(false); // a read that could include the commit waits for the same fsync
    syncer.finish();
    expect(await write).toBe(1);
    await visible;
    expect(notices.map((n) => n.id)).toEqual(['1']);
    expect(await batcher.visible('nothing pending')).toBe('nothing pending');
    db.close();
  });

  test('writes queued during an fsync wait for it, then share one commit and one fsync', async () => {
    const { syncer, insert, rows, db } = batcherOn(tempDb('taskplane-durability-'));
    const first = insert(1);
    await turn();
    expect(syncer.pending).toHaveLength(1);
    const later = [insert(2), insert(3), insert(4)];
    await turn();
    await turn();
    expect(rows()).toEqual([1]); // held back: committing now would not let them resolve any sooner
    syncer.finish();
    await first;
    expect(rows()).toEqual([1, 2, 3, 4]); // committed together once the fsync ended …
    expect(syncer.pending).toHaveLength(1); // … under one new fsync
    syncer.finish();
    expect(await Promise.all(later)).toEqual([2, 3, 4]);
    db.close();
  });

  test('minSyncGapMs: under load a commit waits out the gap since the last fsync started; a lone write does not', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    try {
      const { syncer, insert, rows, db } = batcherOn(tempDb('taskplane-durability-'), 5);
      const first = insert(1);
      await turn();
      expect(syncer.pending).toHaveLength(1); // after a quiet spell: at once
      syncer.finish();
      await first;
      const later = [insert(2), insert(3)];
      await turn();
      expect(rows()).toEqual([1]); // the last fsync started less than 5 ms ago
      expect(syncer.pending).toHaveLength(0);
      vi.advanceTimersByTime(2);
      later.push(insert(4)); // joins the waiting commit
      await turn();
      expect(rows()).toEqual([1]);
      vi.advanceTimersByTime(3);
      expect(rows()).toEqual([1, 2, 3, 4]); // one commit …
      expect(syncer.pending).toHaveLength(1); // … and one fsync for the three
      syncer.finish();
      expect(await Promise.all(later)).toEqual([2, 3, 4]);
      const lone = insert(5); // one write queued, right after an fsync: no wait
      await turn();
      expect(rows()).toEqual([1, 2, 3, 4, 5]);
      expect(syncer.pending).toHaveLength(1);
      syncer.finish();
      expect(await lone).toBe(5);
      db.close();
    } finally {
      vi.useRealTimers();
    }
  });

  test('a failed fsync fails the writes it covered and every later write and read', async () => {
    const { batcher, syncer, insert, db } = batcherOn(tempDb('taskplane-durability-'));
    const write = insert(1);
    await turn();
    syncer.finish(new Error('EIO'));
    await expect(write).rejects.toMatchObject({ code: 'unavailable', retryable: false });
    await expect(insert(2)).rejects.toMatchObject({ code: 'unavailable' });
    await expect(batcher.visible(1)).rejects.toMatchObject({ code: 'unavailable' });
    db.close();
  });
});

function task(i: number, padding: string): AgentTaskRecord {
  return {
    id: `task_${String(i).padStart(6, '0')}`,
    owner: 'o',
    tenant: '',
    contextId: 'c',
    state: 'TASK_STATE_SUBMITTED',
    statusTimestamp: i,
    task: { id: `task_${i}`, padding },
    executorState: null,
    createdAt: i,
    updatedAt: i,
    version: 1,
  };
}

describe('SqliteStore on the event loop, synchronous=NORMAL with WAL fsync', () => {
  test('the WAL the store fsyncs keeps its inode across checkpoints, WAL resets, TRUNCATE and a peer closing', async () => {
    const path = tempDb('taskplane-durability-');
    const store = new SqliteStore({ path, writeThread: 'event-loop' });
    const wal = `${path}-wal`;
    const inode = statSync(wal).ino;
    const padding = 'x'.repeat(3000); // about one page per task: 4,000 tasks pass the 1,000-page autocheckpoint often
    for (let i = 0; i < 4000; i += 100) {
      await Promise.all(
        Array.from({ length: 100 }, (_, j) =>
          store.createAgentTask(task(i + j, padding), `m${i + j}`, [], []),
        ),
      );
      expect(statSync(wal).ino).toBe(inode);
    }
    const peer = new Database(path);
    peer.pragma('wal_checkpoint(TRUNCATE)');
    expect(statSync(wal).size).toBe(0);
    peer.close(); // not the last connection: the WAL stays
    expect(statSync(wal).ino).toBe(inode);
    await store.createAgentTask(task(5000, padding), 'm5000', [], []);
    expect(statSync(wal).ino).toBe(inode);
    expect((await store.listAgentTasks({ owner: 'o', tenant: '', pageSize: 1 })).totalSize).toBe(4001);
    await store.close();
    const reopened = new SqliteStore({ path });
    expect((await reopened.listAgentTasks({ owner: 'o', tenant: '', pageSize: 1 })).totalSize).toBe(4001);
    await reopened.close();
  });
});

describe.each(['event-loop', 'worker'] as const)('SqliteStore, writes on the %s', (writeThread) => {
  test('close waits for the writes in flight and keeps every acknowledged write', async () => {
    const path = tempDb('taskplane-durability-');
    const store = new SqliteStore({ path, writeThread });
    const writes = Array.from({ length: 50 }, (_, i) => store.createAgentTask(task(i, 'p'), `m${i}`, [], []));
    await store.close();
    expect((await Promise.all(writes)).every((w) => w.created)).toBe(true);
    const reopened = new SqliteStore({ path, synchronous: 'FULL' });
    expect((await reopened.listAgentTasks({ owner: 'o', tenant: '', pageSize: 1 })).totalSize).toBe(50);
    await reopened.close();
  });
});
