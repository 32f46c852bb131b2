import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

// Four projects: the Node tests run files in parallel (at least two at a time); the browser end-to-end tests each drive a Chromium
// against a whole in-process stack, so on a 2-core machine their files run one after another (and so do the
// emulated-Bluetooth tests, below); the
// packaging tests run electron-builder (a few seconds a flavour) and the Electronegativity scan, one file
// after another as they share dist/app.
export default defineConfig({
  test: {
    testTimeout: 20_000,
    hookTimeout: 20_000,
    // Property and conformance tests open real loopback sockets; keep the default pool, but fail on leaks.
    dangerouslyIgnoreUnhandledErrors: false,
    projects: [
      {
        extends: true,
        // Two files at a time even on a 2-core machine (Vitest's default there is one): most of these tests wait
        // on sockets, child processes and timers rather than compute, so two workers take the project from about
        // 390 s to 240 s on such a machine.
        test: {
          name: 'node',
          include: ['test/**/*.test.ts'],
          exclude: ['test/e2e/**', 'test/package/**', 'test/hci/**'],
          environment: 'node',
          maxWorkers: Math.max(2, availableParallelism() - 1),
        },
      },
      {
        // BlueZ's emulated controllers (tools/btvirt): btvirt's socket paths are fixed, one per machine, so
        // these files run one after another, each with its own btvirt.
        extends: true,
        test: {
          name: 'hci',
          include: ['test/hci/**/*.test.ts'],
          environment: 'node',
          fileParallelism: false,
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        extends: true,
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          environment: 'node',
          fileParallelism: false,
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        extends: true,
        test: {
          name: 'package',
          include: ['test/package/**/*.test.ts'],
          environment: 'node',
          fileParallelism: false,
          testTimeout: 60_000,
          hookTimeout: 180_000,
        },
      },
    ],
  },
});
