/**
 * Feeds scanned QR texts to the kiosk one at a time, each when the kiosk can take it (a scan shown while
 * a verification runs would be ignored, as at a real counter). Texts the kiosk would ignore — not an
 * `mdoc:` engagement, or one already given — are refused here, so a headless run cannot wait for a
 * verification that will never start.
 */
import { MAX_QR_TEXT } from '../../common/kiosk-api.js';
import type { QrScanQueue } from '../../devices/qr/qr-scan-queue.js';
import { failsMdocPrefixRule } from '../../kiosk/engagement-text.js';
import { stripScannerTerminator } from '../../kiosk/triggers.js';

export class ScanFeeder {
  private readonly scans: string[] = [];
  private readonly seen = new Set<string>();
  private ready = false;
  private inFlight = false;
  private ended = false;

  constructor(
    private readonly qr: QrScanQueue,
    private readonly requireMdocPrefix: boolean,
  ) {}

  /** Queues a scan; returns why it was refused, or undefined. */
  add(raw: string): string | undefined {
    // Checked on the text the kiosk will use, but handed over as scanned: the kiosk strips the
    // terminator itself, and stripping here too removed a second one.
    const text = stripScannerTerminator(raw);
    if (text.trim() === '') return 'empty';
    if (text.length > MAX_QR_TEXT) return `longer than ${MAX_QR_TEXT} characters (no QR code holds that much)`;
    if (failsMdocPrefixRule(text, this.requireMdocPrefix)) return 'not an mdoc: device engagement';
    if (this.seen.has(text)) return 'the same engagement again (each QR engagement is single-use)';
    this.seen.add(text);
    this.scans.push(raw);
    this.present();
    return undefined;
  }

  get queued(): number {
    return this.scans.length;
  }

  /** No more scans will come. */
  end(): void {
    this.ended = true;
  }

  /** The kiosk can take a scan (it is ready, or the previous verification has ended). */
  kioskReady(): void {
    this.ready = true;
    this.present();
  }

  verificationEnded(): void {
    this.inFlight = false;
    this.kioskReady();
  }

  /** Input ended and every scan has been used. */
  get exhausted(): boolean {
    return this.ended && this.scans.length === 0 && !this.inFlight;
  }

  private present(): void {
    if (!this.ready || this.inFlight) return;
    const next = this.scans.shift();
    if (next === undefined) return;
    this.ready = false;
    this.inFlight = true;
    this.qr.push(next);
  }
}
