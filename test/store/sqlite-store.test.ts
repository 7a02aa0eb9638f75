import { sqliteHarness } from './support/sqlite-harness.ts';
import { storeSuite } from './store-suite.ts';

// The default: writes on the write worker (worker-writes.ts), reads on the event loop's connection.
// The other SQLite settings run the same suite in sqlite-store-event-loop.test.ts and
// sqlite-store-no-group-commit.test.ts.
storeSuite(sqliteHarness('sqlite', {}));
