import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteStore, type SqliteStoreOptions } from '../../../src/store/sqlite/sqlite-store.ts';

/**
 * The store suite's harness for SQLite, shared by the sqlite-store*.test.ts files: one file per set of
 * options, so the test runner can run them side by side.
 */
export function sqliteHarness(name: string, options: Omit<SqliteStoreOptions, 'path'>) {
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
