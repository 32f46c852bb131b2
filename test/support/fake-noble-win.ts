/**
 * noble's Windows binding as the kiosk's central meets it, on the virtual radio (RadioNobleBindings carries the
 * GATT traffic to the phone). What differs from the radio bindings is what the binding's sources show
 * (node_modules/@stoprocent/noble/lib/win/src, and lib/common/src/Emit.cc for the event shapes):
 *
 * - connect opens no link: `BLEManager::Connect` asks `BluetoothLEDevice::FromBluetoothAddressAsync`, which
 *   gives a device object for any address, in reach or not, and `OnConnected` reports `connect` at once
 *   (ble_manager.cc). The link is made by the first GATT call: a phone out of reach fails it with
 *   `GattCommunicationStatus::Unreachable`, "Device is unreachable while discovering services"
 *   (`OnServicesDiscovered`, `CHECK_STATUS_AND_RESULT`, `gattStatusToString`);
 * - `disconnect` carries no reason (`Emit::Disconnected`);
 * - the scan filter is applied to each report alone (`OnScanResult`): a report lacking the UUID is dropped
 *   before anything is remembered. A peripheral's first report that passes is emitted; later ones only with
 *   duplicates allowed (`mAdvertismentMap`, cleared by `Scan`). Each report replaces what the peripheral
 *   advertises (`PeripheralWinrt::Update` resets the service UUIDs) and sets `connectable` from that report's
 *   type alone: a scan response is never connectable (peripheral_winrt.cc). Every event carries
 *   `serviceUuids` (an empty array when none) and `localName` (null when none): noble's merge in
 *   `_onDiscover` overwrites rather than ORs (Emit.cc `Emit::Scan`);
 * - `OnWrite` and `OnNotify` look at the `AsyncStatus` only, never at the result's `GattCommunicationStatus`:
 *   a Write Request or CCCD write the phone refused is reported as success (ble_manager.cc);
 * - descriptor reads do check the result (`OnReadValue`, `CHECK_STATUS_AND_RESULT`), uncached: the CCCD read
 *   back is the phone's own value.
 *
 * Advertising (active scanning, `BluetoothLEScanningMode::Active`): each radio report becomes the advertising
 * PDU and its scan response, per the phone's `advertising` kind (`adv`: the UUID in the connectable
 * advertisement, empty scan response; `scan_response`: connectable advertisement without the UUID, the UUID
 * in the scan response; `beacon`: a scannable, non-connectable advertisement, the UUID in its scan response).
 */
import { EventEmitter } from 'node:events';
import { RadioNobleBindings } from '../../src/qa/devices/noble-radio-bindings.js';
import type { RadioDevice } from '../../src/qa/sim/radio/virtual-radio.js';

export type WinAdvertising = 'adv' | 'scan_response' | 'beacon';

export interface WinNobleOptions {
  /** How each peripheral (by noble id) puts its service UUID on the air (default `adv`). */
  readonly advertising?: ReadonlyMap<string, WinAdvertising>;
}

interface NativeReport {
  readonly connectable: boolean;
  readonly serviceUuids: readonly string[];
}

const UNREACHABLE_DISCOVERING = 'Device is unreachable while discovering services';

export class WinNobleBindings extends RadioNobleBindings {
  /** Requests the binding reported done although the phone refused them (OnWrite/OnNotify). */
  readonly hiddenRefusals: string[] = [];
  /** GATT requests the kiosk made, by kind (for counting the cost of an extra step). */
  readonly requests: string[] = [];
  private scanFilter: readonly string[] = [];
  private allowDuplicates = false;
  private readonly deviceMap = new Set<string>();
  private readonly advertisementMap = new Set<string>();
  /** `device` objects handed out by FromBluetoothAddressAsync that have no link yet. */
  private readonly unlinked = new Set<string>();
  private readonly mtuWanted = new Map<string, number | undefined>();
  /** Link attempts waiting for the radio, by id: the discovery to run once linked. */
  private readonly linking = new Map<string, (error: Error | null) => void>();
  /** CCCD values as the phone holds them, by `${id}/${service}/${characteristic}`. */
  private readonly cccd = new Map<string, number>();

  constructor(
    device: RadioDevice,
    private readonly options: WinNobleOptions = {},
  ) {
    super(device);
  }

  // ------------------------------------------------------------ scanning (OnScanResult)

  override startScanning(serviceUuids: readonly string[] | undefined, allowDuplicates: boolean): void {
    this.scanFilter = [...(serviceUuids ?? [])];
    this.allowDuplicates = allowDuplicates;
    this.advertisementMap.clear();
    // The radio reports everything; the native filter runs per report below.
    super.startScanning([], allowDuplicates);
  }

  private nativeReports(id: string, serviceUuids: readonly string[]): NativeReport[] {
    switch (this.options.advertising?.get(id) ?? 'adv') {
      case 'adv':
        return [
          { connectable: true, serviceUuids },
          { connectable: false, serviceUuids: [] },
        ];
      case 'scan_response':
        return [
          { connectable: true, serviceUuids: [] },
          { connectable: false, serviceUuids },
        ];
      case 'beacon':
        return [
          { connectable: false, serviceUuids: [] },
          { connectable: false, serviceUuids },
        ];
    }
  }

  private onScanResult(id: string, address: string, advertisement: { localName?: string; serviceUuids: string[] }, rssi: number): void {
    for (const report of this.nativeReports(id, advertisement.serviceUuids)) {
      if (this.scanFilter.length > 0 && !report.serviceUuids.some((uuid) => this.scanFilter.includes(uuid))) continue;
      const known = this.deviceMap.has(id);
      this.deviceMap.add(id);
      if (known && !this.allowDuplicates && this.advertisementMap.has(id)) continue;
      this.advertisementMap.add(id);
      const emitted = {
        localName: report.serviceUuids.length > 0 ? (advertisement.localName ?? null) : null,
        txPowerLevel: null,
        manufacturerData: Buffer.alloc(0),
        serviceData: [],
        serviceUuids: [...report.serviceUuids],
      };
      EventEmitter.prototype.emit.call(this, 'discover', id, address, 'random', report.connectable, emitted, rssi);
    }
  }

  // ------------------------------------------------------------ connect: no link until the first GATT call

  override connect(id: string, parameters?: { readonly mtu?: number }): void {
    this.requests.push('connect');
    this.unlinked.add(id);
    this.mtuWanted.set(id, parameters?.mtu);
    // OnConnected: the device object is there whether the phone is in reach or not.
    setImmediate(() => EventEmitter.prototype.emit.call(this, 'connect', id, null));
  }

  override cancelConnect(id: string): void {
    this.unlinked.delete(id);
    super.cancelConnect(id);
  }

  override disconnect(id: string): void {
    if (this.unlinked.delete(id)) {
      // BLEManager::Disconnect: drops the device object, reports the disconnect.
      setImmediate(() => EventEmitter.prototype.emit.call(this, 'disconnect', id));
      return;
    }
    super.disconnect(id);
  }

  override discoverServices(id: string, uuids: readonly string[] | undefined): void {
    this.requests.push('discoverServices');
    if (!this.unlinked.has(id)) {
      super.discoverServices(id, uuids);
      return;
    }
    // GetGattServicesAsync(Uncached) makes the link first.
    this.linking.set(id, (error) => {
      if (error) {
        EventEmitter.prototype.emit.call(this, 'servicesDiscover', id, [], new Error(UNREACHABLE_DISCOVERING));
        return;
      }
      super.discoverServices(id, uuids);
    });
    const mtu = this.mtuWanted.get(id);
    super.connect(id, mtu === undefined ? undefined : { mtu });
  }

  // ------------------------------------------------------------ GATT results as the binding reports them

  override notify(id: string, serviceUuid: string, characteristicUuid: string, on: boolean): void {
    this.requests.push(on ? 'subscribe' : 'unsubscribe');
    super.notify(id, serviceUuid, characteristicUuid, on);
  }

  override discoverDescriptors(id: string, serviceUuid: string, characteristicUuid: string): void {
    this.requests.push('discoverDescriptors');
    super.discoverDescriptors(id, serviceUuid, characteristicUuid);
  }

  /** OnReadValue: the CCCD as the phone holds it (0x0001 notifications on, 0x0000 off). */
  override readValue(id: string, serviceUuid: string, characteristicUuid: string, descriptorUuid: string): void {
    this.requests.push('readValue');
    if (descriptorUuid !== '2902') {
      super.readValue(id, serviceUuid, characteristicUuid, descriptorUuid);
      return;
    }
    const value = this.cccd.get(`${id}/${serviceUuid}/${characteristicUuid}`) ?? 0;
    setImmediate(() =>
      EventEmitter.prototype.emit.call(
        this,
        'valueRead',
        id,
        serviceUuid,
        characteristicUuid,
        descriptorUuid,
        Buffer.from([value & 0xff, value >> 8]),
      ),
    );
  }

  override emit(event: string | symbol, ...args: unknown[]): boolean {
    const id = typeof args[0] === 'string' ? args[0] : '';
    switch (event) {
      case 'discover': {
        const [, address, , , advertisement, rssi] = args as [
          string,
          string,
          string,
          boolean,
          { localName?: string; serviceUuids: string[] },
          number,
        ];
        this.onScanResult(id, address, advertisement, rssi);
        return true;
      }
      case 'connect': {
        // The radio link behind the first GATT call (the kiosk saw `connect` long before).
        const next = this.linking.get(id);
        if (!next) return true;
        this.linking.delete(id);
        const error = args[1] instanceof Error ? args[1] : null;
        if (!error) this.unlinked.delete(id);
        next(error);
        return true;
      }
      case 'disconnect':
        return super.emit(event, id);
      case 'write':
        if (args[3] instanceof Error) {
          this.hiddenRefusals.push(`write ${String(args[2])}`);
          return super.emit(event, args[0], args[1], args[2]);
        }
        return super.emit(event, ...args);
      case 'notify': {
        const [, serviceUuid, characteristicUuid, state, error] = args as [string, string, string, boolean, Error | undefined];
        const key = `${id}/${serviceUuid}/${characteristicUuid}`;
        if (error) {
          this.hiddenRefusals.push(`notify ${characteristicUuid} ${String(!state)}`);
          return super.emit(event, id, serviceUuid, characteristicUuid, !state);
        }
        if (state) this.cccd.set(key, 1);
        else this.cccd.delete(key);
        return super.emit(event, ...args);
      }
      default:
        return super.emit(event, ...args);
    }
  }
}
