/**
 * The relay core with the real PC/SC adapter (`PcscNfcReader`) on the scripted binding double
 * (test/support/fake-pcsclite.ts) instead of the fake NFC port, against the fake backend: what the adapter
 * decides reaches the backend as the spec says (docs/protocol.md §4.3, §7.3). The adapter's own unit tests
 * (test/unit/devices/pcsc/) check its variants at its boundary; the watchdog tests check the kiosk with a
 * port that times out by itself. Here the two meet.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { PcscNfcReader } from '../../src/devices/pcsc/pcsc-nfc-reader.js';
import { createKiosk } from '../../src/kiosk/compose.js';
import { mergeConfig, parseConfig } from '../../src/platform/config.js';
import type { Kiosk } from '../../src/kiosk/kiosk.js';
import { createLogger } from '../../src/platform/log.js';
import { FakeBackend } from '../support/fake-backend.js';
import { LogCapture, TEST_TIMEOUTS, observeKiosk, type KioskObserver } from '../support/harness.js';
import { echoCard, FakePcscService } from '../support/fake-pcsclite.js';
import { b64 } from '../support/relay-fixtures.js';

interface Rig {
  readonly backend: FakeBackend;
  readonly service: FakePcscService;
  readonly reader: PcscNfcReader;
  readonly kiosk: Kiosk;
  readonly observed: KioskObserver;
  readonly logs: LogCapture;
}

let rig: Rig | undefined;
afterEach(async () => {
  if (!rig) return;
  await rig.kiosk.stop();
  await rig.reader.close();
  await rig.backend.stop();
  rig.observed.assertViewsValid();
  rig = undefined;
});

async function start(apduMs: number): Promise<Rig> {
  const backend = await FakeBackend.start();
  const logs = new LogCapture();
  const log = createLogger({ level: 'debug' }, logs);
  const config = parseConfig(
    mergeConfig({ backend: { baseUrl: backend.baseUrl, apiKey: backend.apiKey }, timeouts: TEST_TIMEOUTS }, { timeouts: { apduMs } }),
  );
  const service = new FakePcscService();
  const reader = new PcscNfcReader({
    binding: service.factory,
    serviceRetryMinMs: 5,
    serviceRetryMaxMs: 40,
    disconnectTimeoutMs: 200,
    connectTimeoutMs: 500,
  });
  const kiosk = createKiosk(config, { nfc: reader }, log);
  const observed = observeKiosk(kiosk);
  kiosk.start();
  rig = { backend, service, reader, kiosk, observed, logs };
  return rig;
}

const SELECT = [0x00, 0xa4, 0x04, 0x00, 0x07, 0xd2, 0x76, 0x00, 0x00, 0x85, 0x01, 0x01, 0x00];

describe('PC/SC adapter in the relay', () => {
  it('§4.3/§7.3: a mute card on the PC/SC adapter: the adapter’s own timeout (apduMs) reaches the backend as nfc_rapdu error reason Timeout; the next card is served', async () => {
    const r = await start(300);
    const conn = await r.backend.nextConnection();
    await conn.expect('engage');
    await r.observed.view((v) => v.phase === 'ready');
    r.service.slot().insert(() => 'mute');
    await conn.expect('nfc_card_present');
    conn.stepRequest('nfc_apdu', { data: b64(SELECT) });
    expect(await conn.expect('nfc_rapdu')).toEqual({ type: 'step_result', op: 'nfc_rapdu', status: 'error', reason: 'Timeout' });
    // The card never answered: the APDU reached the binding once and is still pending there.
    expect(r.service.slot().transmits).toHaveLength(1);
    expect(r.service.slot().pendingTransmits.size).toBe(1);
    expect(r.logs.records.filter((l) => l.event === 'apdu_failed').map((l) => l.reason)).toEqual(['Timeout']);
    conn.send({ type: 'error', message: 'fatal PC/SC error' });
    const report = await r.observed.nextReport();
    expect(report.result).toBe('backend_error');
    // The phone is lifted; the next one, on the same session, is served through a fresh handle.
    r.service.slot().remove();
    const next = await r.backend.nextConnection();
    expect(next.session.id).toBe(conn.session.id);
    await next.expect('engage');
    r.service.slot().insert(echoCard);
    await next.expect('nfc_card_present');
    next.stepRequest('nfc_apdu', { data: b64(SELECT) });
    expect(await next.expect('nfc_rapdu')).toEqual({ type: 'step_result', op: 'nfc_rapdu', status: 'ok', data: b64([0x00, 0x90, 0x00]) });
  });
});
