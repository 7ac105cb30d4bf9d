import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Each fork keeps its imported modules from one file to the next: compiling and loading the server
    // again for each of 130 files cost about a fifth of the suite's CPU. Files share nothing else:
    // each starts its own servers, and fake timers are restored after each test.
    isolate: false,
    maxWorkers: 2,
    minWorkers: 1,
    reporters: ['default'],
  },
});
