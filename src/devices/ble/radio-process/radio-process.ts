/**
 * The kiosk's side of its radio process: starts the child through a launcher (launcher.ts), serves the
 * `BleCentral` / `BlePeripheral` ports as proxies over the channel (protocol.ts), and keeps the child
 * alive. A native crash, a hang or stray output in noble/bleno then costs one verification, not the app
 * (docs/ARCHITECTURE.md "The radio process"):
 *
 * - the child's stdout/stderr are piped here and logged as library output, escaped, bounded and without
 *   device addresses (a native print may name a phone), never
 *   passed on to this process's stdout (the relay CLI prints one JSON line per verification);
 * - a heartbeat finds a child that stopped answering (it is killed);
 * - when the child is gone, every open link gets `onDisconnect('the radio process stopped: …')`, a pending
 *   connect/advertise rejects with `BleSetupError('radio_process_exited: …')`, availability reads
 *   `starting` (detail: restarting in …), and the child is started again after an exponential backoff with jitter (reset after a
 *   healthy period), so a child that dies at once is never restarted in a tight loop.
 */
import { escapePeerText } from '../../../common/peer-text.js';
import {
  ATT_MAX_VALUE_BYTES,
  BleSetupError,
  BleValueTooLargeError,
  type Availability,
  type BleCentral,
  type BleCentralHandlers,
  type BleCentralLink,
  type BlePeripheral,
  type BlePeripheralSession,
  type GattProfile,
  type PeripheralEvent,
} from '../../ports.js';
import { abortedError } from '../../shared/abort.js';
import type { LibraryLog } from '../library-console.js';
import type { RadioChild, RadioChildExit, RadioLauncher } from './launcher.js';
import { ChildMessage, ParentMessage, describeIssue, type PeripheralEventWire, type RadioInit } from './protocol.js';
import { fromWire } from './wire-errors.js';

/** Availability reasons of an adapter that is gone (ports.ts): a fresh process may find it again. */
const LOST_ADAPTER: ReadonlySet<string> = new Set(['powered_off', 'no_adapter', 'no_radio', 'adapter_error']);
const MAX_RECOVERY_WAIT_MS = 5 * 60_000;

/** The stable reason key of a setup cut short by the radio process going away. */
export const RADIO_PROCESS_EXITED = 'radio_process_exited';
/** The stable reason key of a setup asked for while the radio process is (re)starting. */
export const RADIO_PROCESS_RESTARTING = 'radio_process_restarting';

export interface RadioProcessOptions {
  readonly launcher: RadioLauncher;
  readonly init: RadioInit;
  readonly log: LibraryLog;
  /** Ping period (default 2 s). */
  readonly heartbeatMs?: number;
  /** A child with a ping unanswered this long is killed (default 10 s). */
  readonly heartbeatDeadlineMs?: number;
  /** First restart delay (default 500 ms), doubling per failure up to `restartMaxMs` (default 30 s). */
  readonly restartMinMs?: number;
  readonly restartMaxMs?: number;
  /** A child that lived this long was healthy: the next restart starts from `restartMinMs` again (default 60 s). */
  readonly healthyMs?: number;
  /** Bound on the first `ready` (default 15 s) for `started()`. */
  readonly startMs?: number;
  /** Bound on a graceful shutdown before SIGKILL (default 3 s), and on a link's close (default 2 s). */
  readonly stopMs?: number;
  readonly closeMs?: number;
  /**
   * A role whose adapter stays gone (`powered_off`, `no_adapter`, `no_radio`, `adapter_error`) this long while no
   * verification uses the radio gets a fresh process (default 15 s; each further try waits twice as long,
   * at most 5 min, until no role's adapter is lost). A library instance does not always find its adapter
   * again by itself: over a serial HCI transport it never does once the port closed (bluetooth-hci-socket's
   * UART reconnection looks the port up among udev's serial devices and gives up after ten tries), and a
   * stopped mac or win binding stays stopped. 0 turns it off.
   */
  readonly recoverAfterMs?: number;
  /** Jitter source in [0, 1) (default Math.random). */
  readonly random?: () => number;
}

type Role = 'central' | 'peripheral';

interface Pending {
  readonly kind: 'setup' | 'io' | 'close';
  resolve(message: Extract<ChildMessage, { t: 'ok' }>): void;
  reject(error: Error): void;
}

interface LinkEntry {
  readonly handlers: BleCentralHandlers;
  handedOut: boolean;
  ended: boolean;
}

interface SessionEntry {
  readonly onEvent: (event: PeripheralEvent) => void;
  ended: boolean;
}

const MAX_OUTPUT_LINE = 500;

/** A Bluetooth device address (a phone's, in a native print): `12:34:56:78:9A:BC`, `-` or no separators. */
const DEVICE_ADDRESS = /\b[0-9a-f]{2}([:-]?)(?:[0-9a-f]{2}\1){4}[0-9a-f]{2}\b/gi;

/** A line the child printed, fit for the log: no device address, escaped, bounded. */
export function childOutputLine(line: string): string {
  return escapePeerText(line.replace(DEVICE_ADDRESS, '[address]'), MAX_OUTPUT_LINE);
}

/** "killed by SIGKILL", "exited with code 134", … */
export function describeExit(exit: RadioChildExit): string {
  if (exit.signal) return `killed by ${exit.signal}`;
  if (exit.code === null) return 'it could not be started';
  return `exited with code ${exit.code}`;
}

export class RadioProcess {
  readonly central?: BleCentral;
  readonly peripheral?: BlePeripheral;
  private readonly settings: Required<Omit<RadioProcessOptions, 'launcher' | 'init' | 'log'>>;
  private child: RadioChild | undefined;
  private ready = false;
  private closed = false;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly links = new Map<number, LinkEntry>();
  private readonly sessions = new Map<number, SessionEntry>();
  private readonly availabilities = new Map<Role, Availability>();
  private readonly listeners = new Map<Role, Set<(a: Availability) => void>>();
  private failures = 0;
  private startedAt = 0;
  private spawns = 0;
  private restartTimer: NodeJS.Timeout | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private pingSentAt: number | undefined;
  private firstReady: { promise: Promise<readonly string[]>; resolve(problems: readonly string[]): void };
  private problems: readonly string[] = [];
  private exitWaiters: (() => void)[] = [];
  private readonly missing = new Set<Role>();
  private recoveryTimer: NodeJS.Timeout | undefined;
  /** Fresh processes started for a lost adapter since a role was last usable. */
  private recoveries = 0;
  /** Why the running child is being replaced by the kiosk itself (told in place of its exit). */
  private replacing: string | undefined;

  constructor(private readonly options: RadioProcessOptions) {
    this.settings = {
      heartbeatMs: options.heartbeatMs ?? 2_000,
      heartbeatDeadlineMs: options.heartbeatDeadlineMs ?? 10_000,
      restartMinMs: options.restartMinMs ?? 500,
      restartMaxMs: options.restartMaxMs ?? 30_000,
      healthyMs: options.healthyMs ?? 60_000,
      startMs: options.startMs ?? 15_000,
      stopMs: options.stopMs ?? 3_000,
      closeMs: options.closeMs ?? 2_000,
      recoverAfterMs: options.recoverAfterMs ?? 15_000,
      random: options.random ?? Math.random,
    };
    let resolveReady: (problems: readonly string[]) => void = () => undefined;
    const promise = new Promise<readonly string[]>((resolve) => (resolveReady = resolve));
    this.firstReady = { promise, resolve: resolveReady };
    const starting: Availability = { usable: false, reason: 'starting', detail: 'the radio process is starting' };
    if (options.init.central) {
      this.availabilities.set('central', starting);
      this.central = new RadioCentral(this);
    }
    if (options.init.peripheral) {
      this.availabilities.set('peripheral', starting);
      this.peripheral = new RadioPeripheral(this);
    }
    this.spawn();
  }

  /** How many children were started so far (for tests and diagnostics). */
  get spawnCount(): number {
    return this.spawns;
  }

  /** The running child's pid, if one runs. */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  /**
   * Resolves with the roles' problems once the first child is ready (or with why not, after the start
   * bound or a close). A role the child could not set up reads `not_configured` from then on.
   */
  started(): Promise<readonly string[]> {
    const timer = setTimeout(() => this.firstReady.resolve([`the radio process did not start within ${this.settings.startMs} ms`]), this.settings.startMs);
    return this.firstReady.promise.finally(() => clearTimeout(timer));
  }

  /** QA: sends a planted command to the child (the production child refuses it). */
  qa(command: string): void {
    this.post({ t: 'qa', command });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.restartTimer);
    clearTimeout(this.recoveryTimer);
    this.firstReady.resolve(['the radio process was closed']);
    const child = this.child;
    if (!child) {
      this.cut('the radio process was closed');
      return;
    }
    const exited = new Promise<void>((resolve) => this.exitWaiters.push(resolve));
    this.post({ t: 'shutdown' });
    const timer = setTimeout(() => child.kill(), this.settings.stopMs);
    await exited;
    clearTimeout(timer);
  }

  // ------------------------------------------------------------ the child

  private spawn(): void {
    this.spawns += 1;
    this.ready = false;
    this.startedAt = Date.now();
    let child: RadioChild;
    try {
      child = this.options.launcher();
    } catch (e) {
      this.child = undefined;
      this.gone(undefined, `it could not be started (${e instanceof Error ? e.message : String(e)})`);
      return;
    }
    this.child = child;
    child.onMessage((message) => this.receive(child, message));
    child.onExit((exit) => this.gone(child, describeExit(exit)));
    this.capture(child.stdout, 'stdout');
    this.capture(child.stderr, 'stderr');
    this.post({ t: 'init', init: this.options.init });
    this.pingSentAt = undefined;
    this.heartbeat = setInterval(() => this.beat(child), this.settings.heartbeatMs);
  }

  private beat(child: RadioChild): void {
    if (child !== this.child) return;
    const now = Date.now();
    if (this.pingSentAt !== undefined && now - this.pingSentAt >= this.settings.heartbeatDeadlineMs) {
      this.options.log.warn({ event: 'radio_process_hung' }, `the radio process did not answer for ${now - this.pingSentAt} ms: killing it`);
      child.kill();
      this.gone(child, `it stopped answering (no heartbeat for ${now - this.pingSentAt} ms)`);
      return;
    }
    if (this.pingSentAt === undefined) {
      this.pingSentAt = now;
      this.post({ t: 'ping', id: this.id() });
    }
  }

  /** The child's own output: to the log as library output, line by line, escaped and bounded. */
  private capture(stream: NodeJS.ReadableStream | null, name: 'stdout' | 'stderr'): void {
    if (!stream) return;
    let partial = '';
    const emit = (line: string): void => {
      if (line.trim() === '') return;
      this.options.log.warn({ event: 'ble_library_output', library: 'radio-process', stream: name }, childOutputLine(line));
    };
    stream.on('data', (chunk: Buffer | string) => {
      partial += chunk.toString();
      const lines = partial.split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) emit(line);
      // A line that never ends is cut, so a flood cannot grow this buffer.
      if (partial.length > 4 * MAX_OUTPUT_LINE) {
        emit(partial);
        partial = '';
      }
    });
    stream.on('end', () => emit(partial));
  }

  /** The child `child` (undefined: none could start) is gone, for `why`. */
  private gone(child: RadioChild | undefined, why: string): void {
    if (child !== undefined && child !== this.child) {
      // A child killed for not answering exits later: only its waiters are left to release.
      if (!this.child) this.releaseExitWaiters();
      return;
    }
    this.child = undefined;
    clearInterval(this.heartbeat);
    this.heartbeat = undefined;
    clearTimeout(this.recoveryTimer);
    this.recoveryTimer = undefined;
    const recovering = this.replacing !== undefined;
    if (this.replacing !== undefined) {
      why = this.replacing;
      this.replacing = undefined;
    }
    const wasReady = this.ready;
    this.ready = false;
    if (this.closed) {
      this.cut('the radio process was closed');
      this.releaseExitWaiters();
      return;
    }
    this.options.log.warn({ event: 'radio_process_stopped', ready: wasReady }, `the radio process stopped: ${why}`);
    this.cut(`the radio process stopped: ${why}`, why);
    if (Date.now() - this.startedAt >= this.settings.healthyMs) this.failures = 0;
    this.failures += 1;
    const ceiling = Math.min(this.settings.restartMaxMs, this.settings.restartMinMs * 2 ** Math.min(this.failures - 1, 30));
    // Equal jitter: at least half the ceiling, so kiosks restarted together do not stay in step.
    const delay = Math.round(ceiling / 2 + (this.settings.random() * ceiling) / 2);
    // `starting`, as an adapter coming up: the kiosk waits (bounded) for it rather than refusing the role,
    // and the staff status shows it as a warning; the detail says why.
    const detail = `the radio process stopped (${why}); restarting in ${(delay / 1000).toFixed(1)} s`;
    for (const [role, before] of [...this.availabilities]) {
      // Replaced to find a lost adapter: the role still has none until the fresh process says otherwise, and
      // staff and monitoring keep reading why (not a `starting` that comes and goes with each attempt).
      const stillLost = recovering && !before.usable && before.reason !== undefined && LOST_ADAPTER.has(before.reason);
      const base = (before.detail ?? before.reason ?? '').replace(/; looking for the adapter again .*$/, '');
      this.setAvailability(role, stillLost ? { ...before, detail: `${base}; looking for the adapter again with a fresh radio process in ${(delay / 1000).toFixed(1)} s` } : { usable: false, reason: 'starting', detail });
    }
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      if (!this.closed) this.spawn();
    }, delay);
    this.releaseExitWaiters();
  }

  private releaseExitWaiters(): void {
    for (const waiter of this.exitWaiters.splice(0)) waiter();
  }

  /** Ends everything that ran in the child that is gone. */
  private cut(reason: string, why?: string): void {
    for (const [id, pending] of [...this.pending]) {
      this.pending.delete(id);
      if (pending.kind === 'close') pending.resolve({ t: 'ok', id });
      else if (pending.kind === 'setup') pending.reject(new BleSetupError(`${RADIO_PROCESS_EXITED}: ${why ?? reason}`));
      else pending.reject(new Error(reason));
    }
    for (const [id, link] of [...this.links]) {
      this.links.delete(id);
      if (link.handedOut && !link.ended) {
        link.ended = true;
        link.handlers.onDisconnect(reason);
      }
    }
    for (const [id, session] of [...this.sessions]) {
      this.sessions.delete(id);
      if (!session.ended) {
        session.ended = true;
        session.onEvent({ kind: 'disconnect', reason });
      }
    }
  }

  private receive(child: RadioChild, raw: unknown): void {
    if (child !== this.child) return;
    const parsed = ChildMessage.safeParse(raw);
    if (!parsed.success) {
      this.options.log.warn({ event: 'radio_process_bad_message' }, `dropped a message from the radio process: ${describeIssue(parsed.error)}`);
      return;
    }
    const message = parsed.data;
    switch (message.t) {
      case 'ready': {
        this.ready = true;
        this.problems = message.problems;
        for (const role of [...this.availabilities.keys()]) {
          const availability = message[role];
          if (availability) this.missing.delete(role);
          else this.missing.add(role);
          const problem = message.problems.find((p) => p.startsWith(role));
          this.setAvailability(role, availability ?? { usable: false, reason: 'not_configured', detail: problem ?? `the radio process has no ${role}` });
        }
        this.firstReady.resolve(message.problems);
        return;
      }
      case 'pong':
        this.pingSentAt = undefined;
        return;
      case 'availability':
        if (this.availabilities.has(message.role)) this.setAvailability(message.role, message.availability);
        return;
      case 'ok': {
        const pending = this.pending.get(message.id);
        if (pending) {
          this.pending.delete(message.id);
          pending.resolve(message);
        } else if (message.link !== undefined && message.link === message.id && !this.links.has(message.id) && !this.sessions.has(message.id)) {
          // A connect/advertise aborted here that succeeded there: release it.
          this.post({ t: 'close', id: this.id(), link: message.link });
        }
        return;
      }
      case 'error': {
        const pending = this.pending.get(message.id);
        this.pending.delete(message.id);
        pending?.reject(fromWire(message.error));
        return;
      }
      case 'notification': {
        const link = this.links.get(message.link);
        if (link && !link.ended) link.handlers.onNotification(message.uuid, message.data);
        return;
      }
      case 'disconnect': {
        const link = this.links.get(message.link);
        if (!link) return;
        this.links.delete(message.link);
        if (link.handedOut && !link.ended) {
          link.ended = true;
          link.handlers.onDisconnect(message.reason);
        }
        return;
      }
      case 'event': {
        const session = this.sessions.get(message.session);
        if (session && !session.ended) {
          // A `disconnect` event is the phone leaving: the session stays open (advertising resumes).
          session.onEvent(this.peripheralEvent(message.session, message.event));
        }
        return;
      }
      case 'log':
        this.options.log[message.level]({ event: message.event, library: message.library ?? 'radio-process' }, escapePeerText(message.message, MAX_OUTPUT_LINE));
        return;
    }
  }

  private peripheralEvent(session: number, wire: PeripheralEventWire): PeripheralEvent {
    if (wire.kind !== 'read') return wire;
    let answered = false;
    const answer = (value?: Uint8Array): void => {
      if (answered) return;
      answered = true;
      this.post({ t: 'read-answer', session, read: wire.read, ...(value ? { value } : {}) });
    };
    return { kind: 'read', characteristicUuid: wire.characteristicUuid, offset: wire.offset, respond: (value) => answer(value), fail: () => answer() };
  }

  private setAvailability(role: Role, availability: Availability): void {
    this.availabilities.set(role, availability);
    for (const listener of this.listeners.get(role) ?? []) listener(availability);
    this.watchForLostAdapter();
  }

  /** Arms (or disarms) the fresh-process recovery for an adapter that stays gone (`recoverAfterMs`). */
  private watchForLostAdapter(): void {
    const lost = [...this.availabilities.values()].find((a) => !a.usable && a.reason !== undefined && LOST_ADAPTER.has(a.reason));
    // Back to the short wait once no role is lost; a restart in between (`starting`) is not "found".
    if (!lost && this.ready) this.recoveries = 0;
    if (!lost || !this.ready || this.settings.recoverAfterMs <= 0) {
      clearTimeout(this.recoveryTimer);
      this.recoveryTimer = undefined;
      return;
    }
    if (this.recoveryTimer) return;
    const wait = Math.min(MAX_RECOVERY_WAIT_MS, this.settings.recoverAfterMs * 2 ** Math.min(this.recoveries, 20));
    this.recoveryTimer = setTimeout(() => {
      this.recoveryTimer = undefined;
      const child = this.child;
      const still = [...this.availabilities.values()].find((a) => !a.usable && a.reason !== undefined && LOST_ADAPTER.has(a.reason));
      if (!child || !this.ready || this.closed || !still) return;
      if (this.links.size > 0 || this.sessions.size > 0 || this.pending.size > 0) {
        // A verification is using the radio: never cut it for this; look again later.
        this.watchForLostAdapter();
        return;
      }
      this.recoveries += 1;
      this.replacing = `replaced to find the Bluetooth adapter again (${still.reason ?? 'lost'} for ${(wait / 1000).toFixed(0)} s)`;
      this.options.log.warn({ event: 'radio_process_recovering', reason: still.reason, attempt: this.recoveries }, `the Bluetooth adapter stayed unusable for ${wait} ms: starting a fresh radio process`);
      this.post({ t: 'shutdown' });
      const kill = setTimeout(() => child.kill(), this.settings.stopMs);
      kill.unref();
      child.onExit(() => clearTimeout(kill));
    }, wait);
  }

  // ------------------------------------------------------------ for the proxies

  availabilityOf(role: Role): Availability {
    return this.availabilities.get(role) ?? { usable: false, reason: 'not_configured' };
  }

  onAvailability(role: Role, listener: (a: Availability) => void): () => void {
    const set = this.listeners.get(role) ?? new Set();
    this.listeners.set(role, set);
    set.add(listener);
    return () => set.delete(listener);
  }

  id(): number {
    return this.nextId++;
  }

  private post(message: ParentMessage): void {
    this.child?.postMessage(message);
  }

  /**
   * Sends a request and waits for its reply. `signal` aborting sends `abort` and rejects here at once;
   * a gone child rejects it (`setup`: with the stable reason key). `close` requests never reject.
   */
  request(kind: Pending['kind'], message: ParentMessage & { id: number }, signal?: AbortSignal, what = 'radio request'): Promise<Extract<ChildMessage, { t: 'ok' }>> {
    const checked = ParentMessage.safeParse(message);
    if (!checked.success) return Promise.reject(new Error(`${what}: ${describeIssue(checked.error)}`));
    if (!this.child || !this.ready) {
      if (kind === 'close') return Promise.resolve({ t: 'ok', id: message.id });
      const why = this.closed ? 'the radio process was closed' : 'the radio process is restarting';
      return Promise.reject(kind === 'setup' ? new BleSetupError(`${RADIO_PROCESS_RESTARTING}: ${why}`) : new Error(why));
    }
    if (signal?.aborted) return Promise.reject(abortedError(what));
    return new Promise((resolve, reject) => {
      const onAbort = (): void => {
        if (!this.pending.delete(message.id)) return;
        this.post({ t: 'abort', id: message.id });
        reject(abortedError(what));
      };
      const timer = kind === 'close' ? setTimeout(() => {
        if (this.pending.delete(message.id)) resolve({ t: 'ok', id: message.id });
      }, this.settings.closeMs) : undefined;
      const done = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      this.pending.set(message.id, {
        kind,
        resolve: (m) => {
          done();
          resolve(m);
        },
        reject: (e) => {
          done();
          reject(e);
        },
      });
      signal?.addEventListener('abort', onAbort, { once: true });
      this.post(message);
    });
  }

  registerLink(id: number, handlers: BleCentralHandlers): LinkEntry {
    const entry: LinkEntry = { handlers, handedOut: false, ended: false };
    this.links.set(id, entry);
    return entry;
  }

  dropLink(id: number): void {
    this.links.delete(id);
  }

  registerSession(id: number, onEvent: (event: PeripheralEvent) => void): void {
    this.sessions.set(id, { onEvent, ended: false });
  }

  dropSession(id: number): void {
    this.sessions.delete(id);
  }

  /** False once a ready child said it has no such role (its library could not load); true before. */
  hasRole(role: Role): boolean {
    return !this.missing.has(role);
  }

  /** The roles' problems the last ready child reported. */
  get lastProblems(): readonly string[] {
    return this.problems;
  }
}

/** Refuses a value no ATT PDU can carry before it crosses (the child's adapter would say the same). */
function tooLarge(operation: BleValueTooLargeError['operation'], data: Uint8Array, mtu: number | undefined): Error | undefined {
  return data.byteLength > ATT_MAX_VALUE_BYTES ? BleValueTooLargeError.check(operation, data.byteLength, mtu) : undefined;
}

class RadioCentral implements BleCentral {
  constructor(private readonly radio: RadioProcess) {}

  availability(): Availability {
    return this.radio.availabilityOf('central');
  }

  onAvailabilityChange(listener: (a: Availability) => void): () => void {
    return this.radio.onAvailability('central', listener);
  }

  async connect(profile: GattProfile, handlers: BleCentralHandlers, signal: AbortSignal): Promise<BleCentralLink> {
    const id = this.radio.id();
    const entry = this.radio.registerLink(id, handlers);
    let ok;
    try {
      ok = await this.radio.request('setup', { t: 'connect', id, profile: { serviceUuid: profile.serviceUuid, characteristics: profile.characteristics } }, signal, 'BLE connect');
    } catch (e) {
      this.radio.dropLink(id);
      throw e;
    }
    entry.handedOut = true;
    const radio = this.radio;
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
        radio.dropLink(id);
      },
    };
  }
}

class RadioPeripheral implements BlePeripheral {
  constructor(private readonly radio: RadioProcess) {}

  availability(): Availability {
    return this.radio.availabilityOf('peripheral');
  }

  onAvailabilityChange(listener: (a: Availability) => void): () => void {
    return this.radio.onAvailability('peripheral', listener);
  }

  async advertise(profile: GattProfile, onEvent: (event: PeripheralEvent) => void, signal: AbortSignal): Promise<BlePeripheralSession> {
    const id = this.radio.id();
    this.radio.registerSession(id, onEvent);
    try {
      await this.radio.request('setup', { t: 'advertise', id, profile: { serviceUuid: profile.serviceUuid, characteristics: profile.characteristics } }, signal, 'BLE advertise');
    } catch (e) {
      this.radio.dropSession(id);
      throw e;
    }
    const radio = this.radio;
    return {
      notify(uuid, data, notifySignal) {
        const refused = tooLarge('notification', data, undefined);
        if (refused) return Promise.reject(refused);
        return radio.request('io', { t: 'notify', id: radio.id(), session: id, uuid, data }, notifySignal, 'BLE notify').then(() => undefined);
      },
      flush(flushSignal) {
        return radio.request('io', { t: 'flush', id: radio.id(), link: id }, flushSignal, 'BLE flush').then(() => undefined);
      },
      async close() {
        radio.dropSession(id);
        await radio.request('close', { t: 'close', id: radio.id(), link: id }).catch(() => undefined);
      },
    };
  }
}
