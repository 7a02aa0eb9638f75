import { postgresHarness } from './support/postgres-harness.ts';
import { storeSuite } from './store-suite.ts';

// One transaction per envelope write (no batching) must keep the same behaviour.
storeSuite(postgresHarness('postgres without group commit', { groupCommit: false }));
