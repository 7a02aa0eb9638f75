import { PostgresStore, type PostgresStoreOptions } from '../../src/store/postgres/pg-store.ts';
import { disposeSchema, freshSchemaName, urlForSchema } from '../support/pg.ts';
import { storeSuite } from './store-suite.ts';

function postgresHarness(name: string, options: Omit<PostgresStoreOptions, 'url'>) {
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

storeSuite(postgresHarness('postgres', {}));
// One transaction per envelope write (no batching) must keep the same behaviour.
storeSuite(postgresHarness('postgres without group commit', { groupCommit: false }));
