/**
 * The link handed to the kiosk core: discovery and subscriptions on a connected noble peripheral, then
 * ordered writes with backpressure, one `onNotification` per notification, `onDisconnect` once.
 */
import type { Characteristic, DisconnectReason, Peripheral, Service } from '@stoprocent/noble';
import type { CharacteristicSpec } from '../../common/protocol/messages.js';
import { BleSetupError, BleValueTooLargeError, type BleCentralHandlers, type BleCentralLink, type GattProfile } from '../ports.js';
import { abortedError } from '../shared/abort.js';
import { NOBLE_PROPERTY_OF, disconnectReasonText, normaliseMtu, profileEntries, type NobleBindingKind } from './noble-support.js';
import { nobleUuid, sameUuid, uuidKey } from './uuid.js';
import { hciOf, MAX_UNSENT_ACL_PACKETS, whenAclBelow, whenAclDrained } from './hci-acl.js';
import { bounded, settleWithin } from './wait.js';
import { WriteSpacing } from './write-spacing.js';

export interface NobleLinkOptions {
  readonly binding: NobleBindingKind;
  /** Bound on each GATT request of the setup (service discovery, characteristic discovery, each subscription). */
  readonly gattTimeoutMs: number;
  /** Bound on close(): unsubscribing, then waiting for the disconnect. */
  readonly closeTimeoutMs: number;
  /** Called once the link is released, to drop the peripheral from noble's cache (noble-cache.ts). */
  readonly forget?: () => void;
  /** The noble instance, for its hci binding's ACL queue (hci-acl.ts); absent: flush only awaits the writes. */
  readonly noble?: object;
  /** Pause between two Write Commands, for a binding without flow control (macOS, write-spacing.ts); absent: none. */
  readonly writeSpacingMs?: number;
  /** Read each subscribed characteristic's CCCD back and fail unless notifications are on (NobleCentralOptions). */
  readonly confirmSubscriptions?: boolean;
}

interface Target {
  readonly characteristic: Characteristic;
  readonly spec: CharacteristicSpec;
}

/** Client Characteristic Configuration descriptor (Core Vol 3 Part G §3.3.3.3). */
const CCCD_UUID = '2902';

const linkClosed = (): Error => new Error('BLE central link closed');

export class NobleCentralLink implements BleCentralLink {
  /** What the setup is doing, for the reason of a failure. */
  stage = 'service discovery';
  private ready = false;
  private closed = false;
  private dropReason: string | undefined;
  private readonly targets = new Map<string, Target>();
  private readonly subscribed: Characteristic[] = [];
  private readonly undo: (() => void)[] = [];
  /** The write in flight (noble keeps one write callback per characteristic, so one at a time). */
  private tail: Promise<unknown> = Promise.resolve();
  private readonly spacing: WriteSpacing | undefined;

  constructor(
    private readonly peripheral: Peripheral,
    private readonly profile: GattProfile,
    private readonly handlers: BleCentralHandlers,
    private readonly options: NobleLinkOptions,
  ) {
    this.spacing = options.writeSpacingMs ? new WriteSpacing(options.writeSpacingMs) : undefined;
    const onDisconnect = (reason: DisconnectReason): void => this.dropped(disconnectReasonText(reason));
    peripheral.on('disconnect', onDisconnect);
    this.undo.push(() => peripheral.removeListener('disconnect', onDisconnect));
  }

  get mtu(): number | undefined {
    return normaliseMtu(this.peripheral.mtu, this.options.binding);
  }

  /** Why the phone left during setup, if it did. */
  get droppedDuringSetup(): string | undefined {
    return this.ready ? undefined : this.dropReason;
  }

  /** Discovers the service and the profile's characteristics, subscribes to every `notify` one. */
  async setUp(signal: AbortSignal): Promise<void> {
    const { profile } = this;
    const serviceUuid = nobleUuid(profile.serviceUuid);
    const services = await this.gatt(this.peripheral.discoverServicesAsync([serviceUuid]), signal);
    const service: Service | undefined = services.find((s) => sameUuid(s.uuid, serviceUuid));
    if (!service) throw new BleSetupError(`service_not_found: ${profile.serviceUuid} is not on the phone`);
    this.stage = 'characteristic discovery';
    // All of them, matched here by value: the binding's filter would need noble's exact spelling.
    const characteristics = await this.gatt(service.discoverCharacteristicsAsync([]), signal);
    for (const { name, spec } of profileEntries(profile)) {
      const characteristic = characteristics.find((c) => sameUuid(c.uuid, spec.uuid));
      if (!characteristic) throw new BleSetupError(`characteristic_missing: ${name} (${spec.uuid}) is not on the phone`);
      const lacking = spec.operations.map((op) => NOBLE_PROPERTY_OF[op]).filter((p) => !characteristic.properties.includes(p));
      if (lacking.length > 0)
        throw new BleSetupError(`characteristic_unusable: ${name} (${spec.uuid}) lacks ${lacking.join(', ')} on the phone`);
      this.targets.set(uuidKey(spec.uuid), { characteristic, spec });
    }
    for (const { name, spec } of profileEntries(profile)) {
      const target = this.targets.get(uuidKey(spec.uuid));
      if (!target || !spec.operations.includes('notify')) continue;
      this.stage = `subscribe to ${name}`;
      // Listening before subscribing: the first notification may follow the CCCD write at once.
      const onData = (data: Buffer, isNotification: boolean): void => {
        if (isNotification && !this.closed) this.handlers.onNotification(spec.uuid, data);
      };
      target.characteristic.on('data', onData);
      this.undo.push(() => target.characteristic.removeListener('data', onData));
      await this.gatt(target.characteristic.subscribeAsync(), signal);
      this.subscribed.push(target.characteristic);
      if (this.options.confirmSubscriptions) await this.confirmSubscribed(target.characteristic, name, spec, signal);
    }
    if (signal.aborted) throw abortedError('BLE central connect');
    if (this.dropReason !== undefined) throw new Error(`Disconnected ${this.dropReason}`);
    this.ready = true;
  }

  /**
   * The CCCD as the phone holds it must have notifications (bit 0) or indications (bit 1) on: Windows reports
   * a refused CCCD write as success (ble_manager.cc `OnNotify`), but reads the descriptor back uncached and
   * checks the result (`OnReadValue`).
   */
  private async confirmSubscribed(
    characteristic: Characteristic,
    name: string,
    spec: CharacteristicSpec,
    signal: AbortSignal,
  ): Promise<void> {
    const descriptors = await this.gatt(characteristic.discoverDescriptorsAsync(), signal);
    const cccd = descriptors.find((d) => sameUuid(d.uuid, CCCD_UUID));
    if (!cccd) throw new BleSetupError(`subscribe_refused: ${name} (${spec.uuid}) has no CCCD on the phone`);
    const value = await this.gatt(cccd.readValueAsync(), signal);
    if (((value[0] ?? 0) & 0x03) === 0) {
      throw new BleSetupError(
        `subscribe_refused: the phone did not turn notifications on for ${name} (${spec.uuid}); its CCCD reads 0x${value.toString('hex') || 'empty'}`,
      );
    }
  }

  write(characteristicUuid: string, data: Uint8Array, signal?: AbortSignal): Promise<void> {
    if (this.closed) return Promise.reject(linkClosed());
    const target = this.targets.get(uuidKey(characteristicUuid));
    if (!target) return Promise.reject(new Error(`${characteristicUuid} is not a characteristic of the service`));
    if (!target.spec.operations.includes('write_without_response')) {
      return Promise.reject(new Error(`${characteristicUuid}: its operations do not include write_without_response`));
    }
    // A Write Command cannot be split: above ATT_MTU − 3 the stack would refuse or cut it (512 bounds a
    // link whose binding does not report the MTU, docs/ble-libraries.md §3).
    const tooLarge = BleValueTooLargeError.check('write-without-response', data.length, this.mtu);
    if (tooLarge) return Promise.reject(tooLarge);
    if (signal?.aborted) return Promise.reject(abortedError('BLE write'));
    const bytes = Buffer.from(data); // the caller may reuse its buffer once the call returns
    let abandoned = false;
    const run = this.tail.then(async () => {
      // Room in the stack first (hci: a few packets queued for this link at most, hci-acl.ts): noble takes
      // any number of Write Commands at once, and the relay would hand it every queued ble_write in one go.
      await whenAclBelow(this.hci, this.handle(), MAX_UNSENT_ACL_PACKETS, signal);
      // macOS: the binding says "done" at once whether CoreBluetooth had room or not (write-spacing.ts).
      if (!abandoned) await this.spacing?.turn(signal);
      if (abandoned) throw abortedError('BLE write');
      if (this.closed) throw linkClosed();
      if (this.dropReason !== undefined) throw new Error(`BLE link lost: ${this.dropReason}`);
      // Resolves when the binding has taken the Write Command (hci: queued to the ACL link, docs/ble-libraries.md §3).
      return target.characteristic.writeAsync(bytes, true);
    });
    this.tail = run.catch(() => undefined);
    if (!signal) return run;
    return new Promise<void>((resolve, reject) => {
      // An abort rejects at once; a write not issued yet is dropped, one in flight still holds the queue.
      const onAbort = (): void => {
        abandoned = true;
        reject(abortedError('BLE write'));
      };
      signal.addEventListener('abort', onAbort, { once: true });
      run.then(
        () => {
          signal.removeEventListener('abort', onAbort);
          resolve();
        },
        (e: unknown) => {
          signal.removeEventListener('abort', onAbort);
          reject(e instanceof Error ? e : new Error(String(e)));
        },
      );
    });
  }

  /**
   * Every write taken so far has left noble (hci: out of its ACL queue, completed by the controller;
   * macOS: the last one has had its interval in CoreBluetooth's queue).
   */
  async flush(signal: AbortSignal): Promise<void> {
    await this.tail;
    if (this.closed || this.peripheral.state !== 'connected') return;
    await this.spacing?.settled(signal);
    await whenAclDrained(this.hci, this.handle(), signal);
  }

  private get hci(): object | undefined {
    return this.options.noble === undefined ? undefined : hciOf(this.options.noble);
  }

  /** The link's HCI connection handle in noble's hci binding (undefined on other bindings). */
  private handle(): number | undefined {
    const { noble } = this.options;
    const bindings: unknown = noble === undefined ? undefined : Reflect.get(noble, '_bindings');
    const handles: unknown = typeof bindings === 'object' && bindings !== null ? Reflect.get(bindings, '_handles') : undefined;
    const handle: unknown = typeof handles === 'object' && handles !== null ? Reflect.get(handles, this.peripheral.id) : undefined;
    return typeof handle === 'number' ? handle : undefined;
  }

  async close(): Promise<void> {
    await this.release(true);
  }

  /** Removes our listeners, unsubscribes (when `unsubscribe` and still connected) and disconnects, bounded. */
  async release(unsubscribe: boolean): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const undo of this.undo.splice(0)) undo();
    const p = this.peripheral;
    try {
      if (p.state === 'connecting') {
        p.cancelConnect();
        return;
      }
      if (p.state !== 'connected') return;
      const started = Date.now();
      if (unsubscribe && this.subscribed.length > 0) {
        await settleWithin(Promise.allSettled(this.subscribed.map((c) => c.unsubscribeAsync())), this.options.closeTimeoutMs / 2);
      }
      if ((p.state as string) !== 'connected') return;
      await this.disconnect(Math.max(0, this.options.closeTimeoutMs - (Date.now() - started)));
    } catch {
      // close() never rejects (port contract); the peripheral is abandoned at worst.
    } finally {
      this.options.forget?.();
    }
  }

  private disconnect(ms: number): Promise<void> {
    const p = this.peripheral;
    return new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        p.removeListener('disconnect', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      p.on('disconnect', done);
      p.disconnect();
    });
  }

  private dropped(reason: string): void {
    if (this.dropReason !== undefined) return;
    this.dropReason = reason;
    if (this.closed || !this.ready) return;
    this.handlers.onDisconnect(reason);
  }

  /** A setup GATT request, bounded by the setup signal and `gattTimeoutMs`. */
  private gatt<T>(request: Promise<T>, signal: AbortSignal): Promise<T> {
    const { stage } = this;
    const ms = this.options.gattTimeoutMs;
    return bounded(request, {
      signal,
      ms,
      what: `BLE central ${stage}`,
      onTimeout: () => new BleSetupError(`gatt_timeout: no answer to ${stage} within ${ms} ms`),
    });
  }
}
