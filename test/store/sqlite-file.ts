import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { onTestFinished } from 'vitest';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';

/**
 * A migrated SQLite store on a fresh file, and a second, raw connection to the same file for seeding
 * rows in bulk and reading query plans. Both close when the test finishes.
 */
export async function sqliteFileWithRawConnection(
  prefix: string,
): Promise<{ store: SqliteStore; db: Database.Database }> {
  const path = join(mkdtempSync(join(tmpdir(), prefix)), 'plane.db');
  const store = new SqliteStore({ path });
  onTestFinished(() => store.close());
  await store.getEnvelope('none'); // the first call migrates
  const db = new Database(path);
  onTestFinished(() => {
    db.close();
  });
  return { store, db };
}
