import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteStore, type SqliteStoreOptions } from '../../src/store/sqlite/sqlite-store.ts';
import { storeSuite } from './store-suite.ts';

function sqliteHarness(name: string, options: Omit<SqliteStoreOptions, 'path'>) {
  return {
    name,
    create: async () => {
      // A temp file per test (WAL needs a real file); kept when the test fails.
      const dir = mkdtempSync(join(tmpdir(), 'taskplane-store-'));
      const path = join(dir, 'store.db');
      return {
        store: new SqliteStore({ path, ...options }),
        openPeer: async () => new SqliteStore({ path, ...options }),
        dispose: async (failed: boolean) => {
          if (failed) console.error(`kept sqlite database for inspection: ${path}`);
          else rmSync(dir, { recursive: true, force: true });
        },
      };
    },
  };
}

// The default: writes on the write worker (worker-writes.ts), reads on the event loop's connection.
storeSuite(sqliteHarness('sqlite', {}));
// Writes on the event loop's connection, WAL fsynced on the thread pool (write-batcher.ts).
storeSuite(sqliteHarness('sqlite, writes on the event loop', { writeThread: 'event-loop' }));
// synchronous=FULL (fsync inside COMMIT on the event loop) stays selectable and must behave the same.
storeSuite(
  sqliteHarness('sqlite on the event loop, synchronous=FULL', {
    writeThread: 'event-loop',
    synchronous: 'FULL',
  }),
);
// The one-transaction-per-write path must keep the same behaviour as group commit.
storeSuite(sqliteHarness('sqlite without group commit', { groupCommit: false }));
