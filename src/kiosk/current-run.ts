/**
 * The verification running now, and who ended it: staff's cancel, the kiosk's stop, or the customer's own
 * cancel ("Cancel" on "Tap your phone again"), after which the kiosk goes back to waiting without an error.
 */
export class CurrentRun {
  private current: AbortController | undefined;
  /** The run the customer cancelled: it ends without an error screen. */
  private customerCancelled: AbortController | undefined;

  /** Runs `verification` as the current run; `stop` ends it too. */
  async run(stop: AbortSignal, verification: (signal: AbortSignal) => Promise<void>): Promise<void> {
    const run = new AbortController();
    this.current = run;
    const onStop = (): void => run.abort();
    stop.addEventListener('abort', onStop, { once: true });
    try {
      await verification(run.signal);
    } finally {
      this.current = undefined;
      stop.removeEventListener('abort', onStop);
    }
  }

  /** Abandons the running verification, if any. */
  cancel(): void {
    this.current?.abort();
  }

  /** The customer abandons the running verification; false when none runs. */
  cancelByCustomer(): boolean {
    const run = this.current;
    if (!run) return false;
    this.customerCancelled = run;
    run.abort();
    return true;
  }

  /** Whether the customer cancelled the running verification (asked once, as it ends). */
  takeCustomerCancel(): boolean {
    if (this.current === undefined || this.customerCancelled !== this.current) return false;
    this.customerCancelled = undefined;
    return true;
  }
}
