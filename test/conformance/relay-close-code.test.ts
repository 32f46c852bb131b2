/**
 * Spec §3 "Any phase": the backend may close the socket at any time; the kiosk reports the close code it
 * was given. The window this pins: the backend's close frame has arrived (the socket is closing, so a send
 * fails) but the close event has not been delivered yet — a card answer landing there used to be reported
 * as "session socket closed (no close frame)" although the backend had said 1011. Over `ws` the window
 * is the TCP round trip of the closing handshake; the in-memory backend makes it deterministic.
 */
import { describe, expect, it } from 'vitest';
import { QrScanQueue } from '../../src/devices/qr/qr-scan-queue.js';
import { parseConfig } from '../../src/platform/config.js';
import { Kiosk, type VerificationReport } from '../../src/kiosk/kiosk.js';
import { createLogger } from '../../src/platform/log.js';
import { FakeBleCentral, FakeBlePeripheral, FakeNfcReader } from '../support/fake-devices.js';
import { MemoryBackend, type MemoryConnection } from '../support/memory-backend.js';

async function nextOp(conn: MemoryConnection, op: string): Promise<void> {
  for (;;) {
    const frame = await conn.next();
    if (frame === undefined) throw new Error(`the connection closed before ${op}`);
    if (frame.op === op) return;
  }
}

function kioskOnMemory(): { kiosk: Kiosk; backend: MemoryBackend; nfc: FakeNfcReader; reports: VerificationReport[] } {
  const config = parseConfig({});
  const backend = new MemoryBackend();
  const nfc = new FakeNfcReader();
  const kiosk = new Kiosk({
    config,
    devices: {
      nfc,
      qr: new QrScanQueue({ freshMs: config.qr.scanFreshMs }),
      bleCentral: new FakeBleCentral(),
      blePeripheral: new FakeBlePeripheral(),
    },
    sessions: backend,
    connector: backend,
    log: createLogger({ level: 'silent' }),
  });
  const reports: VerificationReport[] = [];
  kiosk.onVerification((report) => reports.push(report));
  return { kiosk, backend, nfc, reports };
}

describe('the close code of a backend close that races a send', () => {
  it.each([1011, 1001, 4000])('%d arrives while the card is answering: the report names it, not "no close frame"', async (code) => {
    const { kiosk, backend, nfc, reports } = kioskOnMemory();
    kiosk.start();
    try {
      const conn = await backend.until(() => backend.latest);
      if (conn === undefined) throw new Error('no connection');
      await nextOp(conn, 'engage');
      let answer: ((bytes: Uint8Array) => void) | undefined;
      nfc.tap(() => new Promise<Uint8Array>((resolve) => (answer = resolve)));
      await nextOp(conn, 'nfc_card_present');
      conn.send({ type: 'step_request', op: 'nfc_apdu', params: { data: Buffer.from([0x00, 0xa4, 0x04, 0x00]).toString('base64') } });
      await new Promise<void>((resolve) => {
        const check = (): void => {
          if (answer) resolve();
          else setImmediate(check);
        };
        check();
      });
      // The close frame is in (sends now fail); its delivery to the kiosk is still queued.
      conn.close(code, 'backend restarting');
      answer?.(Uint8Array.from([0x90, 0x00]));
      const report = await backend.until(() => reports[0]);
      expect(report?.result).toBe('dropped');
      expect(report?.error).toMatchObject({ code: 'connection_lost', detail: `session socket closed (${code})` });
    } finally {
      await kiosk.stop();
    }
  });
});
