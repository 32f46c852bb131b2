/**
 * The phone's subscriptions and the notifications sent on them (bleno-peripheral.ts header): a notification
 * waits for its subscription, is refused above ATT_MTU − 3, waits for room in hci's ACL queue, goes out
 * through the subscription's own update callback, and lets the phone's packets in before the next one;
 * notifications run one at a time, in call order.
 */
import { BleValueTooLargeError } from '../ports.js';
import { abortable, abortedError, errorMessage } from '../shared/abort.js';
import { hciOf, MAX_UNSENT_ACL_PACKETS, whenAclBelow } from './hci-acl.js';
import type { BlenoConnection, BlenoUpdateValueCallback } from './bleno-types.js';

/** The characteristic a notification goes to: its key and its UUID as the profile spells it. */
export interface NotifyTarget {
  readonly key: string;
  readonly uuid: string;
}

interface Subscription {
  /** The phone's connection (subscriptions are the phone's only, and dropped when it leaves). */
  readonly connection: BlenoConnection;
  readonly maxValueSize: number;
  readonly update: BlenoUpdateValueCallback;
}

interface SubscriptionWaiter {
  readonly key: string;
  resolve(): void;
  reject(error: Error): void;
}

export const sessionClosed = (): Error => new Error('BLE peripheral session closed');

/** One session's subscriptions and notification queue, over `bleno` (for its hci binding's ACL queue). */
export class Notifications {
  private closed = false;
  private readonly subscriptions = new Map<string, Subscription>();
  private readonly waiters = new Set<SubscriptionWaiter>();
  private chain: Promise<unknown> = Promise.resolve();

  constructor(private readonly bleno: object) {}

  /** The phone subscribed; false when it already was (a repeated CCCD write changes nothing for the phone). */
  add(key: string, connection: BlenoConnection, maxValueSize: number, update: BlenoUpdateValueCallback): boolean {
    const already = this.subscriptions.has(key);
    this.subscriptions.set(key, { connection, maxValueSize, update });
    if (already) return false;
    for (const waiter of [...this.waiters]) if (waiter.key === key) waiter.resolve();
    return true;
  }

  /** The phone unsubscribed; false when it was not subscribed. */
  remove(key: string): boolean {
    return this.subscriptions.delete(key);
  }

  /** The phone is gone: every subscription dropped; returns their keys in the order they were made. */
  dropAll(): string[] {
    const dropped = [...this.subscriptions.keys()];
    this.subscriptions.clear();
    return dropped;
  }

  /** Queues `data` (the caller's copy) behind the notifications before it. */
  send(target: NotifyTarget, data: Uint8Array, signal?: AbortSignal): Promise<void> {
    const run = this.chain.then(() => this.sendNow(target, data, signal));
    this.chain = run.catch(() => undefined);
    return signal ? abortable(run, signal, 'BLE notify') : run;
  }

  /** Resolves once every notification queued so far has been handed to bleno or has failed. */
  async settled(): Promise<void> {
    await this.chain;
  }

  /** The session closes: a notification waiting for its subscription fails, and none is sent any more. */
  close(): void {
    this.closed = true;
    const closedError = sessionClosed();
    for (const waiter of [...this.waiters]) waiter.reject(closedError);
  }

  /** Closed (a method: a check after an await must not be narrowed away). */
  private isClosed(): boolean {
    return this.closed;
  }

  private async sendNow(target: NotifyTarget, data: Uint8Array, signal: AbortSignal | undefined): Promise<void> {
    // Checked here too: an aborted call queued behind another must not send later.
    if (signal?.aborted) throw abortedError('BLE notify');
    if (this.closed) throw sessionClosed();
    await this.subscribed(target.key, signal);
    const subscription = this.subscriptions.get(target.key);
    if (this.isClosed() || !subscription) throw sessionClosed();
    // bleno's subscription gives ATT_MTU − 3; hci would truncate a longer value silently (docs/ble-libraries.md §4).
    const tooLarge = BleValueTooLargeError.check('notification', data.length, subscription.maxValueSize + 3);
    if (tooLarge) throw tooLarge;
    // Room in the stack first (hci: a few packets queued for the phone at most, hci-acl.ts).
    const phone = subscription.connection;
    if (typeof phone === 'number') await whenAclBelow(hciOf(this.bleno), phone, MAX_UNSENT_ACL_PACKETS, signal);
    if (this.isClosed() || !this.subscriptions.has(target.key)) throw sessionClosed();
    try {
      subscription.update(Buffer.from(data));
    } catch (e) {
      throw new Error(`notification on ${target.uuid} failed: ${errorMessage(e)}`);
    }
    // Handed to the stack (hci queues it for the controller; there is no completion to wait for).
    // The next turn lets the phone's packets in between two notifications of a long message.
    await new Promise<void>((resolve) => setImmediate(resolve));
  }

  private subscribed(key: string, signal: AbortSignal | undefined): Promise<void> {
    if (this.subscriptions.has(key)) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const cleanUp = (): void => {
        this.waiters.delete(waiter);
        signal?.removeEventListener('abort', onAbort);
      };
      const waiter: SubscriptionWaiter = {
        key,
        resolve: () => {
          cleanUp();
          resolve();
        },
        reject: (error) => {
          cleanUp();
          reject(error);
        },
      };
      const onAbort = (): void => waiter.reject(abortedError('BLE notify'));
      this.waiters.add(waiter);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}
