/**
 * The bleno side of the radio link (docs/radio-link.md, role "bleno"): bleno bindings whose GATT server is
 * bleno's own `hci-socket/gatt.js` in this process, fed the ATT PDUs a `RadioLinkServer` sends for each
 * connection of its radio device, while GAP (advertising, the radio's view of the table, disconnect) goes
 * to the server as calls. Same contract as `BlenoRadioBindings` (docs/ble-libraries.md §2); the two share one
 * implementation (`BlenoGattSide` here, `RadioPeripheralSide` in the server).
 *
 *   const bindings = await RemoteBlenoBindings.connect({ port });   // hello → welcome
 *   const bleno = createRemoteBleno(bindings);                      // a Bleno on the link
 *   …
 *   bleno.stop(); await bindings.close();                           // bye, socket closed
 *
 * When the link goes away without `close()`, every connection bleno knows gets `disconnect` and the
 * adapter reads `poweredOff`; later calls are dropped.
 */
import { createRequire } from 'node:module';
import type { Bleno, BlenoBindings, BlenoConnection, BlenoConstructor, BlenoPrimaryService } from '../../../devices/ble/bleno-types.js';
import { BlenoGattSide, toRadioServices } from '../bleno-radio-bindings.js';
import { RadioLinkBindings, handshake, type RadioLinkClientOptions, type RoleMessage, type Welcomed } from './link-client.js';
import { blenoMacManager } from '../binding-lifecycle.js';
import { BLENO_CALL_ARGS, decodeValue, type BlenoCallMethod } from './protocol.js';

export type RemoteBlenoOptions = RadioLinkClientOptions;

export class RemoteBlenoBindings extends RadioLinkBindings implements BlenoBindings {
  private readonly gatt: BlenoGattSide;
  /** Open connections: handle → central address (for the disconnects a lost link implies). */
  private readonly connections = new Map<number, string>();
  /** As the mac binding's: every call outside init…stop throws (binding-lifecycle.ts). */
  private readonly manager = blenoMacManager();

  private constructor(welcomed: Welcomed) {
    super(welcomed);
    this.gatt = new BlenoGattSide(
      (handle, data) => this.link.send({ type: 'acl', handle, pdu: { $bytes: data.toString('base64') } }),
      (mtu) => this.emit('mtuChange', mtu),
    );
  }

  /** Connects, says hello (role bleno) and waits for the server's welcome. */
  static async connect(options: RemoteBlenoOptions): Promise<RemoteBlenoBindings> {
    return new RemoteBlenoBindings(await handshake(options, { role: 'bleno', requireRole: true, framesAfterWelcome: 'deliver' }));
  }

  private call(method: BlenoCallMethod, args: readonly unknown[]): void {
    this.link.call(method, BLENO_CALL_ARGS[method].def.items.length, args);
  }

  // ------------------------------------------------------------ the binding contract (calls)

  init(): void {
    if (this.manager.start()) this.call('init', []);
  }

  startAdvertising(name: string, serviceUuids: readonly string[]): void {
    this.manager.check('startAdvertising');
    this.gatt.updateName(name);
    this.call('startAdvertising', [name, serviceUuids]);
  }

  stopAdvertising(): void {
    this.manager.check('stopAdvertising');
    this.call('stopAdvertising', []);
  }

  /** bleno's table stays here; the radio learns UUIDs and properties. `servicesSet` is synchronous, as hci's. */
  setServices(services: readonly BlenoPrimaryService[]): void {
    this.manager.check('setServices');
    try {
      this.gatt.setServices(services);
    } catch (e) {
      this.emit('servicesSet', e instanceof Error ? e : new Error(String(e)));
      return;
    }
    this.call('setServices', [toRadioServices(services)]);
    this.emit('servicesSet');
  }

  disconnect(handle?: BlenoConnection | null): void {
    this.manager.check('disconnect');
    this.call('disconnect', [typeof handle === 'number' ? handle : null]);
  }

  updateRssi(): void {
    this.manager.check('updateRssi');
    this.call('updateRssi', []);
  }

  stop(): void {
    if (this.manager.stop()) this.call('stop', []);
  }

  // ------------------------------------------------------------ frames from the server

  protected onLinkMessage(message: RoleMessage): void {
    switch (message.type) {
      case 'acl_open':
        this.connections.set(message.handle, message.address);
        this.gatt.open(message.handle, message.mtu);
        return;
      case 'acl':
        this.gatt.deliver(message.handle, Buffer.from(message.pdu.$bytes, 'base64'));
        return;
      case 'acl_close':
        this.gatt.close(message.handle);
        return;
      case 'event': {
        const args = message.args.map(decodeValue);
        if (message.name === 'disconnect' && typeof args[1] === 'number') this.connections.delete(args[1]);
        this.emit(message.name, ...args);
        return;
      }
    }
  }

  /** The socket is gone: bleno learns that its connections and its adapter are gone too. */
  protected onLinkLost(): void {
    this.gatt.closeAll();
    for (const [handle, address] of [...this.connections]) this.emit('disconnect', address, handle);
    this.connections.clear();
    this.emit('stateChange', 'poweredOff');
  }
}

/** A real bleno object model on remote bindings (no native code, no package index). */
export function createRemoteBleno(bindings: RemoteBlenoBindings): Bleno {
  const BlenoClass = createRequire(import.meta.url)('@stoprocent/bleno/lib/bleno') as BlenoConstructor;
  return new BlenoClass(bindings);
}
