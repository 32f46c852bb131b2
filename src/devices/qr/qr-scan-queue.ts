/**
 * A `QrInput` fed by pushes: the renderer's camera decoder or a keyboard-wedge scanner hands each decoded
 * text to `push()`, the CLI pushes `--qr` values or stdin lines. Scans older than `freshMs` are dropped when
 * read, so a code shown while the kiosk was busy does not start a verification much later.
 */
import type { Availability, QrInput } from '../ports.js';

export class QrScanQueue implements QrInput {
  private readonly scans: { text: string; at: number }[] = [];
  private waiter: ((text: string) => void) | undefined;

  constructor(private readonly options: { freshMs: number; maxQueued?: number; now?: () => number } = { freshMs: 10_000 }) {}

  private now(): number {
    return this.options.now?.() ?? Date.now();
  }

  availability(): Availability {
    return { usable: true };
  }

  push(text: string): void {
    const waiter = this.waiter;
    if (waiter) {
      this.waiter = undefined;
      waiter(text);
      return;
    }
    this.scans.push({ text, at: this.now() });
    const max = this.options.maxQueued ?? 8;
    if (this.scans.length > max) this.scans.splice(0, this.scans.length - max);
  }

  discardPending(): void {
    this.scans.length = 0;
  }

  /** One consumer at a time (the kiosk's trigger wait); a second concurrent call is refused. */
  nextScan(signal: AbortSignal): Promise<string> {
    if (signal.aborted) return Promise.reject(new Error('aborted'));
    if (this.waiter) return Promise.reject(new Error('QrScanQueue: a consumer is already waiting'));
    const cutoff = this.now() - this.options.freshMs;
    while (this.scans.length > 0) {
      const scan = this.scans.shift();
      if (scan && scan.at >= cutoff) return Promise.resolve(scan.text);
    }
    return new Promise<string>((resolve, reject) => {
      const onAbort = (): void => {
        if (this.waiter === deliver) this.waiter = undefined;
        reject(new Error('aborted'));
      };
      const deliver = (text: string): void => {
        signal.removeEventListener('abort', onAbort);
        resolve(text);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiter = deliver;
    });
  }
}
