/**
 * The kiosk's `BleCentral` port on the virtual radio: scan for the mode's service, connect, discover,
 * check the profile's characteristics, subscribe to every one whose spec lists `notify`. Stands where the
 * noble adapter stands, so the relay core runs end to end with the virtual phone and no hardware.
 */
import type { CharacteristicSpec } from '../../common/protocol/messages.js';
import { uuidKey } from '../../common/protocol/uuid.js';
import { RadioError, type DiscoveredCharacteristic, type RadioDevice, type RadioLink } from '../sim/radio/virtual-radio.js';
import {
  BleSetupError,
  BleValueTooLargeError,
  type Availability,
  type BleCentral,
  type BleCentralHandlers,
  type BleCentralLink,
  type GattProfile,
} from '../../devices/ports.js';
import {
  PROPERTY_OF,
  VirtualPort,
  abortable,
  abortedError,
  errorMessage,
  profileCharacteristics,
  type CharacteristicName,
} from './support.js';

export interface VirtualBleCentralOptions {
  readonly availability?: Availability;
  /** Scan-and-connect attempts when the phone is unreachable or refuses (default 3), as real adapters retry. */
  readonly connectAttempts?: number;
  /** ATT MTU to ask for (default: the device's preferred MTU). */
  readonly mtu?: number;
}

export class VirtualBleCentral extends VirtualPort implements BleCentral {
  constructor(
    device: RadioDevice,
    private readonly options: VirtualBleCentralOptions = {},
  ) {
    super(device, options.availability);
  }

  async connect(profile: GattProfile, handlers: BleCentralHandlers, signal: AbortSignal): Promise<BleCentralLink> {
    const availability = this.availability();
    if (!availability.usable) throw new BleSetupError(availability.reason ?? 'unavailable');
    if (signal.aborted) throw abortedError('BLE central connect');
    const link = await this.scanAndConnect(profile.serviceUuid, signal);
    try {
      return await this.setUp(link, profile, handlers, signal);
    } catch (e) {
      await link.disconnect('setup abandoned by the kiosk');
      throw e;
    }
  }

  private async scanAndConnect(serviceUuid: string, signal: AbortSignal): Promise<RadioLink> {
    const attempts = Math.max(1, this.options.connectAttempts ?? 3);
    let last = '';
    for (let attempt = 1; attempt <= attempts; attempt++) {
      let peripheralId: string;
      try {
        peripheralId = (await this.device.central.scanFor(serviceUuid, { signal })).peripheral.id;
      } catch (e) {
        throw this.setupError(e, signal, 'scan');
      }
      try {
        return await this.device.central.connect(peripheralId, { signal, ...(this.options.mtu ? { mtu: this.options.mtu } : {}) });
      } catch (e) {
        const retry = e instanceof RadioError && (e.code === 'unreachable' || e.code === 'connection_refused');
        if (!retry || signal.aborted) throw this.setupError(e, signal, 'connect');
        last = errorMessage(e);
      }
    }
    throw new BleSetupError(`connect failed after ${attempts} attempts: ${last}`);
  }

  /** Discovery, the profile check and the subscriptions, on a connected link. */
  private async setUp(link: RadioLink, profile: GattProfile, handlers: BleCentralHandlers, signal: AbortSignal): Promise<BleCentralLink> {
    const serviceKey = uuidKey(profile.serviceUuid);
    const wrapper = new VirtualCentralLink(link, profile, handlers);
    let services;
    try {
      services = await abortable(link.discover([profile.serviceUuid]), signal, 'BLE central discovery');
    } catch (e) {
      throw this.setupError(e, signal, 'discovery', link);
    }
    const service = services.find((s) => uuidKey(s.uuid) === serviceKey);
    if (!service) throw new BleSetupError(`service ${profile.serviceUuid} not found on the phone`);
    const found = new Map<CharacteristicName, DiscoveredCharacteristic>();
    for (const { name, spec } of profileCharacteristics(profile)) {
      const characteristic = service.characteristics.find((c) => uuidKey(c.uuid) === uuidKey(spec.uuid));
      if (!characteristic) throw new BleSetupError(`characteristic ${name} (${spec.uuid}) not found on the phone`);
      const missing = spec.operations.map((op) => PROPERTY_OF[op]).filter((p) => !characteristic.properties.includes(p));
      if (missing.length > 0) throw new BleSetupError(`characteristic ${name} (${spec.uuid}) lacks ${missing.join(', ')} on the phone`);
      found.set(name, characteristic);
    }
    wrapper.bind(service.uuid, found);
    for (const { name, spec } of profileCharacteristics(profile)) {
      const characteristic = found.get(name);
      if (!characteristic || !spec.operations.includes('notify')) continue;
      try {
        await abortable(link.subscribe(service.uuid, characteristic.uuid), signal, 'BLE central subscribe');
      } catch (e) {
        throw this.setupError(e, signal, `subscribe to ${name}`, link);
      }
    }
    if (signal.aborted) throw abortedError('BLE central connect');
    wrapper.ready();
    return wrapper;
  }

  /** Aborts stay aborts (the core stops anyway); anything else is a setup failure with a reason. */
  private setupError(e: unknown, signal: AbortSignal, stage: string, link?: RadioLink): Error {
    if (signal.aborted) return abortedError(`BLE central ${stage}`);
    if (e instanceof BleSetupError) return e;
    if (e instanceof RadioError && e.code === 'disconnected' && link?.disconnectInfo) {
      return new BleSetupError(`the phone disconnected during ${stage}: ${link.disconnectInfo.reason}`);
    }
    if (e instanceof RadioError && e.code === 'powered_off') return new BleSetupError('powered_off');
    return new BleSetupError(`${stage} failed: ${errorMessage(e)}`);
  }
}

/** The link handed to the core. Notifications flow from the first subscription on (the core buffers them). */
class VirtualCentralLink implements BleCentralLink {
  private serviceUuid = '';
  private characteristics = new Map<string, { readonly uuid: string; readonly spec: CharacteristicSpec }>();
  private isReady = false;
  private closed = false;
  private disconnected = false;
  private droppedBeforeReady: string | undefined;
  private readonly stopListening: (() => void)[] = [];

  constructor(
    private readonly link: RadioLink,
    private readonly profile: GattProfile,
    private readonly handlers: BleCentralHandlers,
  ) {
    const serviceKey = uuidKey(profile.serviceUuid);
    this.stopListening.push(
      link.onNotification((event) => {
        if (this.closed || uuidKey(event.serviceUuid) !== serviceKey) return;
        handlers.onNotification(event.characteristicUuid, event.data);
      }),
      link.onDisconnect((info) => {
        if (this.closed) return;
        if (this.isReady) this.reportDisconnect(info.reason);
        else this.droppedBeforeReady = info.reason;
      }),
    );
  }

  get mtu(): number {
    return this.link.mtu;
  }

  bind(serviceUuid: string, found: ReadonlyMap<CharacteristicName, DiscoveredCharacteristic>): void {
    this.serviceUuid = serviceUuid;
    for (const { name, spec } of profileCharacteristics(this.profile)) {
      const characteristic = found.get(name);
      if (characteristic) this.characteristics.set(uuidKey(spec.uuid), { uuid: characteristic.uuid, spec });
    }
  }

  /** Handed to the core: a drop between the last subscription and now is reported at once. */
  ready(): void {
    this.isReady = true;
    const reason = this.droppedBeforeReady;
    if (reason !== undefined) queueMicrotask(() => this.reportDisconnect(reason));
  }

  write(characteristicUuid: string, data: Uint8Array): Promise<void> {
    if (this.closed) return Promise.reject(new Error('BLE central link closed'));
    const target = this.characteristics.get(uuidKey(characteristicUuid));
    if (!target) return Promise.reject(new Error(`${characteristicUuid} is not a characteristic of the service`));
    if (!target.spec.operations.includes('write_without_response')) {
      return Promise.reject(new Error(`${characteristicUuid}: its operations do not include write_without_response`));
    }
    const tooLarge = BleValueTooLargeError.check('write-without-response', data.length, this.link.mtu);
    if (tooLarge) return Promise.reject(tooLarge);
    return this.link.write(this.serviceUuid, target.uuid, data, { withoutResponse: true });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const stop of this.stopListening.splice(0)) stop();
    await this.link.disconnect('closed by the kiosk').catch(() => undefined);
  }

  private reportDisconnect(reason: string): void {
    if (this.disconnected || this.closed) return;
    this.disconnected = true;
    this.handlers.onDisconnect(reason);
  }
}
