/**
 * The noble side of the radio link (docs/radio-link.md): noble bindings whose calls travel over a
 * loopback socket to a `RadioLinkServer`, which runs them on a device of its virtual radio, and whose
 * events come back the same way, in order. Same contract as `RadioNobleBindings` (ble.md §2.3).
 *
 *   const bindings = await RemoteNobleBindings.connect({ port });   // hello → welcome
 *   const noble = createRemoteNoble(bindings);                      // a Noble, as withBindings() gives
 *   …
 *   noble.stop(); await bindings.close();                           // bye, socket closed
 *
 * When the link goes away without `close()` (server stopped, process gone), every peripheral noble
 * believes connected gets `disconnect` (HCI 0x08) and the adapter reads `poweredOff`; later calls are
 * dropped, so noble sees an adapter that is off.
 */
import { EventEmitter } from 'node:events';
import { createRequire } from 'node:module';
import { connect as netConnect, type Socket } from 'node:net';
import type { Noble } from '@stoprocent/noble';
import {
  CALL_ARGS,
  HCI_CONNECTION_TIMEOUT,
  LineReader,
  PROTOCOL_NAME,
  PROTOCOL_VERSION,
  decodeValue,
  describeIssues,
  encodeValue,
  frame,
  parseJson,
  serverMessageSchema,
  type CallMethod,
  type ClientMessage,
  type ErrorMessage,
  type ServerMessage,
  type Wire,
} from './protocol.js';

export interface RemoteNobleOptions {
  readonly port: number;
  /** Default 127.0.0.1. */
  readonly host?: string;
  /** Name of the device the server creates for this client (logs). */
  readonly name?: string;
  /** Attach to an existing device of the radio (id or address) instead. */
  readonly device?: string;
  /** Bound on connect + hello (default 5 s). */
  readonly timeoutMs?: number;
  readonly signal?: AbortSignal;
}

/** The error a fatal error frame or a lost link becomes. */
export class RadioLinkError extends Error {
  override readonly name = 'RadioLinkError';
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export interface RemoteDevice {
  readonly id: string;
  readonly address: string;
  readonly name: string;
}

export class RemoteNobleBindings extends EventEmitter {
  private readonly connected = new Set<string>();
  private closing = false;
  private lost = false;
  /** Resolves once the socket is closed (after close(), a server bye or a failure). */
  readonly closed: Promise<void>;
  /** The last error frame or link failure (also emitted as `linkError`). */
  lastError: RadioLinkError | undefined;

  private constructor(
    private readonly socket: Socket,
    readonly device: RemoteDevice,
    /** The hello's reader, with whatever followed the welcome. */
    private readonly reader: LineReader,
  ) {
    super();
    this.closed = new Promise((resolve) => socket.once('close', () => resolve()));
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', (e) => this.failed(new RadioLinkError('socket_error', e.message)));
    socket.once('close', () => this.linkGone());
  }

  /** Connects, says hello and waits for the server's welcome. */
  static async connect(options: RemoteNobleOptions): Promise<RemoteNobleBindings> {
    const socket = netConnect({ host: options.host ?? '127.0.0.1', port: options.port });
    socket.setNoDelay(true);
    const reader = new LineReader();
    const signal = AbortSignal.any([AbortSignal.timeout(options.timeoutMs ?? 5_000), ...(options.signal ? [options.signal] : [])]);
    try {
      const welcome = await new Promise<RemoteDevice>((resolve, reject) => {
        const fail = (e: Error): void => {
          cleanup();
          reject(e);
        };
        const onAbort = (): void => fail(new RadioLinkError('timeout', `no welcome from ${options.host ?? '127.0.0.1'}:${options.port}`));
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
          const first = lines[0];
          if (first === undefined) return;
          const message = parseServerMessage(first);
          if (message instanceof RadioLinkError) fail(message);
          else if (message.type === 'welcome') {
            if (lines.length > 1) {
              fail(new RadioLinkError('bad_message', 'the server sent frames before its welcome was handled'));
              return;
            }
            cleanup();
            resolve(message.device);
          } else if (message.type === 'error') fail(new RadioLinkError(message.code, message.message));
          else fail(new RadioLinkError('bad_message', `expected welcome, got ${message.type}`));
        };
        const cleanup = (): void => {
          signal.removeEventListener('abort', onAbort);
          socket.off('error', onError);
          socket.off('close', onClose);
          socket.off('data', onData);
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
            role: 'noble',
            ...(options.name === undefined ? {} : { name: options.name }),
            ...(options.device === undefined ? {} : { device: options.device }),
          };
          socket.write(frame(hello));
        });
      });
      return new RemoteNobleBindings(socket, welcome, reader);
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

  /** Whether the link is up (hello done, not closed). */
  get open(): boolean {
    return !this.lost && !this.closing && !this.socket.destroyed;
  }

  // ------------------------------------------------------------ the binding contract (calls)

  private call(method: CallMethod, args: readonly unknown[]): void {
    if (!this.open) return;
    const arity = CALL_ARGS[method].def.items.length;
    const wire: Wire[] = args.slice(0, arity).map(encodeValue);
    // Trailing nulls are implied: the frame stays short.
    while (wire.length > 0 && wire[wire.length - 1] === null) wire.pop();
    this.socket.write(frame({ type: 'call', method, args: wire }));
  }

  start(): void {
    this.call('start', []);
  }
  init(): void {
    this.call('init', []);
  }
  stop(): void {
    this.call('stop', []);
  }
  reset(): void {
    this.call('reset', []);
  }
  setScanParameters(interval?: number, window?: number): void {
    this.call('setScanParameters', [interval, window]);
  }
  startScanning(serviceUuids: readonly string[] | undefined, allowDuplicates: boolean): void {
    this.call('startScanning', [serviceUuids, allowDuplicates]);
  }
  stopScanning(): void {
    this.call('stopScanning', []);
  }
  connect(id: string, parameters?: { readonly mtu?: number }): void {
    this.call('connect', [id, parameters?.mtu === undefined ? undefined : { mtu: parameters.mtu }]);
  }
  cancelConnect(id: string): void {
    this.call('cancelConnect', [id]);
  }
  disconnect(id: string): void {
    this.call('disconnect', [id]);
  }
  updateRssi(id: string): void {
    this.call('updateRssi', [id]);
  }
  discoverServices(id: string, uuids: readonly string[] | undefined): void {
    this.call('discoverServices', [id, uuids]);
  }
  discoverIncludedServices(id: string, serviceUuid: string, uuids?: readonly string[]): void {
    this.call('discoverIncludedServices', [id, serviceUuid, uuids]);
  }
  discoverCharacteristics(id: string, serviceUuid: string, uuids: readonly string[] | undefined): void {
    this.call('discoverCharacteristics', [id, serviceUuid, uuids]);
  }
  read(id: string, serviceUuid: string, characteristicUuid: string): void {
    this.call('read', [id, serviceUuid, characteristicUuid]);
  }
  write(id: string, serviceUuid: string, characteristicUuid: string, data: Uint8Array, withoutResponse: boolean): void {
    this.call('write', [id, serviceUuid, characteristicUuid, data, withoutResponse]);
  }
  notify(id: string, serviceUuid: string, characteristicUuid: string, on: boolean): void {
    this.call('notify', [id, serviceUuid, characteristicUuid, on]);
  }
  broadcast(id: string, serviceUuid: string, characteristicUuid: string, broadcast: boolean): void {
    this.call('broadcast', [id, serviceUuid, characteristicUuid, broadcast]);
  }
  discoverDescriptors(id: string, serviceUuid: string, characteristicUuid: string): void {
    this.call('discoverDescriptors', [id, serviceUuid, characteristicUuid]);
  }
  readValue(id: string, serviceUuid: string, characteristicUuid: string, descriptorUuid: string): void {
    this.call('readValue', [id, serviceUuid, characteristicUuid, descriptorUuid]);
  }
  writeValue(id: string, serviceUuid: string, characteristicUuid: string, descriptorUuid: string, data: Uint8Array): void {
    this.call('writeValue', [id, serviceUuid, characteristicUuid, descriptorUuid, data]);
  }
  readHandle(id: string, handle: number): void {
    this.call('readHandle', [id, handle]);
  }
  writeHandle(id: string, handle: number, data: Uint8Array, withoutResponse?: boolean): void {
    this.call('writeHandle', [id, handle, data, withoutResponse]);
  }

  /** Local, as hci's: noble's ids are addresses without colons. */
  addressToId(address: string): string | null {
    return /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/i.test(address) ? address.replaceAll(':', '').toLowerCase() : null;
  }

  // ------------------------------------------------------------ events

  private onData(chunk: Buffer): void {
    let lines: string[];
    try {
      lines = this.reader.push(chunk);
    } catch (e) {
      this.failed(new RadioLinkError('frame_too_large', e instanceof Error ? e.message : String(e)));
      return;
    }
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
      case 'error':
        this.reportError(message);
        return;
      case 'bye':
        this.socket.end();
        return;
      case 'welcome':
        this.failed(new RadioLinkError('bad_message', 'a second welcome'));
        return;
      case 'acl':
      case 'acl_open':
      case 'acl_close':
        this.failed(new RadioLinkError('bad_message', `${message.type} is for the bleno role`));
        return;
    }
  }

  private reportError(message: ErrorMessage): void {
    const error = new RadioLinkError(message.code, message.message);
    this.lastError = error;
    this.emit('linkError', error);
  }

  /** A protocol or socket failure: report it and close. */
  private failed(error: RadioLinkError): void {
    this.lastError = error;
    if (this.listenerCount('linkError') > 0) this.emit('linkError', error);
    this.socket.destroy();
  }

  /** The socket is gone: noble learns that its links and its adapter are gone too. */
  private linkGone(): void {
    if (this.lost) return;
    this.lost = true;
    for (const id of [...this.connected]) this.emit('disconnect', id, HCI_CONNECTION_TIMEOUT);
    this.connected.clear();
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

/** The class `lib/noble.js` exports (the deep path has no typings, ble.md §3.3). */
type NobleConstructor = new (bindings: EventEmitter) => Noble;

/** A real noble object model on remote bindings, without loading the package index (ble.md §1.2). */
export function createRemoteNoble(bindings: RemoteNobleBindings): Noble {
  const NobleClass = createRequire(import.meta.url)('@stoprocent/noble/lib/noble') as NobleConstructor;
  return new NobleClass(bindings);
}
