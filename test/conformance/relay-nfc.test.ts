/**
 * Relay conformance, NFC flow: spec §3 (NFC rows, rule 1 from the NFC side), §4.3 (`nfc_card_present`,
 * `nfc_rapdu`), §4.4 (`nfc_apdu`, `nfc_await_card`) and §7.3 (PC/SC error classification).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { FakeConnection } from '../support/fake-backend.js';
import { NfcTransmitError, type ApduResponder, type FakeCard } from '../support/fake-devices.js';
import { startHarness, type Harness } from '../support/harness.js';
import {
  CENTRAL_CHARS,
  OUTCOME,
  QR_TEXT,
  armed,
  arr,
  at,
  b64,
  centralMode,
  endTransfer,
  expectFailure,
  expectRecoveryOnSameSession,
  mark,
  u8,
  viewAfter,
} from '../support/relay-fixtures.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

const SELECT = [0x00, 0xa4, 0x04, 0x00, 0x07, 0xd2, 0x76, 0x00, 0x00, 0x85, 0x01, 0x01, 0x00];
const READ_BINARY = [0x00, 0xb0, 0x00, 0x00, 0x00];
const OK = [0x90, 0x00];

const answersOk: ApduResponder = () => u8(...OK);

/** Taps a phone on an armed session and checks the `nfc_card_present` that follows. */
async function tap(h: Harness, conn: FakeConnection, responder: ApduResponder = answersOk): Promise<FakeCard> {
  const cardsBefore = h.nfc.cards.length;
  h.nfc.tap(responder);
  expect(await conn.expect('nfc_card_present')).toEqual({ type: 'step_result', op: 'nfc_card_present', status: 'ok' });
  expect(h.nfc.cards).toHaveLength(cardsBefore + 1);
  return at(h.nfc.cards, cardsBefore);
}

/** Sends an `nfc_apdu` and returns the kiosk's `nfc_rapdu`. */
async function apdu(conn: FakeConnection, command: number[]): Promise<Record<string, unknown>> {
  conn.stepRequest('nfc_apdu', { data: b64(command) });
  return conn.expect('nfc_rapdu');
}

describe('§3 Any phase, complete: honoured the same whenever it arrives during the NFC handover', () => {
  it.each([
    ['while an APDU is in flight (before its nfc_rapdu)', true],
    ['a moment after the nfc_rapdu', false],
  ])('complete %s → the outcome stands (verified), no violation', async (_when, inFlight) => {
    h = await startHarness();
    const conn = await armed(h);
    let answer: (() => void) | undefined;
    await tap(h, conn, () => new Promise((resolve) => (answer = () => resolve(u8(...OK)))));
    conn.stepRequest('nfc_apdu', { data: b64(SELECT) });
    await vi.waitFor(() => expect(answer).toBeDefined()); // the card has the command
    if (inFlight) {
      conn.send({ type: 'complete', outcome: OUTCOME });
      await new Promise((r) => setTimeout(r, 50)); // the complete is queued before the card answers
      answer?.();
    } else {
      answer?.();
      await conn.expect('nfc_rapdu');
      conn.send({ type: 'complete', outcome: OUTCOME });
    }
    const report = await h.nextReport();
    expect(report.result).toBe('complete');
    expect(report.outcome?.verdict).toBe('verified');
    expect((await conn.closed).code).toBe(1000);
  });
});

describe('§3 NFC rows', () => {
  it('§3 Engaged → NFC handover: the first nfc_card_present is answered by nfc_apdu, which reaches the card', async () => {
    h = await startHarness();
    const conn = await armed(h);
    const from = mark(h);
    const card = await tap(h, conn);
    await viewAfter(h, from, (v) => v.phase === 'engaging' && v.transport === 'nfc');
    expect(await apdu(conn, SELECT)).toEqual({ type: 'step_result', op: 'nfc_rapdu', status: 'ok', data: b64(OK) });
    expect(card.commands.map(arr)).toEqual([SELECT]);
  });

  it('§3 NFC handover, nfc_rapdu ok, more APDUs → next nfc_apdu: every APDU is relayed in order, one reply each', async () => {
    h = await startHarness();
    const conn = await armed(h);
    const card = await tap(h, conn, (_command, index) => u8(index, 0x90, 0x00));
    const commands = Array.from({ length: 12 }, (_, i) => [0x00, 0xb0, 0x00, i, 0x10]);
    for (const [i, command] of commands.entries()) {
      expect(await apdu(conn, command)).toEqual({ type: 'step_result', op: 'nfc_rapdu', status: 'ok', data: b64([i, 0x90, 0x00]) });
    }
    expect(card.commands.map(arr)).toEqual(commands);
    await conn.expectSilence(100);
  });

  it('§3 NFC handover, nfc_rapdu ok, handover finished → ble_exchange: the kiosk moves to BLE and completes', async () => {
    h = await startHarness();
    const conn = await armed(h);
    await tap(h, conn);
    await apdu(conn, SELECT);
    await apdu(conn, READ_BINARY);
    const from = mark(h);
    conn.stepRequest('ble_exchange', { modes: [centralMode()] });
    expect(await conn.expect('ble_connected')).toMatchObject({ status: 'ok', role: 'central' });
    await viewAfter(h, from, (v) => v.phase === 'transferring' && v.transport === 'nfc');
    endTransfer(conn, CENTRAL_CHARS.state);
    const report = await h.nextReport();
    expect(report.result).toBe('complete');
    expect(report.apdus).toBe(2);
    expect((await conn.closed).code).toBe(1000);
  });

  it('§3 NFC handover, nfc_rapdu error with a recoverable reason → Awaiting card: nfc_await_card prompts a re-tap', async () => {
    h = await startHarness();
    const conn = await armed(h);
    await tap(h, conn, (_c, index) => (index === 1 ? new NfcTransmitError('RemovedCard') : u8(...OK)));
    await apdu(conn, SELECT);
    expect(await apdu(conn, READ_BINARY)).toEqual({ type: 'step_result', op: 'nfc_rapdu', status: 'error', reason: 'RemovedCard' });
    const from = mark(h);
    conn.stepRequest('nfc_await_card', {});
    const view = await viewAfter(h, from, (v) => v.phase === 'awaiting_card');
    expect(view.prompt).toBe('tap_again');
    // Nothing is sent while the kiosk waits for the card.
    await conn.expectSilence(150);
  });

  it('§3 Awaiting card, nfc_card_present → NFC handover: the re-tapped phone gets a fresh handle and the resent APDU', async () => {
    h = await startHarness();
    const conn = await armed(h);
    const first = await tap(h, conn, (_c, index) => {
      if (index === 1) {
        h?.nfc.lift(); // the wallet picker drops the field mid-exchange
        return new NfcTransmitError('NotTransacted');
      }
      return u8(...OK);
    });
    await apdu(conn, SELECT);
    expect(await apdu(conn, READ_BINARY)).toMatchObject({ status: 'error', reason: 'NotTransacted' });
    const from = mark(h);
    conn.stepRequest('nfc_await_card', {});
    await viewAfter(h, from, (v) => v.phase === 'awaiting_card');
    const second = await tap(h, conn, () => u8(0xca, 0xfe, ...OK));
    expect(second.handle).not.toBe(first.handle);
    expect(second.presence).not.toBe(first.presence);
    expect(first.released).toBe(true);
    // The backend resends the APDU that failed; it goes to the new card.
    expect(await apdu(conn, READ_BINARY)).toEqual({ type: 'step_result', op: 'nfc_rapdu', status: 'ok', data: b64([0xca, 0xfe, ...OK]) });
    expect(second.commands.map(arr)).toEqual([READ_BINARY]);
    expect(first.commands.map(arr)).toEqual([SELECT, READ_BINARY]);
    await viewAfter(h, from, (v) => v.phase === 'engaging' && v.prompt === 'hold_still');
    conn.stepRequest('ble_exchange', { modes: [centralMode()] });
    await conn.expect('ble_connected');
    endTransfer(conn, CENTRAL_CHARS.state);
    expect((await h.nextReport()).result).toBe('complete');
  });

  it('§3 NFC handover, nfc_rapdu error with a fatal reason → error: socket closed, error view, retry on the same session', async () => {
    h = await startHarness();
    const conn = await armed(h);
    await tap(h, conn, () => new NfcTransmitError('SharingViolation'));
    expect(await apdu(conn, SELECT)).toEqual({ type: 'step_result', op: 'nfc_rapdu', status: 'error', reason: 'SharingViolation' });
    // The backend classifies (spec §7.3): the kiosk does not end the attempt on its own.
    await conn.expectSilence(150);
    expect(conn.isClosed).toBe(false);
    conn.send({ type: 'error', message: 'fatal PC/SC error' });
    await expectFailure(h, conn, { result: 'backend_error', code: 'backend_error', closeCode: 1000 });
    h.nfc.lift();
    await expectRecoveryOnSameSession(h, conn);
  });
});

describe('a hostile card: R-APDUs of absurd length (issue 12)', () => {
  it('an R-APDU longer than 65,538 bytes (ISO/IEC 7816-4 extended length) is never forwarded: nfc_rapdu error InsufficientBuffer, then back to ready', async () => {
    h = await startHarness();
    const conn = await armed(h);
    // A port that breaks its contract (the PC/SC adapter refuses this itself): the core does not trust it.
    await tap(h, conn, () => new Uint8Array(65_539).fill(0x90));
    expect(await apdu(conn, READ_BINARY)).toEqual({ type: 'step_result', op: 'nfc_rapdu', status: 'error', reason: 'InsufficientBuffer' });
    // The backend classifies InsufficientBuffer as fatal (spec §7.3).
    conn.send({ type: 'error', message: 'fatal PC/SC error' });
    await expectFailure(h, conn, { result: 'backend_error', code: 'backend_error', closeCode: 1000 });
    h.nfc.lift();
    await expectRecoveryOnSameSession(h, conn);
  });

  it('the longest R-APDU there is (65,536 data bytes + SW1 SW2) goes through whole', async () => {
    h = await startHarness();
    const conn = await armed(h);
    const response = new Uint8Array(65_538).fill(0x5a);
    response.set(OK, 65_536);
    await tap(h, conn, () => response);
    expect(await apdu(conn, READ_BINARY)).toEqual({
      type: 'step_result',
      op: 'nfc_rapdu',
      status: 'ok',
      data: Buffer.from(response).toString('base64'),
    });
  });
});

describe('§4.3 nfc_card_present / nfc_rapdu', () => {
  it('§4.3 nfc_card_present is sent once right after the card is connected, with exactly type, op and status ok', async () => {
    h = await startHarness();
    const conn = await armed(h);
    await tap(h, conn);
    // Once: no second nfc_card_present for the same presence.
    await conn.expectSilence(200);
    expect(h.nfc.cards).toHaveLength(1);
  });

  it('§4.3 nfc_rapdu ok carries the whole response APDU (data and SW1 SW2) as standard padded base64', async () => {
    h = await startHarness();
    const conn = await armed(h);
    const response = Array.from({ length: 257 }, (_, i) => (i * 7 + 0xfb) & 0xff).concat(OK);
    await tap(h, conn, () => Uint8Array.from(response));
    const reply = await apdu(conn, READ_BINARY);
    expect(reply).toEqual({ type: 'step_result', op: 'nfc_rapdu', status: 'ok', data: Buffer.from(response).toString('base64') });
    expect(reply.data).toMatch(/^[A-Za-z0-9+/]*={0,2}$/);
  });

  it.each(['RemovedCard', 'NotTransacted', 'SharingViolation', 'SomeFutureVariant'])(
    '§4.3 nfc_rapdu error forwards the PC/SC reason %s verbatim, with exactly type, op, status error and reason',
    async (reason) => {
      h = await startHarness();
      const conn = await armed(h);
      await tap(h, conn, () => new NfcTransmitError(reason, `transmit failed: ${reason}`));
      expect(await apdu(conn, SELECT)).toEqual({ type: 'step_result', op: 'nfc_rapdu', status: 'error', reason });
    },
  );

  it('§4.3 nfc_card_present is sent again after each nfc_await_card, each time with a fresh handle', async () => {
    h = await startHarness();
    const conn = await armed(h);
    const cards = [await tap(h, conn, () => new NfcTransmitError('RemovedCard'))];
    for (let round = 0; round < 2; round++) {
      expect(await apdu(conn, SELECT)).toMatchObject({ status: 'error', reason: 'RemovedCard' });
      conn.stepRequest('nfc_await_card', {});
      h.nfc.lift();
      cards.push(await tap(h, conn, round === 0 ? () => new NfcTransmitError('RemovedCard') : answersOk));
    }
    expect(await apdu(conn, SELECT)).toMatchObject({ status: 'ok' });
    expect(new Set(cards.map((c) => c.handle)).size).toBe(3);
    expect(cards.slice(0, 2).every((c) => c.released)).toBe(true);
  });
});

describe('§4.4 nfc_apdu / nfc_await_card', () => {
  it('§4.4 nfc_apdu: the base64 command is decoded and transmitted byte for byte (all byte values)', async () => {
    h = await startHarness();
    const conn = await armed(h);
    const card = await tap(h, conn);
    const command = Array.from({ length: 256 }, (_, i) => 255 - i);
    expect(await apdu(conn, command)).toMatchObject({ status: 'ok' });
    expect(card.commands.map(arr)).toEqual([command]);
  });

  it('§4.4 nfc_await_card: the kiosk waits for the phone to leave and a NEW presence; a phone left on the reader is not re-used', async () => {
    h = await startHarness();
    const conn = await armed(h);
    const first = await tap(h, conn, (_c, index) => (index === 0 ? new NfcTransmitError('CommError') : u8(...OK)));
    expect(await apdu(conn, SELECT)).toMatchObject({ status: 'error', reason: 'CommError' });
    const from = mark(h);
    conn.stepRequest('nfc_await_card', {});
    await viewAfter(h, from, (v) => v.phase === 'awaiting_card');
    // The phone stays on the reader: no reconnect to the old presence, no nfc_card_present.
    await conn.expectSilence(300);
    expect(h.nfc.cards).toHaveLength(1);
    expect(first.released).toBe(true);
    h.nfc.lift();
    const second = await tap(h, conn);
    expect(second.handle).not.toBe(first.handle);
    expect(await apdu(conn, SELECT)).toMatchObject({ status: 'ok' });
    expect(second.commands.map(arr)).toEqual([SELECT]);
  });
});

describe('§7.3 PC/SC error classification (the backend classifies; the kiosk forwards verbatim)', () => {
  it.each(['RemovedCard', 'ResetCard', 'UnpoweredCard', 'UnresponsiveCard', 'NotTransacted', 'CommError'])(
    '§7.3 recoverable %s: forwarded verbatim, nfc_await_card → re-tap → nfc_card_present → the APDU is resent',
    async (reason) => {
      h = await startHarness();
      const conn = await armed(h);
      await tap(h, conn, (_c, index) => (index === 0 ? new NfcTransmitError(reason) : u8(...OK)));
      expect(await apdu(conn, SELECT)).toEqual({ type: 'step_result', op: 'nfc_rapdu', status: 'error', reason });
      const from = mark(h);
      conn.stepRequest('nfc_await_card', {});
      await viewAfter(h, from, (v) => v.phase === 'awaiting_card' && v.prompt === 'tap_again');
      h.nfc.lift();
      const card = await tap(h, conn);
      expect(await apdu(conn, SELECT)).toEqual({ type: 'step_result', op: 'nfc_rapdu', status: 'ok', data: b64(OK) });
      expect(card.commands.map(arr)).toEqual([SELECT]);
    },
  );

  it.each(['SharingViolation', 'InvalidHandle', 'NoSmartcard', 'Timeout'])(
    '§7.3 fatal %s: forwarded verbatim, the backend error ends the attempt (error view, socket closed 1000)',
    async (reason) => {
      h = await startHarness();
      const conn = await armed(h);
      await tap(h, conn, () => new NfcTransmitError(reason));
      expect(await apdu(conn, SELECT)).toEqual({ type: 'step_result', op: 'nfc_rapdu', status: 'error', reason });
      conn.send({ type: 'error', message: `fatal PC/SC error ${reason}` });
      await expectFailure(h, conn, { result: 'backend_error', code: 'backend_error', closeCode: 1000 });
      h.nfc.lift();
      await viewAfter(h, h.views.length, (v) => v.phase === 'ready');
    },
  );
});

describe('§3 rule 1 from the NFC side', () => {
  it('§3 rule 1: after nfc_card_present, a QR scan is ignored for that verification and not used afterwards', async () => {
    h = await startHarness();
    const conn = await armed(h);
    await tap(h, conn);
    h.qr.push(QR_TEXT); // shown while the NFC verification runs
    expect(await apdu(conn, SELECT)).toMatchObject({ status: 'ok' }); // would fail on a qr_scanned in between
    conn.stepRequest('ble_exchange', { modes: [centralMode()] });
    await conn.expect('ble_connected');
    endTransfer(conn, CENTRAL_CHARS.state);
    const report = await h.nextReport();
    expect(report.result).toBe('complete');
    expect(report.transport).toBe('nfc');
    h.nfc.lift();
    // The scan made during the NFC verification does not start the next one.
    const from = mark(h);
    const next = await armed(h, from);
    await next.expectSilence(300);
    h.qr.push(`${QR_TEXT}2`);
    expect((await next.expect('qr_scanned')).data).toBe(`${QR_TEXT}2`);
  });
});
