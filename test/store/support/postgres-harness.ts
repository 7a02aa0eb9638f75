import { PostgresStore, type PostgresStoreOptions } from '../../../src/store/postgres/pg-store.ts';
import { disposeSchema, freshSchemaName, urlForSchema } from '../../support/pg.ts';

/**
 * The store suite's harness for PostgreSQL, shared by the postgres-store*.test.ts files: one file per
 * set of options, so the test runner can run them side by side.
 */
export function postgresHarness(name: string, options: Omit<PostgresStoreOptions, 'url'>) {
  return {
    name,
    create: async () => {
      // A fresh schema per test, dropped on success and kept on failure.
      const schema = freshSchemaName();
      const url = urlForSchema(schema);
      return {
        store: await PostgresStore.open({ url, poolMax: 4, ...options }),
        openPeer: () => PostgresStore.open({ url, poolMax: 4, ...options }),
        dispose: (failed: boolean) => disposeSchema(schema, failed),
      };
    },
  };
}
