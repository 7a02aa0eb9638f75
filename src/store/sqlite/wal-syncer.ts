import { closeSync, fdatasync, fstatSync, fsyncSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import type { WalSyncer } from './write-batcher.ts';

/**
 * fsyncs a SQLite database's `-wal` file on the libuv thread pool (write-batcher.ts says when).
 *
 * Why a descriptor of our own reaches SQLite's writes: on Linux (and POSIX generally) fsync/fdatasync
 * flush the file's dirty pages whichever descriptor they come from. It must stay the same file: SQLite
 * reuses the `-wal` file for the life of the connection. A checkpoint's WAL reset rewrites its header in
 * place, `journal_size_limit` and `wal_checkpoint(TRUNCATE)` ftruncate it, and only the last connection
 * to close unlinks it, which cannot happen while this store's connection is open. Checked by
 * test/store/sqlite-durability.test.ts: same inode through 4,000 task writes of a page each
 * (autocheckpoints every 1,000 WAL pages, each followed by a WAL reset), a `wal_checkpoint(TRUNCATE)` and
 * a peer connection closing. A WAL unlinked anyway (deleted by hand) shows nlink 0 and fails the sync loudly
 * rather than syncing a file SQLite no longer writes.
 *
 * fdatasync, as SQLite itself uses on Linux: it also flushes the file size when the WAL grew, which is
 * what reading the frames back needs.
 *
 * The main database file needs nothing from us: under synchronous=NORMAL a checkpoint fsyncs the WAL
 * before copying frames into the database and fsyncs the database before the WAL may be reset.
 */
export class WalFileSyncer implements WalSyncer {
  private readonly fd: number;

  /** Opens `<dbPath>-wal`, which must exist (SQLite creates it at the first transaction in WAL mode). */
  constructor(dbPath: string) {
    this.fd = openSync(`${dbPath}-wal`, 'r+');
    // Once at open, synchronously: the commits made so far (migrations) and the directory entries of a
    // WAL and database that may have just been created. SQLite syncs the directory of a new WAL only at
    // the WAL's first sync, which under NORMAL is the first checkpoint.
    fsyncSync(this.fd);
    syncDirectory(dirname(dbPath));
  }

  sync(done: (err: Error | null) => void): void {
    let unlinked: boolean;
    try {
      unlinked = fstatSync(this.fd).nlink === 0; // once per fsync, not per write
    } catch (err) {
      done(err as Error);
      return;
    }
    if (unlinked) {
      done(new Error('the SQLite WAL file was removed while the database was open'));
      return;
    }
    fdatasync(this.fd, (err) => done(err));
  }

  close(): void {
    closeSync(this.fd);
  }
}

function syncDirectory(dir: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dir, 'r');
    fsyncSync(fd);
  } catch {
    // Directories cannot be opened or fsynced on some platforms (Windows); their entries are durable
    // by other means there.
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
