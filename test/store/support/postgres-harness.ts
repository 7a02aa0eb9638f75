import { afterAll } from 'vitest';
import { PostgresStore, type PostgresStoreOptions } from '../../../src/store/postgres/pg-store.ts';
import { disposeSchema, freshSchemaName, urlForSchema, withPgClient } from '../../support/pg.ts';

/**
 * The store suite's harness for PostgreSQL, shared by the postgres-store*.test.ts files: one file per
 * set of options, so the test runner can run them side by side.
 *
 * Each test starts on an empty store: the file's schema is migrated by its first test and emptied
 * before each later one (no rows, identity sequences from 1, as after the migrations): far cheaper
 * than migrating a new schema per test. A failed test's schema is kept for inspection and the next
 * test starts on a new one; the last is dropped when the file ends.
 */
export function postgresHarness(name: string, options: Omit<PostgresStoreOptions, 'url'>) {
  let schema: string | null = null;
  afterAll(async () => {
    if (schema !== null) await disposeSchema(schema, false);
  });
  return {
    name,
    create: async () => {
      if (schema === null) schema = freshSchemaName();
      else await emptySchema(schema);
      const mine = schema;
      const url = urlForSchema(mine);
      return {
        store: await PostgresStore.open({ url, poolMax: 4, ...options }),
        openPeer: () => PostgresStore.open({ url, poolMax: 4, ...options }),
        dispose: async (failed: boolean) => {
          if (!failed) return;
          await disposeSchema(mine, true);
          schema = null;
        },
      };
    },
  };
}

/** Per schema, the statements that empty it (its tables do not change between tests). */
const emptying = new Map<string, string>();

/**
 * Every table of `schema` but the migrations' own record emptied, and its identity sequences back at 1,
 * in one round trip. DELETE rather than TRUNCATE: a test leaves a few rows, and TRUNCATE
 * replaces every table's files. Triggers are off for that session (`session_replication_role`), as
 * they are for TRUNCATE: the count tables' triggers would otherwise count the deletions.
 */
async function emptySchema(schema: string): Promise<void> {
  await withPgClient(async (pg) => {
    let sql = emptying.get(schema);
    if (sql === undefined) {
      const { rows } = await pg.query<{ table_name: string; column_name: string | null }>(
        `SELECT t.table_name, c.column_name
           FROM information_schema.tables t
           LEFT JOIN information_schema.columns c
             ON c.table_schema = t.table_schema AND c.table_name = t.table_name AND c.is_identity = 'YES'
          WHERE t.table_schema = $1 AND t.table_type = 'BASE TABLE' AND t.table_name <> 'taskplane_migrations'`,
        [schema],
      );
      const statements = ['SET session_replication_role = replica;'];
      for (const r of rows) statements.push(`DELETE FROM ${schema}.${r.table_name};`);
      for (const r of rows)
        if (r.column_name !== null)
          statements.push(
            `SELECT setval(pg_get_serial_sequence('${schema}.${r.table_name}', '${r.column_name}'), 1, false);`,
          );
      sql = statements.join('\n');
      emptying.set(schema, sql);
    }
    await pg.query(sql);
  });
}
