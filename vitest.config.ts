import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: ['test/bench/**', 'node_modules/**'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two files at a time even on a two-core machine (vitest's default there is one): most files spend
    // their time waiting on child processes, sockets and databases, not on the CPU.
    maxWorkers: 2,
    env: {
      // The tests' PostgreSQL commits without waiting for its WAL flush (synchronous_commit=off, for their
      // own connections only): what a commit makes visible, and when, is unchanged; only a crash of the
      // database server itself could lose the last commits, and no test crashes it; the tests spend
      // less time waiting on the disk. The benchmarks (npm run bench:*) do not run here and
      // measure the server's own durable setting. TASKPLANE_TEST_PG, when set, is used as it is.
      TASKPLANE_TEST_PG:
        process.env.TASKPLANE_TEST_PG ??
        'postgres://postgres@127.0.0.1:5432/test?options=-c%20synchronous_commit%3Doff',
    },
    reporters: process.env.CI
      ? ['default', ['json', { outputFile: 'test-results/report.json' }]]
      : ['default'],
  },
});
