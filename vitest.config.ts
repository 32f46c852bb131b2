import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    environment: 'node',
    testTimeout: 20_000,
    hookTimeout: 20_000,
    // Property and conformance tests open real loopback sockets; keep the default pool, but fail on leaks.
    dangerouslyIgnoreUnhandledErrors: false,
  },
});
