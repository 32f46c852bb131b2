/**
 * Child-process probe for the session-lifecycle tests: runs a kiosk against the fake backend with short
 * renewal and backoff timers, runs one failed verification, stops everything and prints the resources
 * still active. It never calls `process.exit`: the parent checks that the process ends on its own.
 *
 * Run as `node --import tsx test/support/session-stop-probe.ts`.
 */
import { startHarness } from './harness.js';

const h = await startHarness({
  config: {
    session: { lifetimeMs: 4_000, renewBeforeExpiryMs: 2_500, minRemainingToStartMs: 2_000, offlineBackoffMinMs: 50 },
    timeouts: { verificationMs: 2_000, resultDisplayMs: 10_000, errorDisplayMs: 10_000 },
  },
});
const conn = await h.backend.nextConnection();
await conn.expect('engage');
await h.view((v) => v.phase === 'ready');
h.nfc.tap(() => Uint8Array.from([0x90, 0x00]));
await conn.expect('nfc_card_present');
conn.send({ type: 'error', message: 'probe' });
await h.nextReport();
const again = await h.backend.nextConnection();
await again.expect('engage');
await h.view((v) => v.phase === 'error');
await h.kiosk.stop();
const closed = await again.closed;
await h.backend.stop();
process.stdout.write(`${JSON.stringify({ closeCode: closed.code, resources: process.getActiveResourcesInfo() })}\n`);
