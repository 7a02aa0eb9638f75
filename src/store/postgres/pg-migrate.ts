import type pg from 'pg';
import { TaskplaneError } from '../../core/errors.ts';
import type { Migration } from '../migration.ts';

/**
 * Applies pending migrations, each in its own transaction that first takes a transaction-level advisory
 * lock keyed by the schema (graphile-worker's migrate.ts does the same): two processes starting at once
 * serialize, and the second sees the first one's rows and skips them. The schema itself is created under
 * the same lock because concurrent `CREATE SCHEMA IF NOT EXISTS` can still fail on the unique catalog
 * index. Refuses a database with a migration newer than this code knows.
 */
export async function migratePostgres(
  client: pg.ClientBase,
  schema: string | undefined,
  migrations: readonly Migration[],
  nowMs: number,
): Promise<void> {
  const known = migrations.reduce((max, m) => Math.max(max, m.id), 0);
  const lockKey = `taskplane_migrate:${schema ?? 'default'}`;
  for (;;) {
    await client.query('BEGIN');
    try {
      await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [lockKey]);
      if (schema !== undefined) await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
      await client.query(`CREATE TABLE IF NOT EXISTS taskplane_migrations (
        id INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`);
      const { rows } = await client.query<{ id: number | null }>(
        'SELECT MAX(id) AS id FROM taskplane_migrations',
      );
      const applied = rows[0]?.id ?? 0;
      if (applied > known) {
        throw new TaskplaneError(
          'schema_too_new',
          `database schema is at migration ${applied} but this taskplane knows only up to ${known}; upgrade taskplane`,
        );
      }
      const next = migrations.filter((m) => m.id > applied).sort((a, b) => a.id - b.id)[0];
      if (next) {
        await client.query(next.sql);
        await client.query('INSERT INTO taskplane_migrations (id, name, applied_at) VALUES ($1, $2, $3)', [
          next.id,
          next.name,
          nowMs,
        ]);
      }
      await client.query('COMMIT');
      if (!next) return;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    }
  }
}
