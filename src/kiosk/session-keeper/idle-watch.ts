/**
 * The armed session waiting for a tap or a scan, and its watch while idle: what the backend sends on it
 * (idle-ending.ts), a health timer that proves the backend healthy once it stayed up, and two timers for
 * its age — renewal when `renewBeforeExpiryMs` is left (it stays usable while its replacement is prepared),
 * retirement when less than `minRemainingToStartMs` would be left. What follows each is the keeper's.
 */
import type { KioskConfig } from '../../platform/config.js';
import type { Logger } from '../../platform/log.js';
import type { Arrival } from '../relay-channel.js';
import { CloseCode } from '../relay-link.js';
import { HEALTHY_AFTER_MS } from '../retry-policy.js';
import { idleEnding, type IdleEnding } from './idle-ending.js';
import type { ArmedSession } from './keeper-types.js';
import type { SessionAge } from './session-age.js';
import type { SocketClosings } from './socket-closings.js';

export interface IdleEvents {
  /** The idle session lived long enough: the backend works. */
  healthy(): void;
  /** Renewal is due; the session stays idle and usable meanwhile. */
  renewDue(): void;
  /** The session was retired, too close to expiry, with no replacement yet. */
  retired(): void;
  /** The backend ended the idle session, or its socket closed. */
  ended(ending: IdleEnding): void;
}

export interface IdleWatchParts {
  readonly config: Pick<KioskConfig, 'session'>;
  readonly log: Logger;
  readonly age: SessionAge;
  readonly closings: SocketClosings;
  readonly showBackendErrorText: boolean;
  readonly events: IdleEvents;
}

export class IdleWatch {
  private armed: ArmedSession | undefined;
  /** Declares the backend healthy once an engaged idle session has stayed up long enough. */
  private healthTimer: NodeJS.Timeout | undefined;
  private renewTimer: NodeJS.Timeout | undefined;
  private expiryTimer: NodeJS.Timeout | undefined;

  constructor(private readonly parts: IdleWatchParts) {}

  /** The session waiting armed, if any. */
  get session(): ArmedSession | undefined {
    return this.armed;
  }

  /**
   * A newly armed session becomes the idle one; the one it replaces is closed. False when something the
   * backend sent before the watch was in place already ended it.
   */
  install(armed: ArmedSession): boolean {
    const old = this.armed;
    this.armed = armed;
    if (old) void this.close(old, CloseCode.normal, 'session renewed');
    this.watch(armed);
    if (this.armed !== armed) return false;
    this.scheduleRenewal(armed);
    return true;
  }

  /** The idle session is handed out: no longer watched here. */
  lend(): ArmedSession | undefined {
    const armed = this.armed;
    this.armed = undefined;
    armed?.channel.setInterceptor(undefined);
    this.clearTimers();
    return armed;
  }

  /** Closes the idle session (its timers, if they fire, find it gone). */
  drop(reason: string): void {
    const armed = this.armed;
    if (!armed) return;
    this.armed = undefined;
    void this.close(armed, CloseCode.normal, reason);
  }

  /** It serves until it retires, and is not renewed. */
  stopRenewal(): void {
    clearTimeout(this.renewTimer);
  }

  /** The keeper stops: the idle session, no longer watched, for the caller to close. */
  stop(): ArmedSession | undefined {
    this.clearTimers();
    const armed = this.armed;
    this.armed = undefined;
    return armed;
  }

  private clearTimers(): void {
    clearTimeout(this.renewTimer);
    clearTimeout(this.expiryTimer);
    clearTimeout(this.healthTimer);
  }

  private scheduleRenewal(armed: ArmedSession): void {
    clearTimeout(this.renewTimer);
    clearTimeout(this.expiryTimer);
    const { renewBeforeExpiryMs, minRemainingToStartMs } = this.parts.config.session;
    const { log, age, events } = this.parts;
    this.renewTimer = setTimeout(
      () => {
        if (this.armed !== armed) return;
        events.healthy(); // it lived this long: the backend works
        log.info({ event: 'session_renewing', sessionId: armed.session.id }, 'renewing the idle session before it expires');
        events.renewDue();
      },
      Math.max(0, age.remaining(armed.session) - renewBeforeExpiryMs) + 1,
    );
    this.expiryTimer = setTimeout(
      () => {
        if (this.armed !== armed) return;
        log.warn({ event: 'session_retired', sessionId: armed.session.id }, 'idle session too close to expiry; no replacement yet');
        this.armed = undefined;
        void this.close(armed, CloseCode.normal, 'session expiring');
        events.retired();
      },
      Math.max(0, age.remaining(armed.session) - minRemainingToStartMs) + 1,
    );
  }

  /** While idle, the backend should say nothing; anything it says ends the idle session. */
  private watch(armed: ArmedSession): void {
    clearTimeout(this.healthTimer);
    this.healthTimer = setTimeout(() => {
      if (this.armed === armed && armed.channel.isOpen) this.parts.events.healthy();
    }, HEALTHY_AFTER_MS);
    const handle = (arrival: Arrival): boolean => {
      if (this.armed !== armed) return false;
      this.armed = undefined;
      this.clearTimers();
      const ending = idleEnding(arrival, armed, this.parts.log, this.parts.showBackendErrorText);
      if (ending.close) void this.parts.closings.track(armed.session.id, armed.channel.close(ending.close.code, ending.close.reason));
      this.parts.events.ended(ending);
      return true;
    };
    armed.channel.setInterceptor(handle);
    // Frames (or a close) that came in the same read as the handshake were queued before the watcher.
    for (const arrival of armed.channel.takePending()) {
      if (this.armed !== armed) break;
      handle(arrival);
    }
  }

  private close(armed: ArmedSession, code: number, reason: string): Promise<void> {
    armed.channel.setInterceptor(() => true);
    return this.parts.closings.track(armed.session.id, armed.channel.close(code, reason));
  }
}
