import { sqliteHarness } from './support/sqlite-harness.ts';
import { storeSuite } from './store-suite.ts';

// Writes on the event loop's connection, WAL fsynced on the thread pool (write-batcher.ts).
storeSuite(sqliteHarness('sqlite, writes on the event loop', { writeThread: 'event-loop' }));
// synchronous=FULL (fsync inside COMMIT on the event loop) stays selectable and must behave the same.
storeSuite(
  sqliteHarness('sqlite on the event loop, synchronous=FULL', {
    writeThread: 'event-loop',
    synchronous: 'FULL',
  }),
);
