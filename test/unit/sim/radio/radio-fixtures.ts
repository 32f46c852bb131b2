/** Small fixtures shared by the virtual radio's unit tests. */
import {
  VirtualRadio,
  type GattServerHandlers,
  type RadioDevice,
  type RadioLink,
  type RadioLogEntry,
} from '../../../../src/qa/sim/radio/virtual-radio.js';

export const SVC = '6C1E2F3A-9B8D-4E5F-A1B2-C3D4E5F60718';
export const CHR = {
  rw: '0000aaa1-0000-1000-8000-00805f9b34fb',
  notify: '0000aaa2-0000-1000-8000-00805f9b34fb',
  readOnly: '0000aaa3-0000-1000-8000-00805f9b34fb',
  wwr: '0000aaa4-0000-1000-8000-00805f9b34fb',
} as const;

export interface Pair {
  readonly radio: VirtualRadio;
  readonly phone: RadioDevice;
  readonly kiosk: RadioDevice;
  readonly logs: RadioLogEntry[];
}

/** A radio with a peripheral ("phone") serving SVC with `handlers`, advertising, and a central ("kiosk"). */
export async function pair(
  handlers: GattServerHandlers = {},
  options: { phoneMtu?: number; kioskMtu?: number; logPackets?: boolean } = {},
): Promise<Pair> {
  const radio = new VirtualRadio({ logPackets: options.logPackets ?? false });
  const logs: RadioLogEntry[] = [];
  radio.onLog((entry) => logs.push(entry));
  const phone = radio.addDevice({ name: 'phone', ...(options.phoneMtu ? { mtu: options.phoneMtu } : {}) });
  const kiosk = radio.addDevice({ name: 'kiosk', ...(options.kioskMtu ? { mtu: options.kioskMtu } : {}) });
  phone.peripheral.setServices(
    [
      {
        uuid: SVC,
        characteristics: [
          { uuid: CHR.rw, properties: ['read', 'write'] },
          { uuid: CHR.notify, properties: ['notify'] },
          { uuid: CHR.readOnly, properties: ['read'] },
          { uuid: CHR.wwr, properties: ['writeWithoutResponse', 'notify'] },
        ],
      },
    ],
    handlers,
  );
  await phone.peripheral.startAdvertising({ localName: 'phone', serviceUuids: [SVC] });
  return { radio, phone, kiosk, logs };
}

export async function connected(p: Pair): Promise<RadioLink> {
  return p.kiosk.central.connect(p.phone.id);
}

export const bytes = (n: number, seed = 0): Uint8Array => Uint8Array.from({ length: n }, (_, i) => (i + seed) & 0xff);
