/** Whether a session can still serve, by its age and the request profile it was engaged with. */
import type { Namespaces } from '../../common/protocol/messages.js';
import type { KioskConfig } from '../../platform/config.js';
import type { Session } from '../session-client.js';
import type { ArmedSession } from './keeper-types.js';

export function sameNamespaces(a: Namespaces, b: Namespaces): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

export class SessionAge {
  constructor(
    private readonly config: Pick<KioskConfig, 'session'>,
    private readonly namespaces: () => Namespaces,
    private readonly now: () => number,
  ) {}

  /** Time left before the backend expires it. */
  remaining(session: Session): number {
    return session.createdAt + this.config.session.lifetimeMs - this.now();
  }

  /** It may be handed out: open, with at least `minRemainingToStartMs` left, engaged with today's profile. */
  usable(armed: ArmedSession): boolean {
    return (
      armed.channel.isOpen &&
      this.remaining(armed.session) >= this.config.session.minRemainingToStartMs &&
      sameNamespaces(armed.namespaces, this.namespaces())
    );
  }

  /** Usable, and not yet due for renewal. */
  fresh(armed: ArmedSession): boolean {
    return this.usable(armed) && this.remaining(armed.session) > this.config.session.renewBeforeExpiryMs;
  }

  /** Worth reconnecting rather than replacing: more than `renewBeforeExpiryMs` left. */
  worthReusing(session: Session): boolean {
    return this.remaining(session) > this.config.session.renewBeforeExpiryMs;
  }
}
