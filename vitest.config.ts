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
    reporters: process.env.CI
      ? ['default', ['json', { outputFile: 'test-results/report.json' }]]
      : ['default'],
  },
});
