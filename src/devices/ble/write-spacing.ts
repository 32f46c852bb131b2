/**
 * Spacing for Write Commands on noble's macOS binding, which has no flow control of its own: it reports a
 * Write Command done right after handing it to CoreBluetooth (node_modules/@stoprocent/noble/lib/mac/src/
 * ble_manager.mm:331-339), and nothing in lib/mac reads `canSendWriteWithoutResponse` or implements
 * `peripheralIsReadyToSendWriteWithoutResponse:`. CoreBluetooth does not send a Write Command it has no
 * room for, and says nothing (Apple's documentation of `writeValue(_:for:type:)`), so the relay's next
 * `ble_write`, issued as soon as the previous one resolved, could be lost. JavaScript cannot see that room.
 * It can send no faster than a link drains: at least one queued packet leaves per connection event, so
 * one Write Command per connection interval keeps CoreBluetooth's queue from growing. Apple's accessory
 * guidelines have links run at 15 ms or a multiple of it; the default spacing (NobleCentral, 30 ms) covers
 * 15 and 30 ms links. A link with a longer interval, or one that misses events, drains slower: the queue
 * grows again, and a long stall could still overflow it (docs/ble-limits.md says so). A binding rebuilt
 * to wait for `peripheralIsReadyToSendWriteWithoutResponse:` would make this unnecessary.
 */
import { abortedError } from '../shared/abort.js';

export class WriteSpacing {
  /** When the next Write Command may be handed over. */
  private nextAt = 0;

  constructor(
    private readonly spacingMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Waits for the next Write Command's turn (rejects at once on abort); call it right before handing it over. */
  async turn(signal?: AbortSignal): Promise<void> {
    await this.until(this.nextAt, signal);
    this.nextAt = this.now() + this.spacingMs;
  }

  /** Resolves once the last Write Command has had its interval: it has left CoreBluetooth's queue. */
  settled(signal?: AbortSignal): Promise<void> {
    return this.until(this.nextAt, signal);
  }

  private until(at: number, signal: AbortSignal | undefined): Promise<void> {
    if (signal?.aborted) return Promise.reject(abortedError('BLE write'));
    const wait = at - this.now();
    if (wait <= 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const onAbort = (): void => {
        clearTimeout(timer);
        reject(abortedError('BLE write'));
      };
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, wait);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}
