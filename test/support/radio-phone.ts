/**
 * A scripted phone on the virtual radio, for tests of the radio, the virtual BLE ports and the relay
 * through them: a GATT server (mdoc peripheral server mode, the kiosk is central) and a GATT client (mdoc
 * central client mode, the kiosk is peripheral). No mdoc logic: tests script what the phone does.
 */
import type {
  DisconnectInfo,
  GattCharacteristicDefinition,
  NotificationEvent,
  RadioDevice,
  RadioLink,
  ReadRequest,
  ServerConnection,
  VirtualRadio,
  WriteRequest,
} from '../../src/qa/sim/radio/virtual-radio.js';

/** ISO 18013-5 characteristic UUIDs, mdoc peripheral server mode (phone = GATT server). */
export const SERVER_MODE = {
  state: '00000001-A123-48CE-896B-4C76973373E6',
  c2s: '00000002-A123-48CE-896B-4C76973373E6',
  s2c: '00000003-A123-48CE-896B-4C76973373E6',
} as const;

/** ISO 18013-5 characteristic UUIDs, mdoc central client mode (kiosk = GATT server). */
export const CLIENT_MODE = {
  state: '00000005-A123-48CE-896B-4C76973373E6',
  c2s: '00000006-A123-48CE-896B-4C76973373E6',
  s2c: '00000007-A123-48CE-896B-4C76973373E6',
  ident: '00000008-A123-48CE-896B-4C76973373E6',
} as const;

export const stack = (uuid: string): string => uuid.replaceAll('-', '').toLowerCase();
export const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString('hex');

/** One setImmediate turn, `n` times: lets the radio deliver what is queued. */
export async function turns(n = 1): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/** Polls `predicate` every turn until it holds; fails after `timeoutMs`. */
export async function until(predicate: () => boolean, timeoutMs = 2_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise<void>((resolve) => setTimeout(resolve, 1));
  }
}

/** An awaitable FIFO of things that happened. */
export class Inbox<T> {
  readonly all: T[] = [];
  private taken = 0;
  private waiters: (() => void)[] = [];

  push(item: T): void {
    this.all.push(item);
    for (const waiter of this.waiters.splice(0)) waiter();
  }

  /** The next item not taken yet; rejects after `timeoutMs`. */
  async next(timeoutMs = 2_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    while (this.taken >= this.all.length) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error('Inbox: nothing arrived in time');
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return this.all[this.taken++] as T;
  }
}

export interface PhoneServerOptions {
  readonly serviceUuid: string;
  readonly name?: string;
  readonly mtu?: number;
  /** Default: the ISO peripheral-server-mode table (state notify+wwr, c2s wwr, s2c notify). */
  readonly characteristics?: readonly GattCharacteristicDefinition[];
  /** Answers reads (default: empty value). */
  readonly onRead?: (request: ReadRequest) => Uint8Array | Promise<Uint8Array>;
}

export const SERVER_MODE_TABLE: readonly GattCharacteristicDefinition[] = [
  { uuid: SERVER_MODE.state, properties: ['notify', 'writeWithoutResponse'] },
  { uuid: SERVER_MODE.c2s, properties: ['writeWithoutResponse'] },
  { uuid: SERVER_MODE.s2c, properties: ['notify'] },
];

/** The phone as GATT server: advertises its service and records what the central does. */
export class PhoneServer {
  readonly device: RadioDevice;
  readonly events = new Inbox<string>();
  readonly writes = new Inbox<WriteRequest>();
  readonly disconnects = new Inbox<DisconnectInfo>();
  connection: ServerConnection | undefined;

  constructor(
    radio: VirtualRadio,
    readonly options: PhoneServerOptions,
  ) {
    this.device = radio.addDevice({ name: options.name ?? 'phone', ...(options.mtu ? { mtu: options.mtu } : {}) });
  }

  get serviceUuid(): string {
    return this.options.serviceUuid;
  }

  async start(): Promise<void> {
    const { onRead } = this.options;
    this.device.peripheral.setServices([{ uuid: this.serviceUuid, characteristics: this.options.characteristics ?? SERVER_MODE_TABLE }], {
      onConnect: (connection) => {
        this.connection = connection;
        this.events.push('connect');
      },
      onDisconnect: (_connection, info) => {
        this.connection = undefined;
        this.events.push(`disconnect:${info.reason}`);
        this.disconnects.push(info);
      },
      onSubscribe: (request) => this.events.push(`subscribe:${request.characteristicUuid}`),
      onUnsubscribe: (request) => this.events.push(`unsubscribe:${request.characteristicUuid}`),
      onWrite: (request) => {
        this.events.push(`write:${request.characteristicUuid}:${hex(request.data)}`);
        this.writes.push(request);
      },
      onRead: (request) => {
        this.events.push(`read:${request.characteristicUuid}:${request.offset}`);
        return onRead ? onRead(request) : new Uint8Array(0);
      },
    });
    await this.device.peripheral.startAdvertising({ localName: 'phone', serviceUuids: [this.serviceUuid] });
  }

  private get handle(): number {
    if (!this.connection) throw new Error('PhoneServer: no central connected');
    return this.connection.handle;
  }

  notify(characteristicUuid: string, data: Uint8Array): Promise<void> {
    return this.device.peripheral.notify(this.handle, this.serviceUuid, characteristicUuid, data);
  }

  isSubscribed(characteristicUuid: string): boolean {
    return this.connection !== undefined && this.device.peripheral.isSubscribed(this.handle, this.serviceUuid, characteristicUuid);
  }

  disconnect(reason?: string): Promise<void> {
    return this.device.peripheral.disconnect(this.handle, reason);
  }
}

/** The phone as GATT client: finds the kiosk's service, connects and drives it. */
export class PhoneClient {
  readonly device: RadioDevice;
  readonly notifications = new Inbox<NotificationEvent>();
  readonly disconnects = new Inbox<DisconnectInfo>();
  private current: RadioLink | undefined;
  serviceUuid = '';

  constructor(radio: VirtualRadio, name = 'phone', mtu?: number) {
    this.device = radio.addDevice({ name, ...(mtu ? { mtu } : {}) });
  }

  get link(): RadioLink {
    if (!this.current) throw new Error('PhoneClient: not connected');
    return this.current;
  }

  async connect(serviceUuid: string, timeoutMs = 2_000): Promise<RadioLink> {
    const signal = AbortSignal.timeout(timeoutMs);
    const report = await this.device.central.scanFor(serviceUuid, { signal });
    const link = await this.device.central.connect(report.peripheral.id, { signal });
    this.serviceUuid = serviceUuid;
    this.current = link;
    link.onNotification((event) => this.notifications.push(event));
    link.onDisconnect((info) => this.disconnects.push(info));
    return link;
  }

  read(characteristicUuid: string): Promise<Uint8Array> {
    return this.link.read(this.serviceUuid, characteristicUuid);
  }

  write(characteristicUuid: string, data: Uint8Array): Promise<void> {
    return this.link.write(this.serviceUuid, characteristicUuid, data, { withoutResponse: true });
  }

  subscribe(characteristicUuid: string): Promise<void> {
    return this.link.subscribe(this.serviceUuid, characteristicUuid);
  }

  unsubscribe(characteristicUuid: string): Promise<void> {
    return this.link.unsubscribe(this.serviceUuid, characteristicUuid);
  }
}

/** ISO/IEC 18013-5 §8.3.3.1.1.6 chunking: [0x01 more | 0x00 last][payload ≤ size − 1]. */
export function chunk(message: Uint8Array, size: number): Uint8Array[] {
  const room = size - 1;
  const out: Uint8Array[] = [];
  for (let at = 0; at < message.length || out.length === 0; at += room) {
    const part = message.subarray(at, at + room);
    const last = at + room >= message.length;
    out.push(Uint8Array.from([last ? 0x00 : 0x01, ...part]));
  }
  return out;
}

/** Reassembles chunks; returns the message once the last chunk is in, else undefined. */
export class Reassembler {
  private parts: Uint8Array[] = [];
  push(c: Uint8Array): Uint8Array | undefined {
    const flag = c[0];
    if (flag !== 0x00 && flag !== 0x01) throw new Error(`bad chunk flag ${String(flag)}`);
    this.parts.push(c.subarray(1));
    if (flag === 0x01) return undefined;
    const message = Buffer.concat(this.parts);
    this.parts = [];
    return new Uint8Array(message);
  }
}
