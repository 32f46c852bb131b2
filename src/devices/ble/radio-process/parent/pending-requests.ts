/**
 * The requests sent to the radio process and waiting for their reply, matched by id: a reply settles its
 * request, an abort sends `abort` and rejects here at once, a close is answered after `closeMs` at the
 * latest, and a child that is gone ends them all (a setup with a stable reason key).
 */
import { BleSetupError } from '../../../ports.js';
import { abortedError } from '../../../shared/abort.js';
import { ParentMessage, describeIssue, type ChildMessage } from '../protocol.js';
import { fromWire } from '../wire-errors.js';

/** The stable reason key of a setup cut short by the radio process going away. */
export const RADIO_PROCESS_EXITED = 'radio_process_exited';
/** The stable reason key of a setup asked for while the radio process is (re)starting. */
export const RADIO_PROCESS_RESTARTING = 'radio_process_restarting';

/** `setup`: a connect or advertise; `io`: a write, notify or flush; `close` never rejects. */
export type RequestKind = 'setup' | 'io' | 'close';
export type RadioOk = Extract<ChildMessage, { t: 'ok' }>;

interface Pending {
  readonly kind: RequestKind;
  resolve(message: RadioOk): void;
  reject(error: Error): void;
}

export class PendingRequests {
  private readonly pending = new Map<number, Pending>();

  constructor(
    private readonly post: (message: ParentMessage) => void,
    private readonly closeMs: number,
  ) {}

  /** How many requests wait for their reply. */
  get size(): number {
    return this.pending.size;
  }

  /**
   * Sends a request and waits for its reply. `down` (why no ready child runs) refuses it at once (`setup`:
   * with the stable reason key). `signal` aborting sends `abort` and rejects here at once.
   */
  send(
    kind: RequestKind,
    message: ParentMessage & { id: number },
    down: string | undefined,
    signal?: AbortSignal,
    what = 'radio request',
  ): Promise<RadioOk> {
    const checked = ParentMessage.safeParse(message);
    if (!checked.success) return Promise.reject(new Error(`${what}: ${describeIssue(checked.error)}`));
    if (down !== undefined) {
      if (kind === 'close') return Promise.resolve({ t: 'ok', id: message.id });
      return Promise.reject(kind === 'setup' ? new BleSetupError(`${RADIO_PROCESS_RESTARTING}: ${down}`) : new Error(down));
    }
    if (signal?.aborted) return Promise.reject(abortedError(what));
    return new Promise((resolve, reject) => {
      const onAbort = (): void => {
        if (!this.pending.delete(message.id)) return;
        this.post({ t: 'abort', id: message.id });
        reject(abortedError(what));
      };
      const timer =
        kind === 'close'
          ? setTimeout(() => {
              if (this.pending.delete(message.id)) resolve({ t: 'ok', id: message.id });
            }, this.closeMs)
          : undefined;
      const done = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      this.pending.set(message.id, {
        kind,
        resolve: (m) => {
          done();
          resolve(m);
        },
        reject: (e) => {
          done();
          reject(e);
        },
      });
      signal?.addEventListener('abort', onAbort, { once: true });
      this.post(message);
    });
  }

  /** A reply settles its request; false when none waits for it (aborted or timed out here). */
  settle(message: Extract<ChildMessage, { t: 'ok' | 'error' }>): boolean {
    const pending = this.pending.get(message.id);
    if (!pending) return false;
    this.pending.delete(message.id);
    if (message.t === 'ok') pending.resolve(message);
    else pending.reject(fromWire(message.error));
    return true;
  }

  /** The child is gone: every request ends, for `reason` (a setup with `why`, after the stable reason key). */
  cut(reason: string, why?: string): void {
    for (const [id, pending] of [...this.pending]) {
      this.pending.delete(id);
      if (pending.kind === 'close') pending.resolve({ t: 'ok', id });
      else if (pending.kind === 'setup') pending.reject(new BleSetupError(`${RADIO_PROCESS_EXITED}: ${why ?? reason}`));
      else pending.reject(new Error(reason));
    }
  }
}
