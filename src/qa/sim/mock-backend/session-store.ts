/**
 * Sessions of the mock backend: created by `POST /sessions`, addressed by id, authenticated on the
 * WebSocket by their client secret, expired `lifetimeMs` after creation (spec §8: 10 minutes).
 */
import { randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import type { OutcomeWire } from './wire.js';

export interface StoredSession {
  readonly id: string;
  readonly clientSecret: string;
  readonly createdAt: number;
  readonly expiresAt: number;
  /** The last completed verification, returned by `GET /sessions/{id}`. */
  result: OutcomeWire | undefined;
  /** The open WebSocket, if any (one per session, spec §8). */
  connected: boolean;
}

export class SessionStore {
  private readonly sessions = new Map<string, StoredSession>();
  private readonly createdListeners = new Set<(session: StoredSession) => void>();

  constructor(
    private lifetimeMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  setLifetime(ms: number): void {
    this.lifetimeMs = ms;
  }

  create(): StoredSession {
    this.sweep();
    const createdAt = this.now();
    const session: StoredSession = {
      id: randomUUID(),
      clientSecret: randomBytes(24).toString('base64url'),
      createdAt,
      expiresAt: createdAt + this.lifetimeMs,
      result: undefined,
      connected: false,
    };
    this.sessions.set(session.id, session);
    for (const listener of this.createdListeners) {
      // An observer (QA: the soak collecting client secrets to search the logs for) must not break creation.
      try {
        listener(session);
      } catch {
        /* ignored */
      }
    }
    return session;
  }

  /** Calls `listener` with every session created from now on; returns the unsubscribe function. */
  onCreated(listener: (session: StoredSession) => void): () => void {
    this.createdListeners.add(listener);
    return () => this.createdListeners.delete(listener);
  }

  /** The live session with this id, or undefined when unknown or expired. */
  get(id: string): StoredSession | undefined {
    const session = this.sessions.get(id);
    if (!session) return undefined;
    if (this.now() >= session.expiresAt) {
      this.sessions.delete(id);
      return undefined;
    }
    return session;
  }

  get size(): number {
    return this.sessions.size;
  }

  private sweep(): void {
    const now = this.now();
    for (const [id, s] of this.sessions) if (now >= s.expiresAt && !s.connected) this.sessions.delete(id);
  }
}

/** Constant-time comparison of secrets. */
export function secretMatches(expected: string, given: string | undefined | null): boolean {
  if (given === undefined || given === null) return false;
  const a = Buffer.from(expected);
  const b = Buffer.from(given);
  return a.length === b.length && timingSafeEqual(a, b);
}
