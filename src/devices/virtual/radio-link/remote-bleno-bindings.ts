/**
 * The bleno side of the radio link (docs/radio-link.md, role "bleno"): bleno bindings whose GATT server is
 * bleno's own `hci-socket/gatt.js` in this process, fed the ATT PDUs a `RadioLinkServer` sends for each
 * connection of its radio device, while GAP (advertising, the radio's view of the table, disconnect) goes
 * to the server as calls. Same contract as `BlenoRadioBindings` (ble.md §2.5); the two share one
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
import { EventEmitter } from 'node:events';
import { createRequire } from 'node:module';
import { connect as netConnect, type Socket } from 'node:net';
import type { Bleno, BlenoBindings, BlenoConnection, BlenoConstructor, BlenoPrimaryService } from '../../ble/bleno-types.js';
import { BlenoGattSide, toRadioServices } from '../bleno-radio-bindings.js';
import {
  BLENO_CALL_ARGS,
  LineReader,
  PROTOCOL_NAME,
  PROTOCOL_VERSION,
  decodeValue,
  describeIssues,
  encodeValue,
  frame,
  parseJson,
  serverMessageSchema,
  type BlenoCallMethod,
  type ClientMessage,
  type ServerMessage,
  type Wire,
} from './protocol.js';
import { RadioLinkError, type RemoteDevice, type RemoteNobleOptions } from './remote-noble-bindings.js';

export type RemoteBlenoOptions = RemoteNobleOptions;

export class RemoteBlenoBindings extends EventEmitter implements BlenoBindings {
  private readonly gatt: BlenoGattSide;
  /** Open connections: handle → central address (for the disconnects a lost link implies). */
  private readonly connections = new Map<number, string>();
  private closing = false;
  private lost = false;
  readonly closed: Promise<void>;
  lastError: RadioLinkError | undefined;

  private constructor(
    private readonly socket: Socket,
    readonly device: RemoteDevice,
    private readonly reader: LineReader,
    rest: readonly string[],
  ) {
    super();
    this.gatt = new BlenoGattSide(
      (handle, data) => this.send({ type: 'acl', handle, pdu: { $bytes: data.toString('base64') } }),
      (mtu) => this.emit('mtuChange', mtu),
    );
    this.closed = new Promise((resolve) => socket.once('close', () => resolve()));
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', (e) => this.failed(new RadioLinkError('socket_error', e.message)));
    socket.once('close', () => this.linkGone());
    // Frames that came with the welcome (none expected: the server waits for calls).
    if (rest.length > 0) setImmediate(() => this.onLines(rest));
  }

  /** Connects, says hello (role bleno) and waits for the server's welcome. */
  static async connect(options: RemoteBlenoOptions): Promise<RemoteBlenoBindings> {
    const host = options.host ?? '127.0.0.1';
    const socket = netConnect({ host, port: options.port });
    socket.setNoDelay(true);
    const reader = new LineReader();
    const signal = AbortSignal.any([AbortSignal.timeout(options.timeoutMs ?? 5_000), ...(options.signal ? [options.signal] : [])]);
    try {
      const [device, rest] = await new Promise<[RemoteDevice, string[]]>((resolve, reject) => {
        const cleanup = (): void => {
          signal.removeEventListener('abort', onAbort);
          socket.off('error', onError);
          socket.off('close', onClose);
          socket.off('data', onData);
        };
        const fail = (e: Error): void => {
          cleanup();
          reject(e);
        };
        const onAbort = (): void => fail(new RadioLinkError('timeout', `no welcome from ${host}:${options.port}`));
        const onError = (e: Error): void => fail(new RadioLinkError('socket_error', e.message));
        const onClose = (): void => fail(new RadioLinkError('closed', 'the server closed the connection before welcome'));
        const onData = (chunk: Buffer): void => {
          let lines: string[];
          try {
            lines = reader.push(chunk);
          } catch (e) {
            fail(new RadioLinkError('frame_too_large', e instanceof Error ? e.message : String(e)));
            return;
          }
          const [first, ...others] = lines;
          if (first === undefined) return;
          const message = parseServerMessage(first);
          if (message instanceof RadioLinkError) fail(message);
          else if (message.type === 'welcome' && message.role === 'bleno') {
            cleanup();
            resolve([message.device, others]);
          } else if (message.type === 'error') fail(new RadioLinkError(message.code, message.message));
          else fail(new RadioLinkError('bad_message', `expected a bleno welcome, got ${message.type}`));
        };
        if (signal.aborted) {
          onAbort();
          return;
        }
        signal.addEventListener('abort', onAbort);
        socket.on('error', onError);
        socket.on('close', onClose);
        socket.on('data', onData);
        socket.once('connect', () => {
          const hello: ClientMessage = {
            type: 'hello',
            protocol: PROTOCOL_NAME,
            version: PROTOCOL_VERSION,
            role: 'bleno',
            ...(options.name === undefined ? {} : { name: options.name }),
            ...(options.device === undefined ? {} : { device: options.device }),
          };
          socket.write(frame(hello));
        });
      });
      return new RemoteBlenoBindings(socket, device, reader, rest);
    } catch (e) {
      socket.destroy();
      throw e;
    }
  }

  /** Says bye and closes the socket; resolves once it is closed. Idempotent. */
  async close(timeoutMs = 1_000): Promise<void> {
    if (!this.closing && !this.socket.destroyed) {
      this.closing = true;
      if (!this.socket.writableEnded) this.socket.end(frame({ type: 'bye', reason: 'client closing' }));
      const timer = setTimeout(() => this.socket.destroy(), timeoutMs);
      await this.closed;
      clearTimeout(timer);
    }
    await this.closed;
  }

  get open(): boolean {
    return !this.lost && !this.closing && !this.socket.destroyed;
  }

  private send(message: ClientMessage): void {
    if (this.open) this.socket.write(frame(message));
  }

  private call(method: BlenoCallMethod, args: readonly unknown[]): void {
    const arity = BLENO_CALL_ARGS[method].def.items.length;
    const wire: Wire[] = args.slice(0, arity).map(encodeValue);
    while (wire.length > 0 && wire[wire.length - 1] === null) wire.pop();
    this.send({ type: 'call', method, args: wire });
  }

  // ------------------------------------------------------------ the binding contract (calls)

  init(): void {
    this.call('init', []);
  }

  startAdvertising(name: string, serviceUuids: readonly string[]): void {
    this.gatt.updateName(name);
    this.call('startAdvertising', [name, serviceUuids]);
  }

  stopAdvertising(): void {
    this.call('stopAdvertising', []);
  }

  /** bleno's table stays here; the radio learns UUIDs and properties. `servicesSet` is synchronous, as hci's. */
  setServices(services: readonly BlenoPrimaryService[]): void {
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
    this.call('disconnect', [typeof handle === 'number' ? handle : null]);
  }

  updateRssi(): void {
    this.call('updateRssi', []);
  }

  stop(): void {
    this.call('stop', []);
  }

  // ------------------------------------------------------------ frames from the server

  private onData(chunk: Buffer): void {
    let lines: string[];
    try {
      lines = this.reader.push(chunk);
    } catch (e) {
      this.failed(new RadioLinkError('frame_too_large', e instanceof Error ? e.message : String(e)));
      return;
    }
    this.onLines(lines);
  }

  private onLines(lines: readonly string[]): void {
    for (const line of lines) {
      if (this.lost) return;
      const message = parseServerMessage(line);
      if (message instanceof RadioLinkError) {
        this.failed(message);
        return;
      }
      this.onMessage(message);
    }
  }

  private onMessage(message: ServerMessage): void {
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
      case 'error': {
        const error = new RadioLinkError(message.code, message.message);
        this.lastError = error;
        this.emit('linkError', error);
        return;
      }
      case 'bye':
        this.socket.end();
        return;
      case 'welcome':
        this.failed(new RadioLinkError('bad_message', 'a second welcome'));
        return;
    }
  }

  private failed(error: RadioLinkError): void {
    this.lastError = error;
    if (this.listenerCount('linkError') > 0) this.emit('linkError', error);
    this.socket.destroy();
  }

  /** The socket is gone: bleno learns that its connections and its adapter are gone too. */
  private linkGone(): void {
    if (this.lost) return;
    this.lost = true;
    this.gatt.closeAll();
    for (const [handle, address] of [...this.connections]) this.emit('disconnect', address, handle);
    this.connections.clear();
    this.emit('stateChange', 'poweredOff');
  }
}

function parseServerMessage(line: string): ServerMessage | RadioLinkError {
  const json = parseJson(line);
  if (!json.ok) return new RadioLinkError('bad_frame', `frame is not JSON: ${json.message}`);
  const parsed = serverMessageSchema.safeParse(json.value);
  if (!parsed.success) return new RadioLinkError('bad_message', `invalid message from the server: ${describeIssues(parsed.error)}`);
  return parsed.data;
}

/** A real bleno object model on remote bindings (no native code, no package index). */
export function createRemoteBleno(bindings: RemoteBlenoBindings): Bleno {
  const BlenoClass = createRequire(import.meta.url)('@stoprocent/bleno/lib/bleno') as BlenoConstructor;
  return new BlenoClass(bindings);
}
