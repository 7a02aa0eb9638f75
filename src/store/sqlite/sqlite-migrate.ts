import type Database from 'better-sqlite3';
import { TaskplaneError } from '../../core/errors.ts';
import type { Migration } from '../migration.ts';

/**
 * Applies pending migrations, each in its own BEGIN IMMEDIATE transaction. IMMEDIATE takes SQLite's
 * write lock before reading the applied version, so two processes starting at once serialize: the second
 * waits (busy_timeout), then sees the first one's rows and skips them. Refuses a database that has a
 * migration newer than this code knows (an older binary must not write a newer schema).
 */
export function migrateSqlite(db: Database.Database, migrations: readonly Migration[], nowMs: number): void {
  const known = migrations.reduce((max, m) => Math.max(max, m.id), 0);
  for (;;) {
    db.exec('BEGIN IMMEDIATE');
    try {
      db.exec(`CREATE TABLE IF NOT EXISTS taskplane_migrations (
        id INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`);
      const row = db.prepare('SELECT MAX(id) AS id FROM taskplane_migrations').get() as { id: number | null };
      const applied = row.id ?? 0;
      if (applied > known) {
        throw new TaskplaneError(
          'schema_too_new',
          `database schema is at migration ${applied} but this taskplane knows only up to ${known}; upgrade taskplane`,
        );
      }
      const next = migrations.filter((m) => m.id > applied).sort((a, b) => a.id - b.id)[0];
      if (!next) {
        db.exec('COMMIT');
        return;
      }
      db.exec(next.sql);
      db.prepare('INSERT INTO taskplane_migrations (id, name, applied_at) VALUES (?, ?, ?)').run(
        next.id,
        next.name,
        nowMs,
      );
      db.exec('COMMIT');
    } catch (err) {
      if (db.inTransaction) db.exec('ROLLBACK');
      throw err;
    }
  }
}
