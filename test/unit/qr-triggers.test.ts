/**
 * QR input rules at the core (triggers.ts) and the headless feeder (scan-feeder.ts): a text longer than
 * any QR code can hold is never sent, and a scanner's line terminator is removed exactly once (spec §4.3),
 * however the scan arrived.
 */
import { describe, expect, it } from 'vitest';
import { MAX_QR_TEXT } from '../../src/common/kiosk-api.js';
import { QrScanQueue } from '../../src/devices/qr/qr-scan-queue.js';
import { silentLogger } from '../../src/platform/log.js';
import { TriggerSource } from '../../src/kiosk/triggers.js';
import { ScanFeeder } from '../../src/qa/wiring/scan-feeder.js';

function source(qr: QrScanQueue): TriggerSource {
  return new TriggerSource({ nfc: undefined, qr, requireMdocPrefix: true, log: silentLogger(), now: Date.now });
}

describe('QR text bounds and terminators', () => {
  it(`a scan longer than ${MAX_QR_TEXT} characters is ignored; the next real one is used`, async () => {
    const qr = new QrScanQueue({ freshMs: 60_000 });
    qr.push(`mdoc:${'A'.repeat(MAX_QR_TEXT)}`);
    qr.push(`mdoc:${'B'.repeat(MAX_QR_TEXT - 5)}`);
    const trigger = await source(qr).next(new AbortController().signal);
    expect(trigger).toEqual({ kind: 'qr', text: `mdoc:${'B'.repeat(MAX_QR_TEXT - 5)}` });
  });

  it('the feeder refuses an over-long scan up front', () => {
    const feeder = new ScanFeeder(new QrScanQueue({ freshMs: 60_000 }), true);
    expect(feeder.add(`mdoc:${'A'.repeat(MAX_QR_TEXT)}`)).toMatch(/longer than 8192 characters/);
    expect(feeder.queued).toBe(0);
  });

  it('a scan through the feeder loses exactly one terminator, as one straight from a scanner does', async () => {
    const viaFeeder = new QrScanQueue({ freshMs: 60_000 });
    const feeder = new ScanFeeder(viaFeeder, true);
    expect(feeder.add('mdoc:owBjMS4w\r\n\r\n')).toBeUndefined();
    feeder.kioskReady();
    const direct = new QrScanQueue({ freshMs: 60_000 });
    direct.push('mdoc:owBjMS4w\r\n\r\n');
    const signal = new AbortController().signal;
    const fed = await source(viaFeeder).next(signal);
    const scanned = await source(direct).next(signal);
    expect(fed).toEqual({ kind: 'qr', text: 'mdoc:owBjMS4w\r\n' });
    expect(fed).toEqual(scanned);
  });
});
