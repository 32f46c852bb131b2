/**
 * noble bindings on the virtual radio: the object `@stoprocent/noble`'s `lib/noble.js` drives instead of
 * its hci/mac/win binding (docs/ble-libraries.md §2), backed by one `RadioDevice`'s central facet, following the
 * mapping in the radio's header comment (src/qa/sim/radio/virtual-radio.ts). With it the real noble object
 * model (Peripheral, Service, Characteristic, its queues and callbacks) runs against the virtual phone.
 *
 * Like hci, the bindings are strict where hci is: scan filters and discovery filters are exact string
 * matches on noble's spelling (lower case, no dashes), so an adapter that forgets to normalise fails here
 * as it would on hardware. Every event goes up asynchronously, never within the call that caused it.
 * And like the mac and win bindings, they are dead once stopped: every call but `start` throws "<Fn>:
 * BLEManager has already been cleaned up" (binding-lifecycle.ts), so code that keeps using a stopped
 * noble fails here as it does on a Mac.
 *
 *   const noble = createVirtualNoble(rig.central.device);   // a Noble, as `withBindings()` returns one
 */
import { EventEmitter } from 'node:events';
import { createRequire } from 'node:module';
import type { Noble } from '@stoprocent/noble';
import type { AdvertisementReport, DiscoveredService, RadioDevice, RadioLink, ScanHandle } from '../sim/radio/virtual-radio.js';
import { nobleMacManager, type BindingManager } from './binding-lifecycle.js';

/** HCI status codes noble's hci binding reports (Core Vol 1 Part F). */
const HCI_LOCAL_HOST_TERMINATED = 0x16;

interface Connection {
  readonly link: RadioLink;
  /** Services from the last discovery, for characteristic discovery (hci keeps the handles the same way). */
  services: DiscoveredService[];
  readonly stopListening: (() => void)[];
}

const asError = (e: unknown): Error => (e instanceof Error ? e : new Error(String(e)));

export class RadioNobleBindings extends EventEmitter {
  private stopPower: (() => void) | undefined;
  private scan: ScanHandle | undefined;
  private readonly pending = new Map<string, AbortController>();
  private readonly connections = new Map<string, Connection>();

  constructor(
    readonly device: RadioDevice,
    /** The binding's manager (default: as noble's mac binding keeps it). */
    protected readonly manager: BindingManager = nobleMacManager(),
  ) {
    super();
  }

  // ------------------------------------------------------------ lifecycle

  start(): void {
    if (!this.manager.start()) return;
    this.stopPower = this.device.onPowerChange((powered) => this.emit('stateChange', powered ? 'poweredOn' : 'poweredOff'));
    setImmediate(() => {
      if (!this.manager.running) return;
      this.emit('addressChange', this.device.address);
      this.emit('stateChange', this.device.powered ? 'poweredOn' : 'poweredOff');
    });
  }

  /** abandonware's name for start(). */
  init(): void {
    this.start();
  }

  /**
   * Like the native stop(): scanning ends, links drop, and nothing more is said — no `stateChange` (neither
   * hci's `Hci.stop` nor mac's `Stop` reports one), so noble's state keeps reading what it read, while every
   * later call throws.
   */
  stop(): void {
    if (!this.manager.stop()) return;
    this.stopPower?.();
    this.stopPower = undefined;
    this.endScan();
    for (const controller of this.pending.values()) controller.abort();
    this.pending.clear();
    for (const connection of this.connections.values()) void connection.link.disconnect('noble stopped');
  }

  reset(): void {
    this.manager.check('reset');
    // Nothing to reset on the virtual controller.
  }

  addressToId(address: string): string | null {
    return /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/i.test(address) ? address.replaceAll(':', '').toLowerCase() : null;
  }

  // ------------------------------------------------------------ scanning

  setScanParameters(): void {
    this.manager.check('setScanParameters');
    setImmediate(() => this.emit('scanParametersSet'));
  }

  startScanning(serviceUuids: readonly string[] | undefined, allowDuplicates: boolean): void {
    this.manager.check('startScanning');
    this.endScan();
    const filter = serviceUuids ?? [];
    try {
      // The radio filters by value; hci matches noble's spelling exactly (docs/ble-libraries.md §3), so we do too.
      this.scan = this.device.central.startScan(
        {},
        (report) => {
          if (filter.length === 0 || report.serviceUuids.some((uuid) => filter.includes(uuid))) this.discovered(report);
        },
        () => {
          this.scan = undefined;
          this.emit('scanStop');
        },
      );
    } catch {
      setImmediate(() => this.emit('scanStop'));
      return;
    }
    setImmediate(() => this.emit('scanStart', !allowDuplicates));
  }

  stopScanning(): void {
    this.manager.check('stopScanning');
    this.endScan();
    setImmediate(() => this.emit('scanStop'));
  }

  private endScan(): void {
    this.scan?.stop();
    this.scan = undefined;
  }

  private discovered(report: AdvertisementReport): void {
    const advertisement = {
      localName: report.localName,
      serviceUuids: [...report.serviceUuids],
      serviceData: [],
      serviceSolicitationUuids: [],
    };
    const { id, address } = report.peripheral;
    this.emit('discover', id, address, 'random', report.connectable, advertisement, report.rssi, true);
  }

  // ------------------------------------------------------------ connections

  connect(id: string, parameters?: { readonly mtu?: number }): void {
    this.manager.check('connect');
    this.pending.get(id)?.abort();
    const controller = new AbortController();
    this.pending.set(id, controller);
    const mtu = parameters?.mtu;
    this.device.central.connect(id, { signal: controller.signal, ...(mtu === undefined ? {} : { mtu }) }).then(
      (link) => {
        if (this.pending.get(id) === controller) this.pending.delete(id);
        this.connected(id, link);
      },
      (e: unknown) => {
        if (this.pending.get(id) === controller) this.pending.delete(id);
        // A cancelled connect is settled by noble itself (cancelConnect emits the error).
        if (!controller.signal.aborted) this.emit('connect', id, asError(e));
      },
    );
  }

  cancelConnect(id: string): void {
    this.manager.check('cancelConnect');
    this.pending.get(id)?.abort();
    this.pending.delete(id);
  }

  disconnect(id: string): void {
    this.manager.check('disconnect');
    const connection = this.connections.get(id);
    if (connection) {
      void connection.link.disconnect('closed by the kiosk');
      return;
    }
    this.cancelConnect(id);
    // Nothing to end: answer anyway, as noble's disconnect callback waits for the event.
    setImmediate(() => this.emit('disconnect', id, HCI_LOCAL_HOST_TERMINATED));
  }

  updateRssi(id: string): void {
    this.manager.check('updateRssi');
    setImmediate(() => this.emit('rssiUpdate', id, -50));
  }

  private connected(id: string, link: RadioLink): void {
    const connection: Connection = { link, services: [], stopListening: [] };
    this.connections.set(id, connection);
    connection.stopListening.push(
      // Notifications are `read` events with isNotification = true (docs/ble-libraries.md §2).
      link.onNotification((event) => this.emit('read', id, event.serviceUuid, event.characteristicUuid, Buffer.from(event.data), true)),
      link.onDisconnect((info) => {
        for (const stop of connection.stopListening.splice(0)) stop();
        if (this.connections.get(id) === connection) this.connections.delete(id);
        this.emit('disconnect', id, info.hciCode);
      }),
    );
    this.emit('connect', id, null);
    // hci learns the MTU from the Exchange MTU that follows the connection.
    setImmediate(() => {
      if (this.connections.get(id) === connection) this.emit('onMtu', id, link.mtu);
    });
  }

  /** The link for `id`, or an error for the event when there is none. */
  private link(id: string): Connection | Error {
    return this.connections.get(id) ?? new Error(`peripheral ${id} is not connected`);
  }

  // ------------------------------------------------------------ GATT

  discoverServices(id: string, uuids: readonly string[] | undefined): void {
    this.manager.check('discoverServices');
    const connection = this.link(id);
    if (connection instanceof Error) {
      setImmediate(() => this.emit('servicesDiscover', id, [], connection));
      return;
    }
    const filter = uuids ?? [];
    connection.link.discover().then(
      (services) => {
        connection.services = services;
        const uuidsFound = services.map((s) => s.uuid).filter((uuid) => filter.length === 0 || filter.includes(uuid));
        this.emit('servicesDiscover', id, uuidsFound);
      },
      (e: unknown) => this.emit('servicesDiscover', id, [], asError(e)),
    );
  }

  discoverIncludedServices(id: string, serviceUuid: string): void {
    this.manager.check('discoverIncludedServices');
    setImmediate(() => this.emit('includedServicesDiscover', id, serviceUuid, []));
  }

  discoverCharacteristics(id: string, serviceUuid: string, uuids: readonly string[] | undefined): void {
    this.manager.check('discoverCharacteristics');
    const connection = this.link(id);
    const filter = uuids ?? [];
    const answer = (services: DiscoveredService[]): void => {
      const service = services.find((s) => s.uuid === serviceUuid);
      const characteristics = (service?.characteristics ?? [])
        .filter((c) => filter.length === 0 || filter.includes(c.uuid))
        .map((c) => ({ uuid: c.uuid, properties: [...c.properties] }));
      this.emit('characteristicsDiscover', id, serviceUuid, characteristics);
    };
    if (connection instanceof Error) {
      setImmediate(() => this.emit('characteristicsDiscover', id, serviceUuid, [], connection));
    } else if (connection.services.some((s) => s.uuid === serviceUuid)) {
      setImmediate(() => answer(connection.services));
    } else {
      connection.link
        .discover([serviceUuid])
        .then(answer, (e: unknown) => this.emit('characteristicsDiscover', id, serviceUuid, [], asError(e)));
    }
  }

  read(id: string, serviceUuid: string, characteristicUuid: string): void {
    this.manager.check('read');
    const connection = this.link(id);
    const request = connection instanceof Error ? Promise.reject(connection) : connection.link.read(serviceUuid, characteristicUuid);
    request.then(
      (data) => this.emit('read', id, serviceUuid, characteristicUuid, Buffer.from(data), false),
      (e: unknown) => this.emit('read', id, serviceUuid, characteristicUuid, undefined, false, asError(e)),
    );
  }

  /** `write` goes up in both modes, or `writeAsync` never resolves for Write Commands (docs/ble-libraries.md §2). */
  write(id: string, serviceUuid: string, characteristicUuid: string, data: Uint8Array, withoutResponse: boolean): void {
    this.manager.check('write');
    const connection = this.link(id);
    const request =
      connection instanceof Error
        ? Promise.reject(connection)
        : connection.link.write(serviceUuid, characteristicUuid, data, { withoutResponse });
    request.then(
      () => this.emit('write', id, serviceUuid, characteristicUuid),
      (e: unknown) => this.emit('write', id, serviceUuid, characteristicUuid, asError(e)),
    );
  }

  notify(id: string, serviceUuid: string, characteristicUuid: string, on: boolean): void {
    this.manager.check('notify');
    const connection = this.link(id);
    const request =
      connection instanceof Error
        ? Promise.reject(connection)
        : on
          ? connection.link.subscribe(serviceUuid, characteristicUuid)
          : connection.link.unsubscribe(serviceUuid, characteristicUuid);
    request.then(
      () => this.emit('notify', id, serviceUuid, characteristicUuid, on),
      (e: unknown) => this.emit('notify', id, serviceUuid, characteristicUuid, !on, asError(e)),
    );
  }

  broadcast(id: string, serviceUuid: string, characteristicUuid: string): void {
    this.manager.check('broadcast');
    setImmediate(() => this.emit('broadcast', id, serviceUuid, characteristicUuid, false));
  }

  /** The radio models the CCCD only through subscribe/unsubscribe: it is the one descriptor reported. */
  discoverDescriptors(id: string, serviceUuid: string, characteristicUuid: string): void {
    this.manager.check('discoverDescriptors');
    const connection = this.connections.get(id);
    const characteristic = connection?.services
      .find((s) => s.uuid === serviceUuid)
      ?.characteristics.find((c) => c.uuid === characteristicUuid);
    const descriptors = characteristic?.properties.includes('notify') ? ['2902'] : [];
    setImmediate(() => this.emit('descriptorsDiscover', id, serviceUuid, characteristicUuid, descriptors));
  }

  readValue(id: string, serviceUuid: string, characteristicUuid: string, descriptorUuid: string): void {
    this.manager.check('readValue');
    const error = new Error('descriptor reads are not modelled by the virtual radio');
    setImmediate(() => this.emit('valueRead', id, serviceUuid, characteristicUuid, descriptorUuid, undefined, error));
  }

  writeValue(id: string, serviceUuid: string, characteristicUuid: string, descriptorUuid: string): void {
    this.manager.check('writeValue');
    const error = new Error('descriptor writes are not modelled by the virtual radio');
    setImmediate(() => this.emit('valueWrite', id, serviceUuid, characteristicUuid, descriptorUuid, error));
  }

  readHandle(id: string, handle: number): void {
    this.manager.check('readHandle');
    setImmediate(() => this.emit('handleRead', id, handle, undefined, new Error('handle access is not modelled by the virtual radio')));
  }

  writeHandle(id: string, handle: number): void {
    this.manager.check('writeHandle');
    setImmediate(() => this.emit('handleWrite', id, handle, new Error('handle access is not modelled by the virtual radio')));
  }
}

/** The class `lib/noble.js` exports, typed as far as we use it (the deep path has no typings, docs/ble-libraries.md §5). */
type NobleConstructor = new (bindings: EventEmitter) => Noble;

/**
 * A real noble object model on the radio device's central facet. The deep import skips the package
 * index, which would construct the platform binding (and warn when there is no adapter, docs/ble-libraries.md §1).
 */
export function createVirtualNoble(device: RadioDevice, bindings: RadioNobleBindings = new RadioNobleBindings(device)): Noble {
  const NobleClass = createRequire(import.meta.url)('@stoprocent/noble/lib/noble') as NobleConstructor;
  return new NobleClass(bindings);
}
