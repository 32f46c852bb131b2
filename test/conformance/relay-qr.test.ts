/**
 * Relay conformance, QR flow and engagement: spec §3 (rows "WebSocket open" and "Engaged → QR engaged",
 * rules 1 and 2) and §4.3 (`engage`, `qr_scanned`).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { BUILT_IN_PROFILES } from '../../src/kiosk/profiles.js';
import { startHarness, type Harness } from '../support/harness.js';
import {
  CENTRAL_CHARS,
  QR_TEXT,
  armed,
  b64,
  centralMode,
  connectCentral,
  completeQrVerification,
  endTransfer,
  mark,
  scanQr,
  u8,
  viewAfter,
} from '../support/relay-fixtures.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

describe('§4.3 engage', () => {
  it('§4.3 engage is the first message after the socket opens, with exactly the active profile namespaces and no transport', async () => {
    h = await startHarness({ config: { profile: 'identity' } });
    const conn = await h.backend.nextConnection();
    const first = await conn.receive();
    expect(first).toEqual({
      type: 'step_result',
      op: 'engage',
      status: 'ok',
      namespaces: BUILT_IN_PROFILES.identity?.namespaces,
    });
    await h.view((v) => v.phase === 'ready');
    // Nothing else is said on an engaged session until a tap or a scan (rule 1: engage declares no transport).
    await conn.expectSilence(200);
  });

  it('§4.3 engage carries a custom profile namespaces verbatim', async () => {
    const namespaces = { 'org.iso.18013.5.1': ['family_name', 'portrait'], 'org.iso.18013.5.1.aamva': ['DHS_compliance'] };
    h = await startHarness({ config: { profile: 'counter', profiles: { counter: { namespaces } } } });
    const conn = await h.backend.nextConnection();
    expect(await conn.receive()).toEqual({ type: 'step_result', op: 'engage', status: 'ok', namespaces });
  });
});

describe('§3 Engaged, transport undecided → QR engaged', () => {
  it('§3 Engaged → QR engaged: qr_scanned commits to QR; the backend replies ble_exchange and the kiosk sets up BLE', async () => {
    h = await startHarness();
    const conn = await armed(h);
    const from = mark(h);
    await scanQr(h, conn);
    await viewAfter(h, from, (v) => v.phase === 'engaging' && v.transport === 'qr');
    const mode = centralMode();
    conn.stepRequest('ble_exchange', { modes: [mode] });
    expect(await conn.expect('ble_connected')).toEqual({ type: 'step_result', op: 'ble_connected', status: 'ok', role: 'central' });
    const link = await h.central.nextLink();
    expect(link.profile.serviceUuid).toBe(mode.service_uuid);
    await viewAfter(h, from, (v) => v.phase === 'transferring' && v.transport === 'qr' && v.role === 'central');
    // No NFC traffic in a QR verification.
    expect(h.nfc.apduCount).toBe(0);
    endTransfer(conn, CENTRAL_CHARS.state);
    expect((await h.nextReport()).result).toBe('complete');
  });
});

describe('§4.3 qr_scanned', () => {
  it('§4.3 qr_scanned has exactly type, op, status ok and data = the raw scanned text including the mdoc: prefix', async () => {
    h = await startHarness();
    const conn = await armed(h);
    expect(await scanQr(h, conn, QR_TEXT)).toEqual({ type: 'step_result', op: 'qr_scanned', status: 'ok', data: QR_TEXT });
  });

  it('§4.3 qr_scanned data is unmodified: case of the prefix, inner and trailing spaces, tabs, URL characters kept', async () => {
    h = await startHarness();
    const conn = await armed(h);
    const raw = 'MDOC:owBj MS4w+/=%20?x=1&y=2 \t';
    expect((await scanQr(h, conn, raw)).data).toBe(raw);
  });

  it.each([
    ['CR LF', '\r\n'],
    ['LF', '\n'],
    ['CR', '\r'],
  ])('§4.3 qr_scanned strips a trailing scanner terminator (%s) and nothing else', async (_name, terminator) => {
    h = await startHarness();
    const conn = await armed(h);
    expect((await scanQr(h, conn, `${QR_TEXT} ${terminator}`)).data).toBe(`${QR_TEXT} `);
  });

  it('§4.3 qr_scanned strips only one trailing terminator; a second one is part of the text', async () => {
    h = await startHarness();
    const conn = await armed(h);
    expect((await scanQr(h, conn, `${QR_TEXT}\n\r\n`)).data).toBe(`${QR_TEXT}\n`);
  });
});

describe('§3 rule 1: the first follow-up event fixes the transport', () => {
  it('§3 rule 1: after a QR scan, a tap is ignored for that verification and the phone left on the reader does not start another', async () => {
    h = await startHarness();
    const conn = await armed(h);
    await scanQr(h, conn);
    // The holder also puts the phone on the reader while the QR verification runs.
    h.nfc.tap(() => u8(0x90, 0x00));
    const link = await connectCentral(h, conn); // would fail on an nfc_card_present in between
    conn.stepRequest('ble_write', { char: CENTRAL_CHARS.c2s, data: b64([1, 2, 3]) });
    endTransfer(conn, CENTRAL_CHARS.state);
    const report = await h.nextReport();
    expect(report.result).toBe('complete');
    expect(report.transport).toBe('qr');
    expect(link.writes).toHaveLength(2);
    expect(h.nfc.apduCount).toBe(0);

    // The phone still lying on the reader is not a new tap for the next customer.
    const from = mark(h);
    const next = await armed(h, from);
    await next.expectSilence(300);
    expect(h.views.slice(from).some((v) => v.transport === 'nfc')).toBe(false);
    // Lifted and tapped again, it is.
    h.nfc.lift();
    h.nfc.tap(() => u8(0x90, 0x00));
    expect(await next.expect('nfc_card_present')).toEqual({ type: 'step_result', op: 'nfc_card_present', status: 'ok' });
  });
});

describe('§3 rule 2: a client with a camera and a reader waits for both after engage', () => {
  it('§3 rule 2: with both devices, a QR scan and an NFC tap each start a verification on the engaged session', async () => {
    h = await startHarness();
    // First customer: QR.
    const first = await armed(h);
    await completeQrVerification(h, first);
    // Second customer: NFC, no mode switch in between.
    const from = mark(h);
    const second = await armed(h, from);
    h.nfc.tap(() => u8(0x90, 0x00));
    await second.expect('nfc_card_present');
    second.stepRequest('nfc_apdu', { data: b64([0x00, 0xa4, 0x04, 0x00]) });
    expect(await second.expect('nfc_rapdu')).toMatchObject({ status: 'ok', data: b64([0x90, 0x00]) });
    second.stepRequest('ble_exchange', { modes: [centralMode()] });
    await second.expect('ble_connected');
    endTransfer(second, CENTRAL_CHARS.state);
    const report = await h.nextReport();
    expect(report.transport).toBe('nfc');
    expect(report.result).toBe('complete');
  });

  it('§3 rule 2: the kiosk is ready for both at once (QR waits while a reader is idle, a tap works without a scan)', async () => {
    h = await startHarness();
    const conn = await armed(h);
    const ready = h.views.find((v) => v.phase === 'ready');
    expect(ready?.prompt).toBe('tap_or_scan');
    expect(ready?.devices.nfc.usable && ready.devices.qr.usable).toBe(true);
    h.nfc.tap(() => u8(0x90, 0x00));
    await conn.expect('nfc_card_present');
  });
});
