/**
 * A stand-in for @stoprocent/bleno 0.12's macOS binding (`lib/mac`: the `BlenoMac` N-API class over
 * `BLEPeripheralManager`, a CBPeripheralManager delegate), for tests of the bleno adapter as it runs on a
 * Mac. It behaves as the binding's sources show, line by line where it matters (paths below are in
 * node_modules/@stoprocent/bleno/lib/mac/src):
 *
 * - `init()` makes a new manager (bleno_mac.mm:47-53): a fresh set of known centrals, no services; the state
 *   arrives later (`peripheralManagerDidUpdateState`, ble_peripheral_manager.mm:168-185);
 * - `stop()` stops advertising, removes every service and drops the manager (bleno_mac.mm:55-62); every
 *   later call but `disconnect`/`updateRssi` throws "BLEManager has already been cleaned up" (CHECK_MANAGER)
 *   until `init()` again;
 * - `setServices(list)` only *adds* the list's services (ble_peripheral_manager.mm:137-145), one
 *   `servicesSet` per service added (`didAddService`, :193-198), none for an empty list; the characteristic
 *   emitters are replaced by the list's (bleno_mac.mm:102-127), keyed by characteristic UUID only;
 * - `startAdvertising` does nothing, and emits nothing, while advertising (ble_peripheral_manager.mm:120-130);
 *   `stopAdvertising` emits `advertisingStop` (bleno_mac.mm:95-100);
 * - `disconnect` and `updateRssi` do nothing (bleno_mac.mm:129-135): no `disconnect` event, ever;
 * - `accept(id, id)` only the first time a central's identifier is seen by this manager, on its first
 *   subscribe, read or write (ble_peripheral_manager.mm:200-272); the set is cleared only when the manager
 *   goes (dealloc, :36-43), so a central seen in an earlier session is never accepted again;
 * - an unsubscribe emits only `unsubscribe` (:218-224);
 * - Bluetooth switched off or on (`setAdapterState`) emits only `stateChange` (`peripheralManagerDidUpdateState`,
 *   :168-185): no unsubscribe, no disconnect;
 * - the read callback must get a Buffer: it converts `info[1]` with `As<Napi::Buffer>` (callbacks.mm:79-88,
 *   napi_objc.mm:35-37), which throws for `undefined`/`null` under the binding's C++ exceptions, so the
 *   request is never answered; a Write Command's callback answers nothing (:258-263);
 * - a subscription's `maxValueSize` is the central's `maximumUpdateValueLength` (ATT_MTU − 3, :214);
 * - every event goes up through a thread-safe function: later, never within the call; the manager's events
 *   and each characteristic's travel on separate ones (callbacks.mm, ThreadSafeCallback.h), so their order
 *   between them is not guaranteed (`acceptLate` delivers an `accept` after the request it came with).
 *
 * What CoreBluetooth itself does (not in bleno's sources) is kept to what the kiosk's adapter meets: the GATT
 * database holds what was added until removed; a request reaches the delegate only for a characteristic in
 * it (else the central gets Attribute Not Found) and waits for `respondToRequest` (a request whose
 * characteristic has no emitter stays unanswered); a central that disconnects is unsubscribed from each
 * characteristic it had subscribed to (the delegate's only sign that it left). Below poweredOn, advertising has
 * stopped and the local GATT database is cleared (Apple's `peripheralManagerDidUpdateState(_:)`): the centrals'
 * links are gone with it, and nothing tells the delegate about them.
 */
import { EventEmitter } from 'node:events';
import { createRequire } from 'node:module';
import type {
  Bleno,
  BlenoBindings,
  BlenoCharacteristic,
  BlenoConstructor,
  BlenoPrimaryService,
  BlenoState,
} from '../../src/devices/ble/bleno-types.js';

const requireCjs = createRequire(import.meta.url);

/** ATT error codes the fake CoreBluetooth answers on its own. */
export const CB_ATT = { success: 0x00, readNotPermitted: 0x02, writeNotPermitted: 0x03, attributeNotFound: 0x0a } as const;

export interface ReadAnswer {
  readonly result: number;
  readonly data: Buffer;
}

interface Manager {
  readonly connectedCentrals: Set<string>;
  readonly services: BlenoPrimaryService[];
  emitters: Map<string, BlenoCharacteristic>;
  advertising: { readonly name: string; readonly serviceUuids: readonly string[] } | undefined;
}

const later = (fn: () => void): void => {
  setImmediate(fn);
};

export interface FakeBlenoMacOptions {
  /** The manager's state once it reports (default poweredOn). */
  readonly state?: BlenoState;
  /** Deliver each `accept` one turn after the request it came with (the two travel on separate queues). */
  readonly acceptLate?: boolean;
}

export class FakeBlenoMac extends EventEmitter implements BlenoBindings {
  private manager: Manager | undefined;
  /** Managers made so far (each `init()`). */
  inits = 0;
  readonly calls: string[] = [];
  /** Errors the binding threw back at a JS callback (the request stays unanswered). */
  readonly callbackErrors: Error[] = [];
  /** What a manager reports (CoreBluetooth's state, which the user may switch). */
  private adapterState: BlenoState;

  constructor(private readonly options: FakeBlenoMacOptions = {}) {
    super();
    this.adapterState = options.state ?? 'poweredOn';
  }

  /**
   * The user switches Bluetooth (Control Centre): the manager reports the new state and nothing else. Below
   * poweredOn advertising stops and the database is cleared; links to centrals end without a word.
   */
  setAdapterState(state: BlenoState): void {
    this.adapterState = state;
    const manager = this.manager;
    if (!manager) return;
    if (state !== 'poweredOn') {
      manager.advertising = undefined;
      manager.services.length = 0;
      manager.emitters.clear();
    }
    later(() => {
      if (this.manager === manager) this.emit('stateChange', state);
    });
  }

  private checked(): Manager {
    if (!this.manager) throw new TypeError('BLEManager has already been cleaned up');
    return this.manager;
  }

  // ------------------------------------------------------------ BlenoMac, as JS sees it

  init(): void {
    this.calls.push('init');
    this.inits++;
    this.manager = { connectedCentrals: new Set(), services: [], emitters: new Map(), advertising: undefined };
    const manager = this.manager;
    later(() => {
      if (this.manager === manager) this.emit('stateChange', this.adapterState);
    });
  }

  stop(): void {
    this.calls.push('stop');
    const manager = this.checked();
    manager.advertising = undefined;
    manager.services.length = 0;
    manager.emitters.clear();
    this.manager = undefined;
  }

  startAdvertising(name: string, serviceUuids: readonly string[]): void {
    this.calls.push('startAdvertising');
    const manager = this.checked();
    if (manager.advertising) return;
    manager.advertising = { name, serviceUuids: [...serviceUuids] };
    later(() => this.emit('advertisingStart', null));
  }

  stopAdvertising(): void {
    this.calls.push('stopAdvertising');
    const manager = this.checked();
    manager.advertising = undefined;
    later(() => this.emit('advertisingStop'));
  }

  setServices(services: readonly BlenoPrimaryService[]): void {
    this.calls.push(`setServices(${services.length})`);
    const manager = this.checked();
    manager.services.push(...services);
    for (let i = 0; i < services.length; i++) later(() => this.emit('servicesSet', null));
    manager.emitters = new Map(services.flatMap((s) => s.characteristics.map((c) => [c.uuid, c] as const)));
  }

  disconnect(): void {
    this.calls.push('disconnect');
  }

  updateRssi(): void {
    // nothing, as the binding
  }

  // ------------------------------------------------------------ what a test looks at

  /** Service UUIDs in CoreBluetooth's GATT database now. */
  get database(): string[] {
    return this.manager?.services.map((s) => s.uuid) ?? [];
  }

  get advertising(): { readonly name: string; readonly serviceUuids: readonly string[] } | undefined {
    return this.manager?.advertising;
  }

  /** A phone (central) on this Mac; `identifier` as bleno spells a CBCentral's (lower-case hex, no dashes). */
  central(identifier: string, maximumUpdateValueLength = 182): FakeMacCentral {
    return new FakeMacCentral(this, identifier, maximumUpdateValueLength);
  }

  // ------------------------------------------------------------ the delegate side (internal to the fake)

  /** The characteristic in the database, or undefined (CoreBluetooth answers Attribute Not Found). */
  lookup(serviceUuid: string, characteristicUuid: string): BlenoCharacteristic | undefined {
    return this.manager?.services.find((s) => s.uuid === serviceUuid)?.characteristics.find((c) => c.uuid === characteristicUuid);
  }

  /** The emitter for a characteristic UUID (any service: the binding keys them by characteristic UUID). */
  emitter(characteristicUuid: string): BlenoCharacteristic | undefined {
    return this.manager?.emitters.get(characteristicUuid);
  }

  /** The "first time this manager sees the central" check of every request handler. */
  acceptIfNew(identifier: string): void {
    const manager = this.manager;
    if (!manager || manager.connectedCentrals.has(identifier)) return;
    manager.connectedCentrals.add(identifier);
    const accept = (): void => {
      this.emit('accept', identifier, identifier);
    };
    if (this.options.acceptLate) later(() => later(accept));
    else later(accept);
  }

  /** Calls a JS callback the way the binding's N-API function does: its argument errors come back as throws. */
  guarded(fn: () => void): void {
    try {
      fn();
    } catch (e) {
      this.callbackErrors.push(e instanceof Error ? e : new Error(String(e)));
      throw e;
    }
  }
}

/** A central connected to the Mac; its requests go through the fake delegate. */
export class FakeMacCentral {
  readonly notifications: { readonly characteristicUuid: string; readonly data: Buffer }[] = [];
  private readonly subscribed = new Map<string, string>();
  private connected = true;

  constructor(
    private readonly mac: FakeBlenoMac,
    readonly identifier: string,
    readonly maximumUpdateValueLength: number,
  ) {}

  /** Read (offset > 0: a Read Blob). Resolves with CoreBluetooth's answer; stays pending while nobody answers. */
  read(serviceUuid: string, characteristicUuid: string, offset = 0): Promise<ReadAnswer> {
    const characteristic = this.mac.lookup(serviceUuid, characteristicUuid);
    if (!characteristic) return Promise.resolve({ result: CB_ATT.attributeNotFound, data: Buffer.alloc(0) });
    if (!characteristic.properties.includes('read')) return Promise.resolve({ result: CB_ATT.readNotPermitted, data: Buffer.alloc(0) });
    this.mac.acceptIfNew(this.identifier);
    return new Promise<ReadAnswer>((resolve) => {
      later(() => {
        const emitter = this.mac.emitter(characteristicUuid);
        if (!emitter) return;
        const callback = (result: unknown, data: unknown): void => {
          if (!Buffer.isBuffer(data)) throw new TypeError('Invalid argument'); // napi_get_typedarray_info on a non-Buffer
          if (typeof result !== 'number') throw new TypeError('A number was expected');
          resolve({ result, data: Buffer.from(data) });
        };
        this.mac.guarded(() => emitter.emit('readRequest', this.identifier, offset, callback));
      });
    });
  }

  /** Write (without response when the characteristic has no `write` property): resolves when CoreBluetooth took it. */
  write(serviceUuid: string, characteristicUuid: string, data: Uint8Array): Promise<number> {
    const characteristic = this.mac.lookup(serviceUuid, characteristicUuid);
    if (!characteristic) return Promise.resolve(CB_ATT.attributeNotFound);
    const properties = characteristic.properties;
    if (!properties.includes('write') && !properties.includes('writeWithoutResponse')) return Promise.resolve(CB_ATT.writeNotPermitted);
    this.mac.acceptIfNew(this.identifier);
    const sendResponse = properties.includes('write');
    return new Promise<number>((resolve) => {
      later(() => {
        const emitter = this.mac.emitter(characteristicUuid);
        if (!emitter) return;
        const callback = (result: unknown): void => {
          if (typeof result !== 'number') throw new TypeError('A number was expected');
          if (sendResponse) resolve(result);
        };
        this.mac.guarded(() => emitter.emit('writeRequest', this.identifier, Buffer.from(data), 0, !sendResponse, callback));
      });
      if (!sendResponse) resolve(CB_ATT.success);
    });
  }

  subscribe(serviceUuid: string, characteristicUuid: string): void {
    const characteristic = this.mac.lookup(serviceUuid, characteristicUuid);
    if (!characteristic?.properties.includes('notify')) throw new Error(`cannot subscribe to ${characteristicUuid}`);
    this.subscribed.set(characteristicUuid, serviceUuid);
    this.mac.acceptIfNew(this.identifier);
    later(() => {
      const emitter = this.mac.emitter(characteristicUuid);
      if (!emitter) return;
      const update = (data: unknown): void => {
        if (!Buffer.isBuffer(data)) throw new TypeError('Invalid argument');
        // addNotification → updateValue:forCharacteristic:onSubscribedCentrals: on the manager's queue
        later(() => {
          if (this.connected && this.subscribed.has(characteristicUuid) && this.mac.lookup(serviceUuid, characteristicUuid)) {
            this.notifications.push({ characteristicUuid, data: Buffer.from(data) });
          }
        });
      };
      this.mac.guarded(() => emitter.emit('subscribe', this.identifier, this.maximumUpdateValueLength, update));
    });
  }

  unsubscribe(characteristicUuid: string): void {
    if (!this.subscribed.delete(characteristicUuid)) return;
    later(() => this.mac.emitter(characteristicUuid)?.emit('unsubscribe', this.identifier));
  }

  /** The phone goes: CoreBluetooth unsubscribes it from each characteristic; bleno reports nothing else. */
  disconnect(): void {
    this.connected = false;
    for (const characteristicUuid of [...this.subscribed.keys()]) this.unsubscribe(characteristicUuid);
  }
}

/** A bleno instance (bleno's own `lib/bleno.js`) on the fake mac binding. */
export function createMacBleno(binding: FakeBlenoMac): Bleno {
  const BlenoClass = requireCjs('@stoprocent/bleno/lib/bleno') as BlenoConstructor;
  return new BlenoClass(binding);
}
