/**
 * Through a private pcscd + vpcd: closing the adapter while a mute card holds a native transmit must not
 * freeze the JS thread (the binding's close() waits for the reader mutex the transmit holds). The card runs
 * in a child process, so a frozen thread here could not keep it from leaving.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { PcscNfcReader } from '../../src/devices/pcsc/pcsc-nfc-reader.js';
import { NfcTransmitError } from '../../src/devices/ports.js';
import { startPrivatePcscd, type PrivatePcscd } from '../../tools/pcscd/pcscd-daemon.js';

let pcscd: PrivatePcscd;
let child: ChildProcess | undefined;

beforeAll(async () => {
  pcscd = await startPrivatePcscd({ readers: 2 });
}, 30_000);

afterAll(async () => {
  child?.kill();
  await pcscd.stop();
});

const SELECT = Uint8Array.from([0x00, 0xa4, 0x04, 0x00, 0x07, 0xd2, 0x76, 0x00, 0x00, 0x85, 0x01, 0x01, 0x00]);
const HOLD_MS = 5_000;

it('close() while a mute card holds a transmit returns promptly and does not freeze the JS thread', async () => {
  const slot = pcscd.readers[0];
  if (!slot) throw new Error('no reader');
  const reader = new PcscNfcReader({ reader: slot.name, serviceRetryMinMs: 50, serviceRetryMaxMs: 500 });
  await new Promise<void>((resolve) => {
    if (reader.availability().usable) {
      resolve();
      return;
    }
    const stop = reader.onAvailabilityChange((a) => {
      if (a.usable) {
        stop();
        resolve();
      }
    });
  });
  const proc = spawn(
    process.execPath,
    ['--import', 'tsx', path.resolve('test/support/mute-card-child.ts'), slot.host, String(slot.port), String(HOLD_MS)],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  child = proc;
  proc.stdout.resume();
  const card = await reader.nextCard(AbortSignal.timeout(10_000));
  const error = await card.transmit(SELECT, { timeoutMs: 300, signal: AbortSignal.timeout(10_000) }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(NfcTransmitError);
  expect((error as NfcTransmitError).reason).toBe('Timeout');

  // Event-loop monitor: the longest gap between 10 ms ticks while close() runs.
  let last = performance.now();
  let maxGap = 0;
  const tick = setInterval(() => {
    const now = performance.now();
    maxGap = Math.max(maxGap, now - last);
    last = now;
  }, 10);
  const started = performance.now();
  await reader.close();
  const closeMs = performance.now() - started;
  clearInterval(tick);
  await once(proc, 'exit').catch(() => undefined);
  expect(maxGap).toBeLessThan(1_000); // the kiosk's JS thread must keep running
  expect(closeMs).toBeLessThan(HOLD_MS - 1_000);
}, 30_000);
