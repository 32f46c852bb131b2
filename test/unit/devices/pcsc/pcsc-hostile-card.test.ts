/**
 * A hostile or broken card (phone) at the PC/SC adapter boundary, through the scripted binding double
 * (test/support/fake-pcsclite.ts): R-APDUs of any length, a card that never answers, and reader names of
 * odd shape. Each is bounded, reported as a PC/SC variant the backend understands (docs/protocol.md §7.3),
 * and the reader serves the next card afterwards.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import {
  PcscNfcReader,
  RECEIVE_BUFFER_BYTES,
  type PcscLog,
  type PcscNfcReaderOptions,
} from '../../../../src/devices/pcsc/pcsc-nfc-reader.js';
import { NfcTransmitError, type NfcCard } from '../../../../src/devices/ports.js';
import { availabilityWhen } from '../../../support/availability-wait.js';
import { echoCard, FakePcscService } from '../../../support/fake-pcsclite.js';

const SELECT = Uint8Array.from([0x00, 0xa4, 0x04, 0x00, 0x07, 0xd2, 0x76, 0x00, 0x00, 0x85, 0x01, 0x01, 0x00]);
const opened: PcscNfcReader[] = [];

afterEach(async () => {
  for (const reader of opened.splice(0)) await reader.close();
});

function open(service: FakePcscService, options: PcscNfcReaderOptions = {}): PcscNfcReader {
  const reader = new PcscNfcReader({
    binding: service.factory,
    serviceRetryMinMs: 5,
    serviceRetryMaxMs: 40,
    disconnectTimeoutMs: 200,
    connectTimeoutMs: 500,
    ...options,
  });
  opened.push(reader);
  return reader;
}

const signal = (): AbortSignal => AbortSignal.timeout(3_000);
const tx = (ms = 1_000): { timeoutMs: number; signal: AbortSignal } => ({ timeoutMs: ms, signal: AbortSignal.timeout(5_000) });

async function outcome(card: NfcCard, ms = 1_000): Promise<Uint8Array | NfcTransmitError> {
  return card.transmit(SELECT, tx(ms)).catch((e: unknown) => {
    if (e instanceof NfcTransmitError) return e;
    throw e;
  });
}

/** Puts a card answering with `response` on the reader and hands it out. */
async function present(service: FakePcscService, reader: PcscNfcReader, response: () => Buffer | 'mute'): Promise<NfcCard> {
  service.slot().insert(() => response());
  return reader.nextCard(signal());
}

async function lift(service: FakePcscService, card: NfcCard): Promise<void> {
  service.slot().remove();
  await card.waitForRemoval(signal());
  await card.release();
}

describe('R-APDU length', () => {
  it('ISO 7816-4 extended length bounds a response at 65,536 data bytes + SW1 SW2: longer is refused as InsufficientBuffer, shorter than SW1 SW2 as UnresponsiveCard, anything else passes intact (property)', async () => {
    const service = new FakePcscService();
    const reader = open(service);
    await availabilityWhen(reader, (a) => a.usable, 2_000);
    const lengths = fc.oneof(
      fc.integer({ min: 0, max: 300 }),
      fc.integer({ min: RECEIVE_BUFFER_BYTES - 4, max: RECEIVE_BUFFER_BYTES + 4 }),
      fc.integer({ min: 0, max: 4 * 1024 * 1024 }),
    );
    await fc.assert(
      fc.asyncProperty(lengths, async (length) => {
        const response = Buffer.alloc(length, 0x5a);
        if (length >= 2) response.set([0x90, 0x00], length - 2);
        const card = await present(service, reader, () => response);
        try {
          const got = await outcome(card);
          if (length > RECEIVE_BUFFER_BYTES) {
            expect(got).toBeInstanceOf(NfcTransmitError);
            expect(got).toMatchObject({ reason: 'InsufficientBuffer' });
            expect((got as NfcTransmitError).message).toBe(
              `the card answered ${length} bytes; an R-APDU is at most ${RECEIVE_BUFFER_BYTES} (65,536 data bytes + SW1 SW2, ISO/IEC 7816-4 extended length)`,
            );
          } else if (length < 2) {
            expect(got).toMatchObject({ reason: 'UnresponsiveCard' });
          } else {
            expect(got).toBeInstanceOf(Uint8Array);
            expect(Buffer.from(got as Uint8Array).equals(response)).toBe(true);
          }
        } finally {
          await lift(service, card); // the next run presents a new card, failed or not
        }
      }),
      { numRuns: 40 },
    );
    // Back to ready: the next card on the reader is served as usual.
    const card = await present(service, reader, () => echoCard(Buffer.from(SELECT)) as Buffer);
    expect(Array.from((await outcome(card)) as Uint8Array)).toEqual([0x00, 0x90, 0x00]);
  });
});

describe('a card that answers slowly forever', () => {
  it('each exchange ends as Timeout at its own bound, before the card’s late answer, which reaches nobody; the next card is served', async () => {
    const service = new FakePcscService();
    const reader = open(service);
    await availabilityWhen(reader, (a) => a.usable, 2_000);
    const card = await present(service, reader, () => 'mute');
    const timeline: string[] = [];
    const first = outcome(card, 30).then((got) => {
      timeline.push(got instanceof NfcTransmitError ? `transmit ${got.reason}` : 'transmit answered');
      return got;
    });
    expect(await first).toMatchObject({ reason: 'Timeout', message: 'the card did not answer within 30 ms' });
    // Now the card answers, far too late: the adapter hands it to nobody.
    for (const answer of [...service.slot().pendingTransmits]) {
      service.slot().pendingTransmits.delete(answer);
      timeline.push('card answered');
      answer(undefined, Buffer.from([0x90, 0x00]));
    }
    expect(timeline).toEqual(['transmit Timeout', 'card answered']);
    // The handle is not trusted again; the phone is lifted and the next one works.
    expect(await outcome(card, 30)).toMatchObject({ reason: 'InvalidHandle' });
    await lift(service, card);
    const next = await present(service, reader, () => Buffer.from([0x01, 0x90, 0x00]));
    expect(Array.from((await outcome(next)) as Uint8Array)).toEqual([0x01, 0x90, 0x00]);
  });
});

/** Records the adapter's log lines. */
class LogRecorder implements PcscLog {
  readonly lines: { fields: Record<string, unknown>; message: string }[] = [];
  debug(fields: object, message: string): void {
    this.lines.push({ fields: fields as Record<string, unknown>, message });
  }
  info(fields: object, message: string): void {
    this.lines.push({ fields: fields as Record<string, unknown>, message });
  }
  warn(fields: object, message: string): void {
    this.lines.push({ fields: fields as Record<string, unknown>, message });
  }
}

// eslint-disable-next-line no-control-regex -- the point: no control or bidi character may survive
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

describe('reader names of odd shape (control characters, bidi overrides, U+FFFD from non-UTF-8 bytes, huge lengths)', () => {
  const oddName = fc.oneof(
    fc.string({ unit: 'binary', minLength: 1, maxLength: 300 }),
    fc.string({
      unit: fc.constantFrom('\u001b', '[', '3', '1', 'm', '\n', '\r', '\u202e', '\u2066', '\ufffd', '\u0000', 'R', ' ', 'PICC'),
      minLength: 1,
      maxLength: 200,
    }),
    fc.integer({ min: 129, max: 100_000 }).map((n) => `PICC ${'\u001b[2J'.repeat(n).slice(0, n)}`),
  );

  it('every name the adapter logs or shows (availability, readerName, readerNames) is escaped and at most 128 characters (property)', async () => {
    await fc.assert(
      fc.asyncProperty(oddName, async (name) => {
        const log = new LogRecorder();
        const service = new FakePcscService([name]);
        const reader = open(service, { log });
        try {
          await availabilityWhen(reader, (a) => a.usable || a.reason === 'no_reader', 2_000);
          // let the reader announcement and its logging happen
          await new Promise((resolve) => setTimeout(resolve, 5));
          const shown = [
            ...log.lines.flatMap((l) => [l.message, ...Object.values(l.fields).filter((v): v is string => typeof v === 'string')]),
            reader.availability().detail ?? '',
            reader.readerName ?? '',
            ...reader.readerNames,
          ];
          for (const text of shown) expect(text).not.toMatch(UNSAFE);
          for (const label of [reader.readerName ?? '', ...reader.readerNames]) expect(label.length).toBeLessThanOrEqual(129 * 6);
          const readerFields = log.lines.map((l) => l.fields.reader).filter((v): v is string => typeof v === 'string');
          expect(readerFields.length).toBeGreaterThan(0);
          for (const field of readerFields) expect(Array.from(field.replace(/\\u[0-9a-f]{4}/g, 'x')).length).toBeLessThanOrEqual(129);
        } finally {
          await reader.close();
        }
      }),
      { numRuns: 60 },
    );
  });

  it('a reader whose name is longer than any PC/SC reader name is not used; it is reported with a cut, escaped name', async () => {
    const log = new LogRecorder();
    const huge = `Evil PICC ${'\u001b[31m'.repeat(200_000)}`;
    const service = new FakePcscService([huge]);
    const reader = open(service, { log });
    const availability = await availabilityWhen(reader, (a) => a.reason === 'no_reader', 2_000);
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(availability.usable).toBe(false);
    expect(reader.readerName).toBeUndefined();
    const ignored = log.lines.find((l) => l.fields.event === 'pcsc_reader_ignored');
    expect(ignored?.fields).toMatchObject({ nameLength: huge.length });
    expect(String(ignored?.fields.reader)).toMatch(/^Evil PICC (\\u001b\[31m)+/);
    expect(String(ignored?.fields.reader).length).toBeLessThan(1_000);
  });

  it('an ordinary name is kept as it is', async () => {
    const service = new FakePcscService(['ACS ACR1252 1S CL Reader PICC 0']);
    const reader = open(service);
    await availabilityWhen(reader, (a) => a.usable, 2_000);
    expect(reader.readerName).toBe('ACS ACR1252 1S CL Reader PICC 0');
    expect(reader.availability().detail).toBe('reader ACS ACR1252 1S CL Reader PICC 0');
  });
});
