/**
 * The kiosk's side of its radio process: starts the child through a launcher (launcher.ts), serves the
 * `BleCentral` / `BlePeripheral` ports as proxies over the channel (protocol.ts), and keeps the child
 * alive. A native crash, a hang or stray output in noble/bleno then costs one verification, not the app
 * (docs/ARCHITECTURE.md "The radio process").
 *
 * This class is the child's lifecycle — start, stop, restart, close — and a facade over its parts in
 * `parent/`: the child's output into the log (`child-output.ts`), its exit and heartbeat (`child-watch.ts`),
 * the wait before a restart (`devices/shared/restart-backoff.ts`, shared with the voice process), the requests waiting for a reply (`pending-requests.ts`),
 * the open links and sessions (`open-links.ts`), the roles' availability (`role-availability.ts`), a fresh
 * process for a lost adapter (`adapter-recovery.ts`), and the port proxies (`radio-ports.ts`).
 *
 * When the child is gone, every open link gets `onDisconnect('the radio process stopped: …')`, a pending
 * connect/advertise rejects with `BleSetupError('radio_process_exited: …')`, availability reads `starting`
 * (detail: restarting in …), and the child is started again after an exponential backoff with jitter.
 */
import type { BleCentral, BlePeripheral } from '../../ports.js';
import type { RadioChild } from './launcher.js';
import { AdapterRecovery } from './parent/adapter-recovery.js';
import { captureChildOutput, logChildRecord } from './parent/child-output.js';
import { Heartbeat, describeExit } from './parent/child-watch.js';
import { OpenLinks } from './parent/open-links.js';
import { PendingRequests } from './parent/pending-requests.js';
import { RadioCentral, RadioPeripheral, type RadioRequester } from './parent/radio-ports.js';
import { radioSettings, type RadioProcessOptions, type RadioSettings } from './parent/radio-settings.js';
import { RestartBackoff } from '../../shared/restart-backoff.js';
import { RoleAvailability, type Role } from './parent/role-availability.js';
import { describeIssue, parseChildMessage, type ParentMessage } from './protocol.js';
import { errorText } from '../../../common/error-text.js';

export { childOutputLine } from './parent/child-output.js';
export { describeExit } from './parent/child-watch.js';
export { RADIO_PROCESS_EXITED, RADIO_PROCESS_RESTARTING } from './parent/pending-requests.js';
export type { RadioProcessOptions } from './parent/radio-settings.js';

export class RadioProcess {
  readonly central?: BleCentral;
  readonly peripheral?: BlePeripheral;
  private readonly settings: RadioSettings;
  private readonly requests: PendingRequests;
  private readonly links: OpenLinks;
  private readonly roles: RoleAvailability;
  private readonly recovery: AdapterRecovery;
  private readonly backoff: RestartBackoff;
  private child: RadioChild | undefined;
  private heartbeat: Heartbeat | undefined;
  private ready = false;
  private closed = false;
  private nextId = 1;
  private spawns = 0;
  private restartTimer: NodeJS.Timeout | undefined;
  private firstReady: { promise: Promise<readonly string[]>; resolve(problems: readonly string[]): void };
  private problems: readonly string[] = [];
  private exitWaiters: (() => void)[] = [];
  /** Why the running child is being replaced by the kiosk itself (told in place of its exit). */
  private replacing: string | undefined;

  constructor(private readonly options: RadioProcessOptions) {
    this.settings = radioSettings(options);
    const post = (message: ParentMessage): void => this.post(message);
    this.requests = new PendingRequests(post, this.settings.closeMs);
    this.links = new OpenLinks(post);
    this.backoff = new RestartBackoff(this.settings);
    this.recovery = new AdapterRecovery({
      recoverAfterMs: this.settings.recoverAfterMs,
      log: options.log,
      lost: () => this.roles.lost(),
      ready: () => this.ready,
      closed: () => this.closed,
      busy: () => this.links.inUse || this.requests.size > 0,
      replace: (why) => this.replace(why),
    });
    const roles: Role[] = [
      ...(options.init.central ? ['central' as const] : []),
      ...(options.init.peripheral ? ['peripheral' as const] : []),
    ];
    this.roles = new RoleAvailability(roles, () => this.recovery.watch());
    let resolveReady: (problems: readonly string[]) => void = () => undefined;
    const promise = new Promise<readonly string[]>((resolve) => (resolveReady = resolve));
    this.firstReady = { promise, resolve: resolveReady };
    const requester: RadioRequester = {
      id: () => this.id(),
      request: (kind, message, signal, what) => this.requests.send(kind, message, this.down(), signal, what),
    };
    if (options.init.central) this.central = new RadioCentral(requester, this.links, this.roles);
    if (options.init.peripheral) this.peripheral = new RadioPeripheral(requester, this.links, this.roles);
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
    const timer = setTimeout(
      () => this.firstReady.resolve([`the radio process did not start within ${this.settings.startMs} ms`]),
      this.settings.startMs,
    );
    return this.firstReady.promise.finally(() => clearTimeout(timer));
  }

  /** QA: sends a planted command to the child (the production child refuses it). */
  qa(command: string): void {
    this.post({ t: 'qa', command });
  }

  /** False once a ready child said it has no such role (its library could not load); true before. */
  hasRole(role: Role): boolean {
    return this.roles.hasRole(role);
  }

  /** The roles' problems the last ready child reported. */
  get lastProblems(): readonly string[] {
    return this.problems;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.restartTimer);
    this.recovery.stop();
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

  private spawn(): void {
    this.spawns += 1;
    this.ready = false;
    this.backoff.started(Date.now());
    let child: RadioChild;
    try {
      child = this.options.launcher();
    } catch (e) {
      this.child = undefined;
      this.gone(undefined, `it could not be started (${errorText(e)})`);
      return;
    }
    this.child = child;
    child.onMessage((message) => this.receive(child, message));
    child.onExit((exit) => this.gone(child, describeExit(exit)));
    captureChildOutput(child.stdout, 'stdout', this.options.log);
    captureChildOutput(child.stderr, 'stderr', this.options.log);
    this.post({ t: 'init', init: this.options.init });
    this.heartbeat = new Heartbeat({
      periodMs: this.settings.heartbeatMs,
      deadlineMs: this.settings.heartbeatDeadlineMs,
      ping: () => this.post({ t: 'ping', id: this.id() }),
      hung: (silentMs) => {
        this.options.log.warn({ event: 'radio_process_hung' }, `the radio process did not answer for ${silentMs} ms: killing it`);
        child.kill();
        this.gone(child, `it stopped answering (no heartbeat for ${silentMs} ms)`);
      },
    });
  }

  /** Asks the running child to stop (SIGKILL after `stopMs`), so that a fresh one starts; `why` is told for its exit. */
  private replace(why: string): void {
    const child = this.child;
    if (!child) return;
    this.replacing = why;
    this.post({ t: 'shutdown' });
    const kill = setTimeout(() => child.kill(), this.settings.stopMs);
    kill.unref();
    child.onExit(() => clearTimeout(kill));
  }

  /** The child `child` (undefined: none could start) is gone, for `why`. */
  private gone(child: RadioChild | undefined, why: string): void {
    if (child !== undefined && child !== this.child) {
      // A child killed for not answering exits later: only its waiters are left to release.
      if (!this.child) this.releaseExitWaiters();
      return;
    }
    this.child = undefined;
    this.heartbeat?.stop();
    this.heartbeat = undefined;
    this.recovery.stop();
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
    const delay = this.backoff.delayAfterStop(Date.now());
    this.roles.stopped(why, delay, recovering);
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
    this.requests.cut(reason, why);
    this.links.cut(reason);
  }

  private receive(child: RadioChild, raw: unknown): void {
    if (child !== this.child) return;
    const parsed = parseChildMessage(raw);
    if (!parsed.success) {
      this.options.log.warn(
        { event: 'radio_process_bad_message' },
        `dropped a message from the radio process: ${describeIssue(parsed.error)}`,
      );
      return;
    }
    const message = parsed.data;
    switch (message.t) {
      case 'ready':
        this.ready = true;
        this.problems = message.problems;
        this.roles.ready(message);
        this.firstReady.resolve(message.problems);
        return;
      case 'pong':
        this.heartbeat?.answered();
        return;
      case 'availability':
        this.roles.report(message.role, message.availability);
        return;
      case 'ok':
        if (!this.requests.settle(message) && message.link !== undefined && message.link === message.id && !this.links.holds(message.id)) {
          // A connect/advertise aborted here that succeeded there: release it.
          this.post({ t: 'close', id: this.id(), link: message.link });
        }
        return;
      case 'error':
        this.requests.settle(message);
        return;
      case 'notification':
      case 'disconnect':
      case 'event':
        this.links.receive(message);
        return;
      case 'log':
        logChildRecord(this.options.log, message);
        return;
    }
  }

  /** Why no request can cross now, or undefined while a ready child runs. */
  private down(): string | undefined {
    if (this.child && this.ready) return undefined;
    return this.closed ? 'the radio process was closed' : 'the radio process is restarting';
  }

  private id(): number {
    return this.nextId++;
  }

  private post(message: ParentMessage): void {
    this.child?.postMessage(message);
  }
}
