import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { onTestFinished } from 'vitest';
import { migratePostgres } from '../../src/store/postgres/pg-migrate.ts';
import { PG_MIGRATIONS } from '../../src/store/postgres/pg-schema.ts';
import { PostgresStore } from '../../src/store/postgres/pg-store.ts';

/** The PostgreSQL the tests use; CI starts one (.ci/run). Tests never skip when it is absent: they fail. */
export const TEST_PG_URL = process.env.TASKPLANE_TEST_PG ?? 'postgres://postgres@127.0.0.1:5432/test';

/** A new schema name per test, so tests run in parallel against one database without touching each other. */
export function freshSchemaName(prefix = 'tp_test'): string {
  return `${prefix}_${randomBytes(6).toString('hex')}`;
}

/** The test database URL pointed at `schema` (the store creates it on open). */
export function urlForSchema(schema: string, base = TEST_PG_URL): string {
  const url = new URL(base);
  url.searchParams.set('schema', schema);
  return url.toString();
}

/** Runs `fn` on a short-lived admin connection to the test database. */
export async function withPgClient<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: TEST_PG_URL });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/**
 * Creates `schema` with only the migrations `upTo` picks (the schema an older version left) and runs `fn`
 * on that connection with the schema on its search path: seed rows the old way, migrate on, compare.
 */
export async function withPgSchemaAt<T>(
  schema: string,
  upTo: (migrationId: number) => boolean,
  fn: (client: pg.Client) => Promise<T>,
): Promise<T> {
  return withPgClient(async (c) => {
    await c.query(`CREATE SCHEMA ${schema}`);
    await c.query(`SET search_path TO ${schema}`);
    await migratePostgres(
      c,
      schema,
      PG_MIGRATIONS.filter((m) => upTo(m.id)),
      0,
    );
    return fn(c);
  });
}

/**
 * Drops a test schema; when the test failed it is kept (and named on stderr) so one can look at the rows.
 */
export async function disposeSchema(schema: string, failed: boolean): Promise<void> {
  if (failed) {
    console.error(
      `kept postgres schema for inspection: ${schema} in ${new URL(TEST_PG_URL).pathname.slice(1)}`,
    );
    return;
  }
  await withPgClient((c) => c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`));
}

/**
 * `n` PostgreSQL stores on one fresh schema, as `n` processes sharing a database would open it (each its
 * own pool and LISTEN session); closed, and the schema dropped (kept when the test failed), as the test ends.
 */
export async function sharedSchemaStores(n: number, prefix: string): Promise<PostgresStore[]> {
  const schema = freshSchemaName(prefix);
  const url = urlForSchema(schema);
  const opened: PostgresStore[] = [];
  onTestFinished(async ({ task }) => {
    for (const s of opened) await s.close();
    await disposeSchema(schema, task.result?.state === 'fail');
  });
  for (let i = 0; i < n; i++) opened.push(await PostgresStore.open({ url, poolMax: 2 }));
  return opened;
}
