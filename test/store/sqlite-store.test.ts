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

storeSuite(sqliteHarness('sqlite', {}));
// synchronous=FULL (fsync inside COMMIT) stays selectable and must behave the same.
storeSuite(sqliteHarness('sqlite synchronous=FULL', { synchronous: 'FULL' }));
// The one-transaction-per-write path must keep the same behaviour as group commit.
storeSuite(sqliteHarness('sqlite without group commit', { groupCommit: false }));
