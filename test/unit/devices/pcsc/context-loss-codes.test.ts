/**
 * The PC/SC service going away is recognised by its SCARD code, not by the text next to it: Windows words its
 * errors in the system's language, and Windows, pcsc-lite and macOS each have their own ways to say the
 * service left (SCARD_E_NO_SERVICE, SCARD_E_SERVICE_STOPPED, SCARD_F_COMM_ERROR, …). An exchange in flight
 * when it happens fails with that code's variant, and only a code of the lost-context set does that.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { PcscNfcReader } from '../../../../src/devices/pcsc/pcsc-nfc-reader.js';
import { CONTEXT_LOST_CODES, scardVariant, Scard } from '../../../../src/devices/pcsc/scard-errors.js';
import type { NfcTransmitError } from '../../../../src/devices/ports.js';
import { availabilityWhen } from '../../../support/availability-wait.js';
import { FakePcscService, scardError } from '../../../support/fake-pcsclite.js';

const SELECT = Uint8Array.from([0x00, 0xa4, 0x04, 0x00, 0x07, 0xd2, 0x76, 0x00, 0x00, 0x85, 0x01, 0x01, 0x00]);
const opened: PcscNfcReader[] = [];

afterEach(async () => {
  for (const reader of opened.splice(0)) await reader.close();
});

/** The service goes with `code`, its readers and contexts reporting it in German (as a German Windows would). */
function loseWith(service: FakePcscService, code: number): void {
  const text = 'Der Smartcard-Ressourcen-Manager wird nicht ausgeführt. ';
  service.running = false;
  for (const context of [...service.contexts]) {
    context.closed = true;
    for (const reader of context.readers.values()) {
      reader.closed = true;
      reader.slot.readers.delete(reader);
      reader.emit('error', scardError('SCardGetStatusChange', text, code));
      reader.emit('end');
    }
    context.readers.clear();
    context.emit('error', scardError('SCardGetStatusChange', text, code));
  }
  service.contexts.clear();
}

async function exchangeWhenServiceGoes(code: number): Promise<string> {
  const service = new FakePcscService();
  const reader = new PcscNfcReader({
    binding: service.factory,
    serviceRetryMinMs: 5,
    serviceRetryMaxMs: 40,
    disconnectTimeoutMs: 200,
    connectTimeoutMs: 500,
  });
  opened.push(reader);
  await availabilityWhen(reader, (a) => a.usable, 2_000);
  service.slot().insert(() => 'mute');
  const card = await reader.nextCard(AbortSignal.timeout(3_000));
  const pending = card.transmit(SELECT, { timeoutMs: 5_000, signal: AbortSignal.timeout(5_000) }).then(
    () => 'answered',
    (e: unknown) => (e as NfcTransmitError).reason,
  );
  await new Promise((resolve) => setTimeout(resolve, 20));
  loseWith(service, code);
  return pending;
}

describe('PC/SC: a lost service by its code', () => {
  it('the lost-context set is the codes of a service that went away, by value', () => {
    const byValue = (a: number, b: number): number => a - b;
    expect([...CONTEXT_LOST_CODES].sort(byValue)).toEqual([0x80100003, 0x80100013, 0x80100018, 0x8010001d, 0x8010001e]);
  });

  it.each([...CONTEXT_LOST_CODES].map((code) => [`0x${code.toString(16)}`, code] as const))(
    '%s in a foreign language: the exchange in flight fails with that code’s variant',
    async (_hex, code) => {
      expect(await exchangeWhenServiceGoes(code)).toBe(scardVariant(code));
    },
  );

  it('another code on the same path is a reader that went away (ReaderUnavailable), not a lost service', async () => {
    expect(await exchangeWhenServiceGoes(Scard.REMOVED_CARD)).toBe('ReaderUnavailable');
  });
});
