import { afterEach, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../support/harness.js';

const b64 = (bytes: number[]): string => Buffer.from(bytes).toString('base64');
const MODE_CENTRAL = {
  role: 'central',
  service_uuid: '6c1e2f3a-9b8d-4e5f-a1b2-c3d4e5f60718',
  characteristics: {
    state: { uuid: '00000001-a123-48ce-896b-4c76973373e6', operations: ['notify', 'write_without_response'], permissions: ['writeable'] },
    c2s: { uuid: '00000002-a123-48ce-896b-4c76973373e6', operations: ['write_without_response'], permissions: ['writeable'] },
    s2c: { uuid: '00000003-a123-48ce-896b-4c76973373e6', operations: ['notify'], permissions: [] },
  },
};

let h: Harness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

describe('smoke', () => {
  it('NFC tap to complete over BLE central', async () => {
    h = await startHarness();
    const conn = await h.backend.nextConnection();
    const engage = await conn.expect('engage');
    expect(engage.namespaces).toEqual({ 'org.iso.18013.5.1': ['age_over_21', 'portrait'] });
    await h.view((v) => v.phase === 'ready');
    h.nfc.tap(() => Uint8Array.from([0x90, 0x00]));
    await conn.expect('nfc_card_present');
    conn.stepRequest('nfc_apdu', { data: b64([0x00, 0xa4, 0x04, 0x00]) });
    const r = await conn.expect('nfc_rapdu');
    expect(r).toMatchObject({ status: 'ok', data: b64([0x90, 0x00]) });
    conn.stepRequest('ble_exchange', { modes: [MODE_CENTRAL] });
    expect(await conn.expect('ble_connected')).toMatchObject({ status: 'ok', role: 'central' });
    const link = await h.central.nextLink();
    conn.stepRequest('ble_write', { char: MODE_CENTRAL.characteristics.state.uuid.toUpperCase(), data: b64([1]) });
    link.notify(MODE_CENTRAL.characteristics.s2c.uuid, Uint8Array.from([1, 2, 3]));
    expect(await conn.expect('ble_notified')).toMatchObject({ char: MODE_CENTRAL.characteristics.s2c.uuid, data: b64([1, 2, 3]) });
    conn.stepRequest('ble_write', { char: MODE_CENTRAL.characteristics.state.uuid, data: b64([2]) });
    conn.send({
      type: 'complete',
      outcome: {
        response: { 'org.iso.18013.5.1': { age_over_21: true } },
        doc_types: ['org.iso.18013.5.1.mDL'],
        issuer_authentication: 'Valid',
        device_authentication: 'Valid',
        errors: {},
        warnings: {},
      },
    });
    const report = await h.nextReport();
    expect(report.result).toBe('complete');
    expect(report.outcome?.verdict).toBe('verified');
    expect((await conn.closed).code).toBe(1000);
    expect(link.writes.map((w) => Array.from(w.data))).toEqual([[1], [2]]);
    expect(link.closed).toBe(true);
  });
});
