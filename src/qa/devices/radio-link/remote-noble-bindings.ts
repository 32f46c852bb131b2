/**
 * The noble side of the radio link (docs/radio-link.md): noble bindings whose calls travel over a
 * loopback socket to a `RadioLinkServer`, which runs them on a device of its virtual radio, and whose
 * events come back the same way, in order. Same contract as `RadioNobleBindings` (docs/ble-libraries.md §2).
 *
 *   const bindings = await RemoteNobleBindings.connect({ port });   // hello → welcome
 *   const noble = createRemoteNoble(bindings);                      // a Noble, as withBindings() gives
 *   …
 *   noble.stop(); await bindings.close();                           // bye, socket closed
 *
 * When the link goes away without `close()` (server stopped, process gone), every peripheral noble
 * believes connected gets `disconnect` (HCI 0x08) and the adapter reads `poweredOff`; later calls are
 * dropped, so noble sees an adapter that is off. Like the mac binding, a stopped one throws on every call
 * ("<Fn>: BLEManager has already been cleaned up", binding-lifecycle.ts), here, before anything is sent.
 */
import type { EventEmitter } from 'node:events';
import { createRequire } from 'node:module';
import type { Noble } from '@stoprocent/noble';
import {
  RadioLinkBindings,
  RadioLinkError,
  handshake,
  type RadioLinkClientOptions,
  type RoleMessage,
  type Welcomed,
} from './link-client.js';
import { nobleMacManager } from '../binding-lifecycle.js';
import { CALL_ARGS, HCI_CONNECTION_TIMEOUT, decodeValue, type CallMethod } from './protocol.js';

export { RadioLinkError, type RemoteDevice } from './link-client.js';
export type RemoteNobleOptions = RadioLinkClientOptions;

export class RemoteNobleBindings extends RadioLinkBindings {
  private readonly connected = new Set<string>();
  private readonly manager = nobleMacManager();

  private constructor(welcomed: Welcomed) {
    super(welcomed);
  }

  /** Connects, says hello and waits for the server's welcome. */
  static async connect(options: RemoteNobleOptions): Promise<RemoteNobleBindings> {
    return new RemoteNobleBindings(await handshake(options, { role: 'noble', requireRole: false, framesAfterWelcome: 'fail' }));
  }

  // ------------------------------------------------------------ the binding contract (calls)

  private call(method: CallMethod, args: readonly unknown[]): void {
    this.link.call(method, CALL_ARGS[method].def.items.length, args);
  }

  start(): void {
    if (this.manager.start()) this.call('start', []);
  }
  init(): void {
    if (this.manager.start()) this.call('init', []);
  }
  stop(): void {
    if (this.manager.stop()) this.call('stop', []);
  }
  reset(): void {
    this.manager.check('reset');
    this.call('reset', []);
  }
  setScanParameters(interval?: number, window?: number): void {
    this.manager.check('setScanParameters');
    this.call('setScanParameters', [interval, window]);
  }
  startScanning(serviceUuids: readonly string[] | undefined, allowDuplicates: boolean): void {
    this.manager.check('startScanning');
    this.call('startScanning', [serviceUuids, allowDuplicates]);
  }
  stopScanning(): void {
    this.manager.check('stopScanning');
    this.call('stopScanning', []);
  }
  connect(id: string, parameters?: { readonly mtu?: number }): void {
    this.manager.check('connect');
    this.call('connect', [id, parameters?.mtu === undefined ? undefined : { mtu: parameters.mtu }]);
  }
  cancelConnect(id: string): void {
    this.manager.check('cancelConnect');
    this.call('cancelConnect', [id]);
  }
  disconnect(id: string): void {
    this.manager.check('disconnect');
    this.call('disconnect', [id]);
  }
  updateRssi(id: string): void {
    this.manager.check('updateRssi');
    this.call('updateRssi', [id]);
  }
  discoverServices(id: string, uuids: readonly string[] | undefined): void {
    this.manager.check('discoverServices');
    this.call('discoverServices', [id, uuids]);
  }
  discoverIncludedServices(id: string, serviceUuid: string, uuids?: readonly string[]): void {
    this.manager.check('discoverIncludedServices');
    this.call('discoverIncludedServices', [id, serviceUuid, uuids]);
  }
  discoverCharacteristics(id: string, serviceUuid: string, uuids: readonly string[] | undefined): void {
    this.manager.check('discoverCharacteristics');
    this.call('discoverCharacteristics', [id, serviceUuid, uuids]);
  }
  read(id: string, serviceUuid: string, characteristicUuid: string): void {
    this.manager.check('read');
    this.call('read', [id, serviceUuid, characteristicUuid]);
  }
  write(id: string, serviceUuid: string, characteristicUuid: string, data: Uint8Array, withoutResponse: boolean): void {
    this.manager.check('write');
    this.call('write', [id, serviceUuid, characteristicUuid, data, withoutResponse]);
  }
  notify(id: string, serviceUuid: string, characteristicUuid: string, on: boolean): void {
    this.manager.check('notify');
    this.call('notify', [id, serviceUuid, characteristicUuid, on]);
  }
  broadcast(id: string, serviceUuid: string, characteristicUuid: string, broadcast: boolean): void {
    this.manager.check('broadcast');
    this.call('broadcast', [id, serviceUuid, characteristicUuid, broadcast]);
  }
  discoverDescriptors(id: string, serviceUuid: string, characteristicUuid: string): void {
    this.manager.check('discoverDescriptors');
    this.call('discoverDescriptors', [id, serviceUuid, characteristicUuid]);
  }
  readValue(id: string, serviceUuid: string, characteristicUuid: string, descriptorUuid: string): void {
    this.manager.check('readValue');
    this.call('readValue', [id, serviceUuid, characteristicUuid, descriptorUuid]);
  }
  writeValue(id: string, serviceUuid: string, characteristicUuid: string, descriptorUuid: string, data: Uint8Array): void {
    this.manager.check('writeValue');
    this.call('writeValue', [id, serviceUuid, characteristicUuid, descriptorUuid, data]);
  }
  readHandle(id: string, handle: number): void {
    this.manager.check('readHandle');
    this.call('readHandle', [id, handle]);
  }
  writeHandle(id: string, handle: number, data: Uint8Array, withoutResponse?: boolean): void {
    this.manager.check('writeHandle');
    this.call('writeHandle', [id, handle, data, withoutResponse]);
  }

  /** Local, as hci's: noble's ids are addresses without colons. */
  addressToId(address: string): string | null {
    return /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/i.test(address) ? address.replaceAll(':', '').toLowerCase() : null;
  }

  // ------------------------------------------------------------ events

  protected onLinkMessage(message: RoleMessage): void {
    switch (message.type) {
      case 'event': {
        const args = message.args.map(decodeValue);
        const [id, error] = args;
        if (typeof id === 'string') {
          if (message.name === 'connect' && error === undefined) this.connected.add(id);
          if (message.name === 'disconnect') this.connected.delete(id);
        }
        this.emit(message.name, ...args);
        return;
      }
      case 'acl':
      case 'acl_open':
      case 'acl_close':
        this.link.fail(new RadioLinkError('bad_message', `${message.type} is for the bleno role`));
        return;
    }
  }

  /** The socket is gone: noble learns that its links and its adapter are gone too. */
  protected onLinkLost(): void {
    for (const id of [...this.connected]) this.emit('disconnect', id, HCI_CONNECTION_TIMEOUT);
    this.connected.clear();
    this.emit('stateChange', 'poweredOff');
  }
}

/** The class `lib/noble.js` exports (the deep path has no typings, docs/ble-libraries.md §5). */
type NobleConstructor = new (bindings: EventEmitter) => Noble;

/** A real noble object model on remote bindings, without loading the package index (docs/ble-libraries.md §1). */
export function createRemoteNoble(bindings: RemoteNobleBindings): Noble {
  const NobleClass = createRequire(import.meta.url)('@stoprocent/noble/lib/noble') as NobleConstructor;
  return new NobleClass(bindings);
}
