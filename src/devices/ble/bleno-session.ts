/**
 * One advertised service and the one phone on it (bleno-peripheral.ts header): sets the service and
 * advertises; decides which central is the phone and reports it coming and going (a disconnect, the adapter
 * switched off, on macOS an unsubscribe); hands the phone's requests to `PhoneRequests` and its
 * subscriptions and notifications to `Notifications`; flushes before the end; closes (the bleno steps are
 * bleno-teardown.ts).
 */
import { uuidKey } from '../../common/protocol/uuid.js';
import type { BlePeripheralSession, GattProfile, PeripheralEvent } from '../ports.js';
import { abortedError, errorMessage } from '../shared/abort.js';
import { safeCall } from '../shared/safe-call.js';
import { awaitEvent, blenoUuid } from './bleno-support.js';
import { removeService, stopAndDisconnect, type TeardownOptions } from './bleno-teardown.js';
import { hciOf, whenAclDrained } from './hci-acl.js';
import { Notifications, sessionClosed } from './bleno-notifications.js';
import { PhoneRequests, refuseRead, refuseWrite } from './bleno-requests.js';
import { primaryService, type GattRequestHandlers, type Served } from './bleno-service.js';
import type { Bleno, BlenoConnection } from './bleno-types.js';

/** Reason key of a `disconnect` the adapter's own power-off caused (src/kiosk/run-report.ts tells it apart). */
const ADAPTER_OFF = 'adapter_off';

export interface SessionOptions extends TeardownOptions {
  readonly localName: string;
  readonly setupTimeoutMs: number;
  readonly onClosed: () => void;
}

export class BlenoSession implements BlePeripheralSession {
  private closed = false;
  private closing: Promise<void> | undefined;
  private phone: BlenoConnection | undefined;
  private readonly byKey = new Map<string, Served>();
  private readonly requests = new PhoneRequests((event) => this.emit(event));
  private readonly notifications: Notifications;
  /** flush() calls waiting for the phone to leave (macOS). */
  private readonly departures = new Set<() => void>();
  private readonly serviceUuid: string;

  constructor(
    private readonly bleno: Bleno,
    profile: GattProfile,
    private readonly served: readonly Served[],
    private readonly onEvent: (event: PeripheralEvent) => void,
    private readonly options: SessionOptions,
  ) {
    this.serviceUuid = blenoUuid(profile.serviceUuid);
    for (const s of served) this.byKey.set(s.key, s);
    this.notifications = new Notifications(bleno);
  }

  /** Read afresh after an await (TypeScript keeps an earlier narrowing). */
  private get isClosed(): boolean {
    return this.closed;
  }

  async start(signal: AbortSignal): Promise<void> {
    this.bleno.on('accept', this.onAccept);
    this.bleno.on('disconnect', this.onDisconnect);
    this.bleno.on('stateChange', this.onAdapterState);
    const service = primaryService(this.bleno, this.serviceUuid, this.served, this.handlers);
    const bounded = { signal, timeoutMs: this.options.setupTimeoutMs };
    await awaitEvent(this.bleno, 'servicesSet', 'servicesSetError', () => this.bleno.setServices([service]), {
      ...bounded,
      what: 'BLE setServices',
    });
    if (this.isClosed) throw new Error('closed while setting the service');
    const [error] = await awaitEvent(this.bleno, 'advertisingStart', 'advertisingStartError', () => this.startAdvertising(), {
      ...bounded,
      what: 'BLE advertising',
    });
    if (error) throw error instanceof Error ? error : new Error(`advertising failed: ${errorMessage(error)}`);
  }

  private startAdvertising(): void {
    // Throws when bleno is not poweredOn (no callback given).
    this.bleno.startAdvertising(this.options.localName, [this.serviceUuid]);
  }

  private emit(event: PeripheralEvent): void {
    if (this.closed) return;
    // the consumer's failure is not the phone's: never turn it into an ATT error
    safeCall(() => {
      this.onEvent(event);
    });
  }

  private readonly onAccept = (_address: unknown, handle: BlenoConnection): void => {
    if (this.options.mac) {
      // An accept of the phone may follow its first request; another central cannot be disconnected on a Mac.
      if (!this.closed && this.phone === undefined) this.claim(handle);
      return;
    }
    if (this.closed || this.phone !== undefined) {
      this.bleno.disconnect(handle);
      return;
    }
    this.claim(handle);
  };

  private claim(handle: BlenoConnection): void {
    this.phone = handle;
    // One phone per session; stoprocent's hci binding re-advertises after every accept (docs/ble-libraries.md §4).
    this.bleno.stopAdvertising();
    this.emit({ kind: 'connect' });
  }

  private readonly onDisconnect = (_address: unknown, handle: BlenoConnection): void => {
    if (this.phone === undefined || handle !== this.phone) return;
    this.phoneLeft('the phone disconnected');
  };

  /**
   * The adapter left poweredOn with the phone on it: the link is gone. macOS says nothing else (the binding
   * has no disconnect, and CoreBluetooth sends no unsubscribe for it: ble_peripheral_manager.mm
   * `peripheralManagerDidUpdateState` emits only `stateChange`), so without this the kiosk would wait out its
   * idle bound. On hci a `disconnect` may follow (or come first): the phone is reported gone once.
   */
  private readonly onAdapterState = (state: unknown): void => {
    if (this.closed || state === 'poweredOn' || this.phone === undefined) return;
    this.phoneLeft(`${ADAPTER_OFF}: the Bluetooth adapter was switched off (${String(state)}), the link to the phone is gone`);
  };

  /** The phone is gone: the subscriptions bleno did not report dropped, then `disconnect`; advertising resumes. */
  private phoneLeft(reason: string): void {
    this.phone = undefined;
    this.requests.forgetValues();
    this.requests.abandonReads(false);
    for (const key of this.notifications.dropAll()) {
      const served = this.byKey.get(key);
      if (served) this.emit({ kind: 'unsubscribe', characteristicUuid: served.uuid });
    }
    this.emit({ kind: 'disconnect', reason });
    for (const departed of [...this.departures]) departed();
    if (this.closed) return;
    // The phone may come back before its first GATT event (the core's setup timer decides).
    try {
      this.startAdvertising();
    } catch {
      // not poweredOn: nothing to advertise on; the availability change tells the kiosk
    }
  }

  /** Whether a GATT request on `connection` is the phone's; on macOS the first one of the open session claims it. */
  private isPhone(connection: BlenoConnection): boolean {
    if (this.closed) return false;
    if (this.options.mac && this.phone === undefined) this.claim(connection);
    return this.phone !== undefined && connection === this.phone;
  }

  /** bleno's requests on the service: the phone's answered, any other central's refused with 0x0E. */
  private readonly handlers: GattRequestHandlers = {
    read: (served, connection, offset, callback) => {
      if (this.isPhone(connection)) this.requests.read(served, offset, callback);
      else refuseRead(callback);
    },
    write: (served, connection, data, offset, callback) => {
      if (this.isPhone(connection)) this.requests.write(served, data, offset, callback);
      else refuseWrite(callback);
    },
    subscribe: (served, connection, maxValueSize, update) => {
      if (!this.isPhone(connection)) return;
      if (this.notifications.add(served.key, connection, maxValueSize, update))
        this.emit({ kind: 'subscribe', characteristicUuid: served.uuid });
    },
    unsubscribe: (served, connection) => {
      if (this.phone === undefined || connection !== this.phone) return;
      if (!this.notifications.remove(served.key)) return;
      this.emit({ kind: 'unsubscribe', characteristicUuid: served.uuid });
      // macOS reports a central that left only as unsubscribes (bleno-peripheral.ts header); an mdoc keeps both subscriptions while it stays.
      if (this.options.mac) this.phoneLeft(`the phone left: it unsubscribed from ${served.uuid} (macOS reports no disconnect)`);
    },
  };

  notify(characteristicUuid: string, data: Uint8Array, signal?: AbortSignal): Promise<void> {
    if (this.closed) return Promise.reject(sessionClosed());
    const served = this.byKey.get(uuidKey(characteristicUuid));
    if (!served) return Promise.reject(new Error(`${characteristicUuid} is not a characteristic of the service`));
    if (!served.spec.operations.includes('notify'))
      return Promise.reject(new Error(`${characteristicUuid}: its operations do not include notify`));
    const copy = new Uint8Array(data); // the caller may reuse its buffer once the call returns
    return this.notifications.send(served, copy, signal);
  }

  /**
   * Everything notified so far has left bleno: its `update` call only queues (hci's ACL queue waits for
   * the controller's buffers), and a disconnect would overtake that queue.
   */
  async flush(signal: AbortSignal): Promise<void> {
    await this.notifications.settled();
    const phone = this.phone;
    if (this.closed || phone === undefined) return;
    // macOS: the binding's own queue says nothing, and removing the service would drop what it still holds.
    if (this.options.mac) await this.departure(signal);
    else if (typeof phone === 'number') await whenAclDrained(hciOf(this.bleno), phone, signal);
  }

  /** Resolves when the phone leaves or the session closes; rejects on abort. */
  private departure(signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.reject(abortedError('BLE flush'));
    return new Promise<void>((resolve, reject) => {
      const done = (): void => {
        this.departures.delete(done);
        signal.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = (): void => {
        this.departures.delete(done);
        reject(abortedError('BLE flush'));
      };
      this.departures.add(done);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  close(): Promise<void> {
    this.closing ??= this.shutDown();
    return this.closing;
  }

  /** Nothing waits or reads any more; then the bleno steps (bleno-teardown.ts) and the listeners go. Never rejects. */
  private async shutDown(): Promise<void> {
    this.closed = true;
    this.bleno.removeListener('stateChange', this.onAdapterState);
    this.notifications.close();
    for (const departed of [...this.departures]) departed();
    const phone = this.phone;
    this.requests.abandonReads(phone !== undefined);
    await stopAndDisconnect(this.bleno, phone, () => this.phone !== undefined, this.options);
    this.phone = undefined;
    await removeService(this.bleno, this.options);
    this.bleno.removeListener('accept', this.onAccept);
    this.bleno.removeListener('disconnect', this.onDisconnect);
    this.notifications.dropAll();
    this.requests.forgetValues();
    this.options.onClosed();
  }
}
