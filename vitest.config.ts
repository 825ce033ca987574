import { defineConfig } from 'vitest/config';

// One runner for every system. The global setup starts the throwaway
// PostgreSQL clusters the storage conformance suite needs (see test/support).
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    reporters: ['default'],
  },
});
