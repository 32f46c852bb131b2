/**
 * What starts a verification: a tap or a QR scan, waited for at once (the backend contract lets a client
 * with a camera and a reader wait for both; docs/protocol.md). The first fixes the transport; input from the
 * other is ignored until the verification ends.
 *
 * QR rules: only a scanner's trailing CR/LF is removed (`qr_scanned` carries the text unmodified,
 * docs/protocol.md); codes that are not `mdoc:` device engagements are ignored (configurable, the rule is
 * engagement-text.ts's `failsMdocPrefixRule`); a device engagement is single-use, and a camera keeps decoding
 * a code as long as it is held up, so an engagement whose verification finished is never used again, and
 * one whose attempt failed is ignored for a cool-down (the error screen's time) before it may be retried.
 */
import { MAX_QR_TEXT } from '../common/kiosk-api.js';
import type { NfcCard, QrInput, NfcReader } from '../devices/ports.js';
import { AbortedError, sleep } from './async-tools.js';
import { failsMdocPrefixRule } from './engagement-text.js';
import type { Logger } from '../platform/log.js';
import type { Trigger } from './verification/results.js';

const QR_MEMORY = 16;
/** Pause before asking a failing device port again. */
const DEVICE_RETRY_MS = 1_000;

/** A scanner terminates its text with CR, LF or CR LF; that and nothing else is removed (docs/protocol.md, `qr_scanned`). */
export function stripScannerTerminator(text: string): string {
  return text.replace(/(?:\r\n|\r|\n)$/, '');
}

export interface TriggerSourceOptions {
  readonly nfc: NfcReader | undefined;
  readonly qr: QrInput | undefined;
  readonly requireMdocPrefix: boolean;
  readonly log: Logger;
  readonly now: () => number;
}

export class TriggerSource {
  private readonly usedQr: string[] = [];
  private readonly failedQr = new Map<string, number>();
  /** A trigger that arrived while nobody was waiting any more (e.g. as a screen timed out). */
  private stashed: Trigger | undefined;

  constructor(private readonly options: TriggerSourceOptions) {}

  /** The next tap or scan; the first of the two wins and the other wait is abandoned. */
  async next(signal: AbortSignal): Promise<Trigger> {
    const stashed = this.stashed;
    if (stashed) {
      this.stashed = undefined;
      return stashed;
    }
    const { nfc, qr } = this.options;
    const waits: Promise<Trigger>[] = [];
    if (nfc) waits.push(this.nextCard(nfc, signal).then((card) => ({ kind: 'nfc', card }) as const));
    if (qr) waits.push(this.nextQr(qr, signal).then((text) => ({ kind: 'qr', text }) as const));
    if (waits.length === 0) {
      await new Promise((_, reject) => signal.addEventListener('abort', () => reject(new AbortedError('stopped')), { once: true }));
    }
    const winner = await Promise.race(waits);
    for (const wait of waits) {
      // A card connected by the losing wait counts as handed out: it is released and ignored (the transport is fixed).
      wait.then(
        (t) => {
          if (t !== winner && t.kind === 'nfc') void t.card.release();
        },
        () => undefined,
      );
    }
    return winner;
  }

  /** Keeps a trigger that arrived after its waiter gave up, for the next `next()`. */
  stash(trigger: Trigger): void {
    if (this.stashed) {
      if (trigger.kind === 'nfc') void trigger.card.release();
      return;
    }
    this.stashed = trigger;
  }

  /** Ignores what was shown or tapped while a verification ran (the transport is fixed). */
  ignoreInputDuringRun(): void {
    this.options.qr?.discardPending();
    this.options.nfc?.ignoreCurrentCard();
  }

  /** The verification of this engagement finished (with an outcome): never use it again. */
  qrUsed(text: string): void {
    this.failedQr.delete(text);
    this.usedQr.push(text);
    if (this.usedQr.length > QR_MEMORY) this.usedQr.shift();
  }

  /** The attempt failed: the same code is ignored for `coolDownMs`, then may be tried again. */
  qrFailed(text: string, coolDownMs: number): void {
    this.failedQr.set(text, this.options.now() + coolDownMs);
    if (this.failedQr.size > QR_MEMORY) {
      const oldest = this.failedQr.keys().next().value;
      if (oldest !== undefined) this.failedQr.delete(oldest);
    }
  }

  private async nextCard(nfc: NfcReader, signal: AbortSignal): Promise<NfcCard> {
    for (;;) {
      try {
        return await nfc.nextCard(signal);
      } catch (e) {
        if (signal.aborted) throw e;
        this.options.log.warn(
          { event: 'nfc_reader_error', detail: e instanceof Error ? e.message : 'unknown' },
          'NFC reader failed; retrying',
        );
        await sleep(DEVICE_RETRY_MS, signal);
      }
    }
  }

  private async nextQr(qr: QrInput, signal: AbortSignal): Promise<string> {
    const { log } = this.options;
    for (;;) {
      let raw: string;
      try {
        raw = await qr.nextScan(signal);
      } catch (e) {
        if (signal.aborted) throw e;
        log.warn({ event: 'qr_input_error', detail: e instanceof Error ? e.message : 'unknown' }, 'QR input failed; retrying');
        await sleep(DEVICE_RETRY_MS, signal);
        continue;
      }
      const text = stripScannerTerminator(raw);
      if (text === '') continue;
      if (text.length > MAX_QR_TEXT) {
        // Larger than any QR code can hold: not a scan but a fault or an attack. Neither sent nor logged.
        log.info({ event: 'qr_ignored', reason: 'too_long', length: text.length }, `scanned text longer than ${MAX_QR_TEXT} characters`);
        continue;
      }
      if (failsMdocPrefixRule(text, this.options.requireMdocPrefix)) {
        // Not a device engagement (some other barcode): not worth a session. Its content is not logged.
        log.info({ event: 'qr_ignored', length: text.length }, 'scanned code is not an mdoc: engagement');
        continue;
      }
      if (this.usedQr.includes(text)) {
        log.debug({ event: 'qr_repeat_ignored' }, 'QR engagement already used');
        continue;
      }
      const coolDownUntil = this.failedQr.get(text);
      if (coolDownUntil !== undefined && this.options.now() < coolDownUntil) {
        log.debug({ event: 'qr_retry_too_soon' }, 'QR engagement failed moments ago');
        continue;
      }
      return text;
    }
  }
}
