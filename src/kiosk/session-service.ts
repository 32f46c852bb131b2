/**
 * What the kiosk needs of the backend's session endpoints: create a session (through the keeper's
 * factory) and fetch a result. Its own module so the kiosk and the result recovery both name it without
 * importing each other.
 */
import type { SessionResult } from '../common/protocol/messages.js';
import type { SessionFactory } from './session-keeper.js';

export interface SessionService extends SessionFactory {
  getResult(sessionId: string, signal?: AbortSignal): Promise<SessionResult>;
  /** Releases pooled connections (the HTTP client's keep-alive sockets). */
  close?(): Promise<void>;
}
