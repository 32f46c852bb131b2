/**
 * Arming a session, one attempt: create one (or reuse the last), open its socket and send `engage`.
 *
 * - Re-arm: a session given back after an error, a violation or a dropped socket is reconnected with the same
 *   `id`/`client_secret` (spec §3, §5 rule 2) while it has time left; a spent one is replaced.
 * - Handshake 404 → the session is gone: the next attempt creates a new one. 409 → the same session again,
 *   a bounded number of times, then a new one. 401/403 on a new session (HTTP or handshake) → configuration
 *   error (the retry policy's decision).
 */
import type { Logger } from '../../platform/log.js';
import { AbortedError } from '../async-tools.js';
import { createFailure, handshakeFailure, type BackendFailure } from '../backend-failure.js';
import { RelayChannel } from '../relay-channel.js';
import { CloseCode, RelayHandshakeError } from '../relay-link.js';
import { SessionApiError, type Session } from '../session-client.js';
import type { ArmedSession, SessionKeeperOptions } from './keeper-types.js';
import { callSafely } from './listeners.js';
import type { SessionAge } from './session-age.js';
import type { SocketClosings } from './socket-closings.js';

/** A 404 on a session at least this old is an ordinary ending; sooner, whatever answered refused a new session. */
const FRESH_SESSION_MS = 30_000;

/** A session to reconnect instead of creating a new one. */
export interface Reusable {
  readonly session: Session;
  /** How often it was re-armed already. */
  readonly reuses: number;
  /** It was engaged at least once (a 404 or 401 on it then means it ended, not that it was refused). */
  readonly usedBefore: boolean;
  /** Handshake 409s in a row on it. */
  readonly conflicts: number;
}

/** Arming failed for a reason of the backend's (or of the way to it), classified for the retry policy. */
export class ArmingFailure extends Error {
  override readonly name = 'ArmingFailure';
  constructor(readonly failure: BackendFailure) {
    super(failure.detail);
  }
}

/** A fault of the kiosk's own while arming (a bug), logged: still a failure, so that it cannot make the keeper spin. */
export function armingFault(e: unknown, log: Logger): BackendFailure {
  const detail = e instanceof Error ? `${e.name}: ${e.message}` : 'unknown error';
  log.error({ event: 'arming_fault', detail }, 'unexpected fault while arming a session');
  return { kind: 'unreachable', stage: 'create', detail: `unexpected fault: ${detail}`.slice(0, 300) };
}

/** What arming is built from: the keeper's own options, and the parts it shares with the keeper. */
export interface ArmingParts
  extends Pick<SessionKeeperOptions, 'sessions' | 'connector' | 'config' | 'namespaces' | 'log' | 'onSessionCreated'> {
  readonly now: () => number;
  readonly age: SessionAge;
  /** A session's socket still closing is waited for before it is reconnected. */
  readonly closings: SocketClosings;
  /** The request budget: every request waits here first. */
  readonly admit: (signal: AbortSignal) => Promise<void>;
}

export class SessionArming {
  private reusable: Reusable | undefined;

  constructor(private readonly parts: ArmingParts) {}

  /** The session the next attempt reconnects (taken only if it still has time left), or none: a new one. */
  reuseNext(target: Reusable | undefined): void {
    this.reusable = target;
  }

  /**
   * Creates (or reuses) a session, opens its socket and sends `engage`: one attempt. What fails is thrown as an
   * {@link ArmingFailure}, and the session to try next time (the same one, or none) is kept for the next attempt.
   */
  async arm(signal: AbortSignal): Promise<ArmedSession> {
    let target = this.takeReusable();
    if (!target) {
      await this.parts.admit(signal);
      target = { session: await this.create(signal), reuses: 0, usedBefore: false, conflicts: 0 };
    }
    const { session, reuses } = target;
    await this.parts.closings.of(session.id);
    await this.parts.admit(signal);
    const channel = new RelayChannel();
    try {
      const link = await this.parts.connector.connect(session, { onFrame: channel.onFrame, onClose: channel.onClose }, signal);
      channel.attach(link);
    } catch (e) {
      if (!(e instanceof RelayHandshakeError)) throw e;
      if (e.kind === 'aborted') throw new AbortedError('arming aborted');
      const usedBefore = target.usedBefore || this.parts.now() - session.createdAt >= FRESH_SESSION_MS;
      const failure = handshakeFailure(e, { usedBefore });
      this.reusable = this.nextTarget(target, failure);
      throw new ArmingFailure(failure);
    }
    const namespaces = this.parts.namespaces();
    try {
      channel.send({ type: 'step_result', op: 'engage', status: 'ok', namespaces });
    } catch {
      // The socket closed right after opening: the same session may be tried again.
      await channel.close(CloseCode.normal, 'engage failed');
      this.reusable = { ...target, conflicts: 0 };
      throw new ArmingFailure({ kind: 'socket_lost', stage: 'socket', detail: 'the session socket closed right after it opened' });
    }
    this.parts.log.info(
      { event: 'session_armed', sessionId: session.id, remainingMs: this.parts.age.remaining(session) },
      'session engaged and waiting for a tap or a scan',
    );
    return { session, channel, namespaces, reuses };
  }

  /** After a handshake failure: the session to try next (the same one), or none (a new one is due). */
  private nextTarget(target: Reusable, failure: BackendFailure): Reusable | undefined {
    switch (failure.kind) {
      case 'session_gone':
      case 'secret_expired':
      case 'credentials_refused':
        return undefined;
      case 'socket_refused':
        // A 404 says this session is unknown; other refusals say nothing about it.
        return failure.status === 404 ? undefined : { ...target, conflicts: 0 };
      case 'conflict': {
        if (target.conflicts + 1 > this.parts.config.session.conflictRetries) {
          this.parts.log.warn(
            { event: 'session_conflict_exhausted', sessionId: target.session.id, conflicts: target.conflicts },
            'session stays busy; using a new one',
          );
          return undefined;
        }
        return { ...target, conflicts: target.conflicts + 1 };
      }
      default:
        // A network failure says nothing about the session: try it again later.
        return { ...target, conflicts: 0 };
    }
  }

  private takeReusable(): Reusable | undefined {
    const reusable = this.reusable;
    this.reusable = undefined;
    if (reusable && this.parts.age.worthReusing(reusable.session)) return reusable;
    return undefined;
  }

  private async create(signal: AbortSignal): Promise<Session> {
    try {
      const session = await this.parts.sessions.createSession(signal);
      this.parts.log.info({ event: 'session_created', sessionId: session.id }, 'session created');
      callSafely(this.parts.log, () => this.parts.onSessionCreated?.());
      return session;
    } catch (e) {
      if (!(e instanceof SessionApiError)) throw e;
      if (e.kind === 'aborted') throw new AbortedError('session creation aborted');
      throw new ArmingFailure(createFailure(e));
    }
  }
}
