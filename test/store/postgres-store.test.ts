import { postgresHarness } from './support/postgres-harness.ts';
import { storeSuite } from './store-suite.ts';

// Group commit (the default); postgres-store-no-group-commit.test.ts runs the same suite without it.
storeSuite(postgresHarness('postgres', {}));
