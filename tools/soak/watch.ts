/**
 * The soak's view of the kiosk: the current view and a sequence number that grows with each, waits for a
 * phase or for "ready" (bounded), the next verification report, and phase changes for the trail. Nothing
 * is kept beyond the latest view and the report a run is waiting for.
 */
import { performance } from 'node:perf_hooks';
import type { KioskView } from '../../src/common/kiosk-view.js';
import type { Kiosk, VerificationReport } from '../../src/kiosk/kiosk.js';

/** Ready for the next customer: a session armed, and the reader and both BLE roles usable. */
export function isReady(view: KioskView): boolean {
  return view.phase === 'ready' && view.devices.nfc.usable && view.devices.bleCentral.usable && view.devices.blePeripheral.usable;
}

interface ViewWaiter {
  readonly test: (view: KioskView, seq: number) => boolean;
  readonly resolve: (at: number) => void;
}

export class KioskWatch {
  private view: KioskView;
  private seqValue = 0;
  private viewWaiters = new Set<ViewWaiter>();
  private reportWaiter: ((report: VerificationReport, at: number) => void) | undefined;
  /** The first view of the current unbroken run of ready views (undefined while not ready). */
  private readyStreak: { readonly seq: number; readonly at: number } | undefined;
  private readyWaiters = new Set<{ readonly afterSeq: number; readonly resolve: (at: number) => void }>();
  private readonly unsubscribe: (() => void)[] = [];
  /** Reports that arrived with no run waiting for one. */
  strayReports = 0;

  constructor(
    kiosk: Kiosk,
    private readonly onPhase: (view: KioskView) => void,
  ) {
    this.view = kiosk.currentView;
    if (isReady(this.view)) this.readyStreak = { seq: 0, at: performance.now() };
    this.unsubscribe.push(
      kiosk.onView((view) => {
        const previous = this.view;
        this.view = view;
        this.seqValue++;
        if (view.phase !== previous.phase) this.onPhase(view);
        const at = performance.now();
        if (!isReady(view)) this.readyStreak = undefined;
        else if (!this.readyStreak) {
          const streak = { seq: this.seqValue, at };
          this.readyStreak = streak;
          for (const waiter of [...this.readyWaiters]) {
            if (streak.seq <= waiter.afterSeq) continue;
            this.readyWaiters.delete(waiter);
            waiter.resolve(at);
          }
        }
        for (const waiter of [...this.viewWaiters]) {
          if (!waiter.test(view, this.seqValue)) continue;
          this.viewWaiters.delete(waiter);
          waiter.resolve(at);
        }
      }),
      kiosk.onVerification((report) => {
        const waiter = this.reportWaiter;
        this.reportWaiter = undefined;
        if (waiter) waiter(report, performance.now());
        else this.strayReports++;
      }),
    );
  }

  get current(): KioskView {
    return this.view;
  }

  /** Grows with every view; a wait "after" a value ignores the views up to it. */
  get seq(): number {
    return this.seqValue;
  }

  /**
   * Resolves with the time of the first view after `afterSeq` (or the current one, when it is already
   * past `afterSeq`) that passes `test`; rejects after `timeoutMs`, or at once when `signal` aborts.
   */
  viewWhere(test: (view: KioskView) => boolean, timeoutMs: number, afterSeq = -1, signal?: AbortSignal): Promise<number> {
    if (this.seqValue > afterSeq && test(this.view)) return Promise.resolve(performance.now());
    if (signal?.aborted) return Promise.reject(new Error('soak: wait abandoned'));
    return new Promise<number>((resolve, reject) => {
      const stop = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        this.viewWaiters.delete(waiter);
      };
      const waiter: ViewWaiter = {
        test: (view, seq) => seq > afterSeq && test(view),
        resolve: (at) => {
          stop();
          resolve(at);
        },
      };
      const onAbort = (): void => {
        stop();
        reject(new Error('soak: wait abandoned'));
      };
      const timer = setTimeout(() => {
        stop();
        reject(new Error(`kiosk not as expected within ${timeoutMs} ms (phase ${this.view.phase}, devices ${describeDevices(this.view)})`));
      }, timeoutMs);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.viewWaiters.add(waiter);
    });
  }

  /**
   * Resolves with the time the kiosk became ready — in a run of ready views that began after view
   * `afterSeq` (-1: the current run counts, however old) — so a wait started late still measures from
   * the moment it happened. Rejects after `timeoutMs`.
   */
  ready(timeoutMs: number, afterSeq = -1): Promise<number> {
    const streak = this.readyStreak;
    if (streak && streak.seq > afterSeq) return Promise.resolve(streak.at);
    return new Promise<number>((resolve, reject) => {
      const waiter = {
        afterSeq,
        resolve: (at: number) => {
          clearTimeout(timer);
          resolve(at);
        },
      };
      const timer = setTimeout(() => {
        this.readyWaiters.delete(waiter);
        reject(new Error(`kiosk not ready within ${timeoutMs} ms (phase ${this.view.phase}, devices ${describeDevices(this.view)})`));
      }, timeoutMs);
      this.readyWaiters.add(waiter);
    });
  }

  /** The next report, with the time it arrived; rejects after `timeoutMs`. */
  nextReport(timeoutMs: number): Promise<{ report: VerificationReport; at: number }> {
    if (this.reportWaiter) return Promise.reject(new Error('soak: already waiting for a report'));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.reportWaiter = undefined;
        reject(new Error(`no verification report within ${timeoutMs} ms (phase ${this.view.phase})`));
      }, timeoutMs);
      this.reportWaiter = (report, at) => {
        clearTimeout(timer);
        resolve({ report, at });
      };
    });
  }

  dispose(): void {
    for (const stop of this.unsubscribe.splice(0)) stop();
    this.viewWaiters.clear();
    this.readyWaiters.clear();
  }
}

export function describeDevices(view: KioskView): string {
  const d = view.devices;
  const one = (name: string, s: { usable: boolean; reason?: string }): string => `${name}:${s.usable ? 'ok' : (s.reason ?? 'no')}`;
  return [one('nfc', d.nfc), one('central', d.bleCentral), one('peripheral', d.blePeripheral)].join(' ');
}
