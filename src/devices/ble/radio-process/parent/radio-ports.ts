/**
 * The ports the kiosk sees, `BleCentral` and `BlePeripheral`, served as proxies over the radio process:
 * each call is a request to the child with an id, and each open link or session is kept in the open links
 * so that what the child says of it reaches its handlers. A value no ATT PDU can carry is refused here,
 * before it crosses (the child's adapter would say the same).
 */
import {
  ATT_MAX_VALUE_BYTES,
  BleValueTooLargeError,
  type Availability,
  type BleCentral,
  type BleCentralHandlers,
  type BleCentralLink,
  type BlePeripheral,
  type BlePeripheralSession,
  type GattProfile,
  type PeripheralEvent,
} from '../../../ports.js';
import type { ParentMessage } from '../protocol.js';
import type { OpenLinks } from './open-links.js';
import type { RadioOk, RequestKind } from './pending-requests.js';
import type { RoleAvailability } from './role-availability.js';

/** How a proxy reaches the child: fresh ids, and requests that wait for their reply. */
export interface RadioRequester {
  id(): number;
  request(kind: RequestKind, message: ParentMessage & { id: number }, signal?: AbortSignal, what?: string): Promise<RadioOk>;
}

function tooLarge(operation: BleValueTooLargeError['operation'], data: Uint8Array, mtu: number | undefined): Error | undefined {
  return data.byteLength > ATT_MAX_VALUE_BYTES ? BleValueTooLargeError.check(operation, data.byteLength, mtu) : undefined;
}

export class RadioCentral implements BleCentral {
  constructor(
    private readonly radio: RadioRequester,
    private readonly links: OpenLinks,
    private readonly roles: RoleAvailability,
  ) {}

  availability(): Availability {
    return this.roles.of('central');
  }

  onAvailabilityChange(listener: (a: Availability) => void): () => void {
    return this.roles.on('central', listener);
  }

  async connect(profile: GattProfile, handlers: BleCentralHandlers, signal: AbortSignal): Promise<BleCentralLink> {
    const { radio, links } = this;
    const id = radio.id();
    const entry = links.addLink(id, handlers);
    let ok;
    try {
      ok = await radio.request(
        'setup',
        { t: 'connect', id, profile: { serviceUuid: profile.serviceUuid, characteristics: profile.characteristics } },
        signal,
        'BLE connect',
      );
    } catch (e) {
      links.dropLink(id);
      throw e;
    }
    entry.handedOut = true;
    const mtu = ok.mtu;
    return {
      ...(mtu === undefined ? {} : { mtu }),
      write(uuid, data, writeSignal) {
        const refused = tooLarge('write-without-response', data, mtu);
        if (refused) return Promise.reject(refused);
        return radio.request('io', { t: 'write', id: radio.id(), link: id, uuid, data }, writeSignal, 'BLE write').then(() => undefined);
      },
      flush(flushSignal) {
        return radio.request('io', { t: 'flush', id: radio.id(), link: id }, flushSignal, 'BLE flush').then(() => undefined);
      },
      async close() {
        entry.ended = true;
        await radio.request('close', { t: 'close', id: radio.id(), link: id }).catch(() => undefined);
        links.dropLink(id);
      },
    };
  }
}

export class RadioPeripheral implements BlePeripheral {
  constructor(
    private readonly radio: RadioRequester,
    private readonly links: OpenLinks,
    private readonly roles: RoleAvailability,
  ) {}

  availability(): Availability {
    return this.roles.of('peripheral');
  }

  onAvailabilityChange(listener: (a: Availability) => void): () => void {
    return this.roles.on('peripheral', listener);
  }

  async advertise(profile: GattProfile, onEvent: (event: PeripheralEvent) => void, signal: AbortSignal): Promise<BlePeripheralSession> {
    const { radio, links } = this;
    const id = radio.id();
    links.addSession(id, onEvent);
    try {
      await radio.request(
        'setup',
        { t: 'advertise', id, profile: { serviceUuid: profile.serviceUuid, characteristics: profile.characteristics } },
        signal,
        'BLE advertise',
      );
    } catch (e) {
      links.dropSession(id);
      throw e;
    }
    return {
      notify(uuid, data, notifySignal) {
        const refused = tooLarge('notification', data, undefined);
        if (refused) return Promise.reject(refused);
        return radio
          .request('io', { t: 'notify', id: radio.id(), session: id, uuid, data }, notifySignal, 'BLE notify')
          .then(() => undefined);
      },
      flush(flushSignal) {
        return radio.request('io', { t: 'flush', id: radio.id(), link: id }, flushSignal, 'BLE flush').then(() => undefined);
      },
      async close() {
        links.dropSession(id);
        await radio.request('close', { t: 'close', id: radio.id(), link: id }).catch(() => undefined);
      },
    };
  }
}
