/**
 * The radio side of the radio link (docs/radio-link.md): listens on loopback and, per client connection,
 * runs a `RadioNobleBindings` on a device of the virtual radio — a fresh device, or an existing one the
 * client names. Calls from the client go to the bindings; every event the bindings emit goes back, in
 * order. A client that speaks badly gets an error frame and is closed; the server never throws on input.
 *
 *   const server = await RadioLinkServer.start({ radio });      // 127.0.0.1, a free port
 *   … a noble in another process: RemoteNobleBindings.connect({ port: server.port }) …
 *   await server.stop();                                         // clients told `bye`, port closed
 */
import type { z } from 'zod';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import type { RadioDevice, VirtualRadio } from '../../sim/radio/virtual-radio.js';
import { RadioPeripheralSide, RADIO_SIDE_EVENTS } from '../bleno-radio-bindings.js';
import { RadioNobleBindings } from '../noble-radio-bindings.js';
import {
  BLENO_CALL_ARGS,
  CALL_ARGS,
  EVENT_NAMES,
  FrameTooLargeError,
  LineReader,
  PROTOCOL_NAME,
  PROTOCOL_VERSION,
  clientMessageSchema,
  describeIssues,
  encodeValue,
  frame,
  parseJson,
  type BlenoCallMethod,
  type CallMethod,
  type ErrorCode,
  type Hello,
  type ServerMessage,
} from './protocol.js';
import { errorText } from '../../../common/error-text.js';

export interface RadioLinkServerOptions {
  readonly radio: VirtualRadio;
  /** Default 127.0.0.1; the link is meant for loopback only. */
  readonly host?: string;
  /** Default 0: a free port (read `port` after start). */
  readonly port?: number;
  /** The device a client gets (default: the one it names in hello, else a new one named after it). */
  readonly deviceFor?: (hello: Hello) => RadioDevice | undefined;
  /** Bindings for a device (default `new RadioNobleBindings(device)`); tests wrap them. */
  readonly bindingsFor?: (device: RadioDevice) => RadioNobleBindings;
  /** How long stop() waits for clients to close after `bye` before destroying them (default 1 s). */
  readonly closeTimeoutMs?: number;
  /** Diagnostics (connections, protocol errors); silent by default. */
  readonly log?: (event: string, fields: Record<string, unknown>) => void;
}

type Args<M extends CallMethod> = z.output<(typeof CALL_ARGS)[M]>;
type Invoke = (bindings: RadioNobleBindings, args: unknown) => void;

/** Each method with its parsed arguments; null arguments become undefined, as the bindings expect. */
const u = <T>(value: T | null): T | undefined => value ?? undefined;
const INVOKE: { readonly [M in CallMethod]: (b: RadioNobleBindings, a: Args<M>) => void } = {
  start: (b) => b.start(),
  init: (b) => b.init(),
  stop: (b) => b.stop(),
  reset: (b) => b.reset(),
  setScanParameters: (b) => b.setScanParameters(),
  startScanning: (b, [uuids, dup]) => b.startScanning(u(uuids), dup ?? false),
  stopScanning: (b) => b.stopScanning(),
  connect: (b, [id, params]) => b.connect(id, params?.mtu === undefined ? undefined : { mtu: params.mtu }),
  cancelConnect: (b, [id]) => b.cancelConnect(id),
  disconnect: (b, [id]) => b.disconnect(id),
  updateRssi: (b, [id]) => b.updateRssi(id),
  discoverServices: (b, [id, uuids]) => b.discoverServices(id, u(uuids)),
  discoverIncludedServices: (b, [id, svc]) => b.discoverIncludedServices(id, svc),
  discoverCharacteristics: (b, [id, svc, uuids]) => b.discoverCharacteristics(id, svc, u(uuids)),
  read: (b, [id, svc, chr]) => b.read(id, svc, chr),
  write: (b, [id, svc, chr, data, withoutResponse]) => b.write(id, svc, chr, data, withoutResponse),
  notify: (b, [id, svc, chr, on]) => b.notify(id, svc, chr, on),
  broadcast: (b, [id, svc, chr]) => b.broadcast(id, svc, chr),
  discoverDescriptors: (b, [id, svc, chr]) => b.discoverDescriptors(id, svc, chr),
  readValue: (b, [id, svc, chr, desc]) => b.readValue(id, svc, chr, desc),
  writeValue: (b, [id, svc, chr, desc]) => b.writeValue(id, svc, chr, desc),
  readHandle: (b, [id, h]) => b.readHandle(id, h),
  writeHandle: (b, [id, h]) => b.writeHandle(id, h),
};

type BlenoArgs<M extends BlenoCallMethod> = z.output<(typeof BLENO_CALL_ARGS)[M]>;
type BlenoInvoke = (side: RadioPeripheralSide, args: unknown) => void;
const BLENO_INVOKE: { readonly [M in BlenoCallMethod]: (s: RadioPeripheralSide, a: BlenoArgs<M>) => void } = {
  init: (s) => s.init(),
  startAdvertising: (s, [name, uuids]) => s.startAdvertising(name, uuids ?? []),
  stopAdvertising: (s) => s.stopAdvertising(),
  setServices: (s, [services]) => s.setServices(services),
  disconnect: (s, [h]) => s.disconnect(h),
  updateRssi: (s) => s.updateRssi(),
  stop: (s) => s.stop(),
};

class ProtocolError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly extra: { readonly supported?: number[] } = {},
  ) {
    super(message);
  }
}

/** One client connection: hello, then calls and events, then bye or close. */
class LinkSession {
  private readonly reader = new LineReader();
  private bindings: RadioNobleBindings | undefined;
  /** bleno role: the radio's half of bleno's bindings (GATT lives in the client). */
  private bleno: RadioPeripheralSide | undefined;
  private readonly detach: (() => void)[] = [];
  private ending = false;
  private cleaned = false;
  readonly closed: Promise<void>;

  constructor(
    private readonly server: RadioLinkServer,
    private readonly options: RadioLinkServerOptions,
    readonly socket: Socket,
  ) {
    socket.setNoDelay(true);
    this.closed = new Promise((resolve) => socket.once('close', () => resolve()));
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', (e) => this.options.log?.('socket_error', { error: e.message }));
    socket.once('close', () => {
      this.cleanup();
      server.release(this);
    });
  }

  get device(): RadioDevice | undefined {
    return this.bindings?.device ?? this.bleno?.device;
  }

  /** Sends one frame; while the socket's buffer is full, stops reading calls (backpressure, order kept). */
  private send(message: ServerMessage): void {
    if (this.socket.destroyed || this.socket.writableEnded) return;
    if (!this.socket.write(frame(message)) && !this.socket.isPaused()) {
      this.socket.pause();
      this.socket.once('drain', () => {
        if (!this.socket.destroyed) this.socket.resume();
      });
    }
  }

  /** Ends the connection after a last frame (flushed first). */
  end(last?: ServerMessage): void {
    if (this.ending) return;
    this.ending = true;
    this.cleanup();
    if (this.socket.destroyed) return;
    if (last && !this.socket.writableEnded) this.socket.end(frame(last));
    else this.socket.end();
  }

  private fail(error: ProtocolError): void {
    this.options.log?.('protocol_error', { code: error.code, message: error.message });
    this.end({ type: 'error', code: error.code, message: error.message, fatal: true, ...error.extra });
  }

  private onData(chunk: Buffer): void {
    if (this.ending) return;
    let lines: string[];
    try {
      lines = this.reader.push(chunk);
    } catch (e) {
      this.fail(new ProtocolError('frame_too_large', e instanceof FrameTooLargeError ? e.message : String(e)));
      return;
    }
    for (const line of lines) {
      // A frame before may have ended the session (a fatal error, bye).
      if (this.socket.writableEnded || this.socket.destroyed) return;
      try {
        this.onLine(line);
      } catch (e) {
        this.fail(e instanceof ProtocolError ? e : new ProtocolError('server_error', errorText(e)));
      }
    }
  }

  private onLine(line: string): void {
    const json = parseJson(line);
    if (!json.ok) throw new ProtocolError('bad_frame', `frame is not JSON: ${json.message}`);
    const parsed = clientMessageSchema.safeParse(json.value);
    if (!parsed.success) throw new ProtocolError('bad_message', `invalid message: ${describeIssues(parsed.error)}`);
    const message = parsed.data;
    switch (message.type) {
      case 'hello':
        this.hello(message);
        return;
      case 'bye':
        this.options.log?.('client_bye', { reason: message.reason });
        this.end({ type: 'bye', reason: 'client said bye' });
        return;
      case 'call':
        if (this.bleno) this.blenoCall(message.method, message.args);
        else this.call(message.method, message.args);
        return;
      case 'acl':
        if (!this.bleno)
          throw new ProtocolError(
            this.bindings ? 'bad_message' : 'hello_required',
            this.bindings ? 'acl is for the bleno role' : 'the first message must be hello',
          );
        this.bleno.fromGatt(message.handle, Buffer.from(message.pdu.$bytes, 'base64'));
        return;
    }
  }

  private hello(hello: Hello): void {
    if (this.bindings || this.bleno) throw new ProtocolError('bad_message', 'hello was already received');
    if (hello.version !== PROTOCOL_VERSION) {
      throw new ProtocolError(
        'unsupported_version',
        `protocol version ${hello.version} is not supported (this server speaks ${PROTOCOL_VERSION})`,
        {
          supported: [PROTOCOL_VERSION],
        },
      );
    }
    const device = this.options.deviceFor
      ? this.options.deviceFor(hello)
      : hello.device !== undefined
        ? this.options.radio.findDevice(hello.device)
        : this.options.radio.addDevice({ name: hello.name ?? 'remote-central' });
    if (!device) throw new ProtocolError('unknown_device', `no device ${hello.device ?? '(none given)'} on the radio`);
    if (this.server.inUse(device, this)) throw new ProtocolError('device_busy', `device ${device.address} is driven by another client`);
    if (hello.role === 'bleno') {
      this.helloBleno(hello, device);
      return;
    }
    const bindings = this.options.bindingsFor ? this.options.bindingsFor(device) : new RadioNobleBindings(device);
    this.bindings = bindings;
    for (const name of EVENT_NAMES) {
      const listener = (...args: unknown[]): void => this.send({ type: 'event', name, args: args.map(encodeValue) });
      bindings.on(name, listener);
      this.detach.push(() => bindings.off(name, listener));
    }
    this.options.log?.('client_hello', { device: device.address, name: hello.name });
    this.send({
      type: 'welcome',
      protocol: PROTOCOL_NAME,
      version: PROTOCOL_VERSION,
      role: 'noble',
      device: { id: device.id, address: device.address, name: device.name },
    });
  }

  /** bleno role: the radio side of bleno's bindings; ATT PDUs and GAP events go to the client. */
  private helloBleno(hello: Hello, device: RadioDevice): void {
    const send = (message: ServerMessage): void => this.send(message);
    const side = new RadioPeripheralSide(
      device,
      {
        open: (handle, address, mtu) => send({ type: 'acl_open', handle, address, mtu }),
        toGatt: (handle, data) => send({ type: 'acl', handle, pdu: { $bytes: data.toString('base64') } }),
        close: (handle) => send({ type: 'acl_close', handle }),
      },
      {
        serialize: true,
        onLateError: (handle, error) => this.options.log?.('att_refused_late', { handle, code: error.code, message: error.message }),
      },
    );
    this.bleno = side;
    for (const name of RADIO_SIDE_EVENTS) {
      const listener = (...args: unknown[]): void => send({ type: 'event', name, args: args.map(encodeValue) });
      side.on(name, listener);
      this.detach.push(() => side.off(name, listener));
    }
    this.options.log?.('client_hello', { device: device.address, name: hello.name, role: 'bleno' });
    send({
      type: 'welcome',
      protocol: PROTOCOL_NAME,
      version: PROTOCOL_VERSION,
      role: 'bleno',
      device: { id: device.id, address: device.address, name: device.name },
    });
  }

  private blenoCall(method: string, wireArgs: readonly unknown[]): void {
    const side = this.bleno;
    if (!side) throw new ProtocolError('hello_required', 'the first message must be hello');
    if (!Object.hasOwn(BLENO_CALL_ARGS, method)) throw new ProtocolError('bad_message', `${method} is not a method of the bleno role`);
    const name = method as BlenoCallMethod;
    const schema = BLENO_CALL_ARGS[name];
    const arity = schema.def.items.length;
    if (wireArgs.length > arity) throw new ProtocolError('bad_message', `${name} takes at most ${arity} arguments, got ${wireArgs.length}`);
    const parsed = schema.safeParse([...wireArgs, ...Array<null>(arity - wireArgs.length).fill(null)]);
    if (!parsed.success) throw new ProtocolError('bad_message', `invalid arguments for ${name}: ${describeIssues(parsed.error)}`);
    try {
      (BLENO_INVOKE[name] as BlenoInvoke)(side, parsed.data);
    } catch (e) {
      this.send({
        type: 'error',
        code: 'call_failed',
        message: `${name} failed: ${errorText(e)}`,
        fatal: false,
      });
    }
  }

  private call(method: string, wireArgs: readonly unknown[]): void {
    const bindings = this.bindings;
    if (!bindings) throw new ProtocolError('hello_required', 'the first message must be hello');
    if (!Object.hasOwn(CALL_ARGS, method)) throw new ProtocolError('bad_message', `${method} is not a method of the noble role`);
    const schema = CALL_ARGS[method as CallMethod];
    const arity = schema.def.items.length;
    if (wireArgs.length > arity)
      throw new ProtocolError('bad_message', `${method} takes at most ${arity} arguments, got ${wireArgs.length}`);
    const padded = [...wireArgs, ...Array<null>(arity - wireArgs.length).fill(null)];
    const parsed = schema.safeParse(padded);
    if (!parsed.success) throw new ProtocolError('bad_message', `invalid arguments for ${method}: ${describeIssues(parsed.error)}`);
    try {
      (INVOKE[method as CallMethod] as Invoke)(bindings, parsed.data);
    } catch (e) {
      // The bindings refused synchronously: tell the client, keep the connection.
      this.send({
        type: 'error',
        code: 'call_failed',
        message: `${method} failed: ${errorText(e)}`,
        fatal: false,
      });
    }
  }

  /** Stops the bindings (scan ends, links drop) and forgets their events. Idempotent. */
  private cleanup(): void {
    if (this.cleaned) return;
    this.cleaned = true;
    for (const off of this.detach.splice(0)) off();
    try {
      this.bindings?.stop();
    } catch {
      // stopped by the client already (the bindings throw then, as the mac binding does)
    }
    this.bleno?.stop();
  }
}

export class RadioLinkServer {
  private readonly sessions = new Set<LinkSession>();
  private stopping: Promise<void> | undefined;

  private constructor(
    private readonly options: RadioLinkServerOptions,
    private readonly server: Server,
  ) {
    server.on('connection', (socket) => {
      if (this.stopping) {
        socket.destroy();
        return;
      }
      this.sessions.add(new LinkSession(this, options, socket));
    });
  }

  static async start(options: RadioLinkServerOptions): Promise<RadioLinkServer> {
    const server = createServer();
    const link = new RadioLinkServer(options, server);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
    return link;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  get host(): string {
    return (this.server.address() as AddressInfo).address;
  }

  /** Open client connections. */
  get clients(): number {
    return this.sessions.size;
  }

  /** @internal whether another live session drives `device`. */
  inUse(device: RadioDevice, asking: LinkSession): boolean {
    for (const session of this.sessions) if (session !== asking && session.device === device) return true;
    return false;
  }

  /** @internal a session's socket closed. */
  release(session: LinkSession): void {
    this.sessions.delete(session);
  }

  /** Tells every client `bye`, closes the port, resolves when every connection is gone. Idempotent. */
  stop(reason = 'server stopping'): Promise<void> {
    this.stopping ??= (async () => {
      const closing = new Promise<void>((resolve) => this.server.close(() => resolve()));
      const sessions = [...this.sessions];
      for (const session of sessions) session.end({ type: 'bye', reason });
      const timeout = this.options.closeTimeoutMs ?? 1_000;
      await Promise.all(
        sessions.map(async (session) => {
          let timer: NodeJS.Timeout | undefined;
          const late = new Promise<void>((resolve) => {
            timer = setTimeout(() => {
              session.socket.destroy();
              resolve();
            }, timeout);
          });
          await Promise.race([session.closed, late]);
          clearTimeout(timer);
        }),
      );
      await closing;
      this.sessions.clear();
    })();
    return this.stopping;
  }
}
