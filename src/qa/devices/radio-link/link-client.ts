/**
 * The client half of the radio link (docs/radio-link.md) that both roles share: the socket, the
 * hello → welcome handshake, line framing and parsing of the server's frames, calls, error frames,
 * bye/close and the loss of the link. `RemoteNobleBindings` and `RemoteBlenoBindings` each hold one
 * `RadioLinkClient` and keep only their role: which calls they make and what the server's events,
 * and for bleno its ACL frames, mean to their library.
 *
 *   const welcomed = await handshake(options, { role: 'noble', … });   // hello → welcome
 *   const link = new RadioLinkClient(welcomed, bindings, { message, lost });
 *   link.call('start', 0, []); … await link.close();                    // bye, socket closed
 *
 * `RadioLinkBindings` is the part of both bindings classes that only forwards to their link.
 */
import { EventEmitter } from 'node:events';
import { connect as netConnect, type Socket } from 'node:net';
import {
  LineReader,
  PROTOCOL_NAME,
  PROTOCOL_VERSION,
  describeIssues,
  encodeValue,
  frame,
  parseJson,
  serverMessageSchema,
  type BlenoCallMethod,
  type CallMethod,
  type ClientMessage,
  type Role,
  type ServerMessage,
  type Wire,
} from './protocol.js';
import { errorText } from '../../../common/error-text.js';

export interface RadioLinkClientOptions {
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

/** How a role's hello is said and which welcome ends it. */
export interface HandshakePolicy {
  readonly role: Role;
  /** Only a welcome for `role` ends the handshake (else any welcome does). */
  readonly requireRole: boolean;
  /** Frames that arrive in the same read as the welcome: fail the handshake, or deliver them after it. */
  readonly framesAfterWelcome: 'fail' | 'deliver';
}

/** A socket whose hello the server has welcomed. */
export interface Welcomed {
  readonly socket: Socket;
  readonly device: RemoteDevice;
  /** The hello's reader, with whatever followed the welcome. */
  readonly reader: LineReader;
  /** Whole frames that came with the welcome (policy `deliver`). */
  readonly rest: readonly string[];
}

/** Connects, says hello and waits for the server's welcome. */
export async function handshake(options: RadioLinkClientOptions, policy: HandshakePolicy): Promise<Welcomed> {
  const host = options.host ?? '127.0.0.1';
  const socket = netConnect({ host, port: options.port });
  socket.setNoDelay(true);
  const reader = new LineReader();
  const signal = AbortSignal.any([AbortSignal.timeout(options.timeoutMs ?? 5_000), ...(options.signal ? [options.signal] : [])]);
  const expected = policy.requireRole ? `a ${policy.role} welcome` : 'welcome';
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
          fail(frameTooLarge(e));
          return;
        }
        const [first, ...others] = lines;
        if (first === undefined) return;
        const message = parseServerMessage(first);
        if (message instanceof RadioLinkError) fail(message);
        else if (message.type === 'welcome' && (!policy.requireRole || message.role === policy.role)) {
          if (others.length > 0 && policy.framesAfterWelcome === 'fail') {
            fail(new RadioLinkError('bad_message', 'the server sent frames before its welcome was handled'));
            return;
          }
          cleanup();
          resolve([message.device, others]);
        } else if (message.type === 'error') fail(new RadioLinkError(message.code, message.message));
        else fail(new RadioLinkError('bad_message', `expected ${expected}, got ${message.type}`));
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
          role: policy.role,
          ...(options.name === undefined ? {} : { name: options.name }),
          ...(options.device === undefined ? {} : { device: options.device }),
        };
        socket.write(frame(hello));
      });
    });
    return { socket, device, reader, rest };
  } catch (e) {
    socket.destroy();
    throw e;
  }
}

/** The frames a role handles: events and ACL (error frames, bye and a second welcome are the client's own). */
export type RoleMessage = Exclude<ServerMessage, { readonly type: 'error' | 'bye' | 'welcome' }>;

/** What a role does with the link's traffic. */
export interface RadioLinkHooks {
  readonly message: (message: RoleMessage) => void;
  /** The socket is gone (once, whatever the cause). */
  readonly lost: () => void;
}

/**
 * The welcomed link of one bindings object. Error frames and failures are reported on `emitter`
 * (`linkError`) and kept in `lastError`; the socket closing calls `hooks.lost` once.
 */
export class RadioLinkClient {
  private closing = false;
  private lost = false;
  private readonly socket: Socket;
  private readonly reader: LineReader;
  readonly device: RemoteDevice;
  /** Resolves once the socket is closed (after close(), a server bye or a failure). */
  readonly closed: Promise<void>;
  /** The last error frame or link failure (also emitted as `linkError`). */
  lastError: RadioLinkError | undefined;

  constructor(
    welcomed: Welcomed,
    private readonly emitter: EventEmitter,
    private readonly hooks: RadioLinkHooks,
  ) {
    const { socket, rest } = welcomed;
    this.socket = socket;
    this.reader = welcomed.reader;
    this.device = welcomed.device;
    this.closed = new Promise((resolve) => socket.once('close', () => resolve()));
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', (e) => this.fail(new RadioLinkError('socket_error', e.message)));
    socket.once('close', () => this.linkGone());
    // Frames that came with the welcome (none expected: the server waits for calls).
    if (rest.length > 0) setImmediate(() => this.onLines(rest));
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

  /** Sends a frame while the link is up; dropped otherwise. */
  send(message: ClientMessage): void {
    if (this.open) this.socket.write(frame(message));
  }

  /** A binding call with the method's first `arity` arguments; trailing nulls are implied, so the frame stays short. */
  call(method: CallMethod | BlenoCallMethod, arity: number, args: readonly unknown[]): void {
    if (!this.open) return;
    const wire: Wire[] = args.slice(0, arity).map(encodeValue);
    while (wire.length > 0 && wire[wire.length - 1] === null) wire.pop();
    this.send({ type: 'call', method, args: wire });
  }

  /** A protocol or socket failure: report it and close. */
  fail(error: RadioLinkError): void {
    this.lastError = error;
    if (this.emitter.listenerCount('linkError') > 0) this.emitter.emit('linkError', error);
    this.socket.destroy();
  }

  private onData(chunk: Buffer): void {
    let lines: string[];
    try {
      lines = this.reader.push(chunk);
    } catch (e) {
      this.fail(frameTooLarge(e));
      return;
    }
    this.onLines(lines);
  }

  private onLines(lines: readonly string[]): void {
    for (const line of lines) {
      if (this.lost) return;
      const message = parseServerMessage(line);
      if (message instanceof RadioLinkError) {
        this.fail(message);
        return;
      }
      this.onMessage(message);
    }
  }

  private onMessage(message: ServerMessage): void {
    switch (message.type) {
      case 'error': {
        const error = new RadioLinkError(message.code, message.message);
        this.lastError = error;
        this.emitter.emit('linkError', error);
        return;
      }
      case 'bye':
        this.socket.end();
        return;
      case 'welcome':
        this.fail(new RadioLinkError('bad_message', 'a second welcome'));
        return;
      default:
        this.hooks.message(message);
    }
  }

  private linkGone(): void {
    if (this.lost) return;
    this.lost = true;
    this.hooks.lost();
  }
}

/** An EventEmitter (the bindings) on one welcomed link: device, lifecycle and errors come from the link. */
export abstract class RadioLinkBindings extends EventEmitter {
  protected readonly link: RadioLinkClient;
  readonly device: RemoteDevice;
  /** Resolves once the socket is closed (after close(), a server bye or a failure). */
  readonly closed: Promise<void>;

  protected constructor(welcomed: Welcomed) {
    super();
    this.link = new RadioLinkClient(welcomed, this, { message: (m) => this.onLinkMessage(m), lost: () => this.onLinkLost() });
    this.device = this.link.device;
    this.closed = this.link.closed;
  }

  /** An event or ACL frame for this role. */
  protected abstract onLinkMessage(message: RoleMessage): void;
  /** The socket is gone: the library learns that its links and its adapter are gone too. */
  protected abstract onLinkLost(): void;

  /** The last error frame or link failure (also emitted as `linkError`). */
  get lastError(): RadioLinkError | undefined {
    return this.link.lastError;
  }

  /** Says bye and closes the socket; resolves once it is closed. Idempotent. */
  close(timeoutMs?: number): Promise<void> {
    return this.link.close(timeoutMs);
  }

  /** Whether the link is up (hello done, not closed). */
  get open(): boolean {
    return this.link.open;
  }
}

function frameTooLarge(e: unknown): RadioLinkError {
  return new RadioLinkError('frame_too_large', errorText(e));
}

function parseServerMessage(line: string): ServerMessage | RadioLinkError {
  const json = parseJson(line);
  if (!json.ok) return new RadioLinkError('bad_frame', `frame is not JSON: ${json.message}`);
  const parsed = serverMessageSchema.safeParse(json.value);
  if (!parsed.success) return new RadioLinkError('bad_message', `invalid message from the server: ${describeIssues(parsed.error)}`);
  return parsed.data;
}
