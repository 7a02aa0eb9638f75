import type Database from 'better-sqlite3';
import { TaskplaneError } from '../../core/errors.ts';
import type { ChangeNotice } from '../store.ts';
import { translate } from './sqlite-errors.ts';
import type { SqlConn } from './statement-cache.ts';
import type { StoreWrites } from './store-writes.ts';
import { runWrite, type WriteArgs, type WriteName, type WriteResult } from './write-ops.ts';
import { WalFileSyncer } from './wal-syncer.ts';
import { WriteBatcher } from './write-batcher.ts';

export interface EventLoopWritesOptions {
  /** The file the connection has open; absent for `:memory:` (nothing to sync). */
  path?: string;
  /** The connection's `synchronous` pragma. */
  synchronous: 'FULL' | 'NORMAL';
  /** With NORMAL, fsync the WAL before writes resolve. */
  walFsync: boolean;
  groupCommit: boolean;
}

/**
 * A SqliteStore's writes on the event loop's own connection (`writeThread: 'event-loop'`, and `:memory:`):
 * a WriteBatcher, and under NORMAL with walFsync a WalFileSyncer fsyncing the WAL on the thread pool,
 * one fsync at a time and, under load, at least 1 ms between fsync starts (write-batcher.ts says why).
 */
export class EventLoopWrites implements StoreWrites {
  readonly ready = Promise.resolve();
  private readonly batcher: WriteBatcher;
  private readonly syncer: WalFileSyncer | undefined;

  constructor(
    db: Database.Database,
    private readonly conn: SqlConn,
    options: EventLoopWritesOptions,
    onCommit: (notices: ChangeNotice[]) => void,
  ) {
    // The -wal file exists: the migrations' BEGIN IMMEDIATE created it.
    if (options.path !== undefined && options.synchronous === 'NORMAL' && options.walFsync)
      this.syncer = new WalFileSyncer(options.path);
    this.batcher = new WriteBatcher(db, {
      groupCommit: options.groupCommit,
      onCommit,
      translate,
      ...(this.syncer
        ? {
            syncer: this.syncer,
            minSyncGapMs: 1,
            syncFailed: (err: Error) =>
              new TaskplaneError('unavailable', 'sqlite WAL fsync failed; restart the process', {
                cause: err,
                retryable: false,
              }),
          }
        : {}),
    });
  }

  run<K extends WriteName>(name: K, args: WriteArgs<K>): Promise<WriteResult<K>> {
    return this.batcher.run((notices) => runWrite(this.conn, notices, name, args) as WriteResult<K>);
  }

  visible<T>(value: T): Promise<T> {
    return this.batcher.visible(value);
  }

  /** Commits what is queued at once and waits for its fsync. */
  async close(): Promise<void> {
    this.batcher.drain(true);
    await this.batcher.whenSynced();
    this.syncer?.close();
  }
}
