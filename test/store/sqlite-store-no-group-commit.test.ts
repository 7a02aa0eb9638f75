import { sqliteHarness } from './support/sqlite-harness.ts';
import { storeSuite } from './store-suite.ts';

// The one-transaction-per-write path must keep the same behaviour as group commit.
storeSuite(sqliteHarness('sqlite without group commit', { groupCommit: false }));
