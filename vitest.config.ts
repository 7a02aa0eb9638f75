import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: ['test/bench/**', 'node_modules/**'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    reporters: process.env.CI
      ? ['default', ['json', { outputFile: 'test-results/report.json' }]]
      : ['default'],
  },
});
