/**
 * The roles' availability as the kiosk sees it through the radio process: `starting` until a child is
 * ready, then what the child reports, `not_configured` for a role the child could not set up, and while the
 * child restarts `starting` again (or still lost, when it was replaced to find a lost adapter). Listeners
 * per role; `changed` is called after every change.
 */
import type { Availability } from '../../../ports.js';
import type { ChildMessage } from '../protocol.js';

export type Role = 'central' | 'peripheral';

/** Availability reasons of an adapter that is gone (ports.ts): a fresh process may find it again. */
const LOST_ADAPTER: ReadonlySet<string> = new Set(['powered_off', 'no_adapter', 'no_radio', 'adapter_error']);

function isLostAdapter(a: Availability): boolean {
  return !a.usable && a.reason !== undefined && LOST_ADAPTER.has(a.reason);
}

export class RoleAvailability {
  private readonly availabilities = new Map<Role, Availability>();
  private readonly listeners = new Map<Role, Set<(a: Availability) => void>>();
  /** Roles a ready child said it has not (its library could not load). */
  private readonly missing = new Set<Role>();

  constructor(
    roles: readonly Role[],
    private readonly changed: () => void,
  ) {
    const starting: Availability = { usable: false, reason: 'starting', detail: 'the radio process is starting' };
    for (const role of roles) this.availabilities.set(role, starting);
  }

  of(role: Role): Availability {
    return this.availabilities.get(role) ?? { usable: false, reason: 'not_configured' };
  }

  on(role: Role, listener: (a: Availability) => void): () => void {
    const set = this.listeners.get(role) ?? new Set();
    this.listeners.set(role, set);
    set.add(listener);
    return () => set.delete(listener);
  }

  /** False once a ready child said it has no such role (its library could not load); true before. */
  hasRole(role: Role): boolean {
    return !this.missing.has(role);
  }

  /** The first role's availability whose adapter is gone, if any. */
  lost(): Availability | undefined {
    return [...this.availabilities.values()].find(isLostAdapter);
  }

  /** What the child reports of a role (a role not configured here is ignored). */
  report(role: Role, availability: Availability): void {
    if (this.availabilities.has(role)) this.set(role, availability);
  }

  /** A ready child's word on every role: its availability, or `not_configured` with the child's problem. */
  ready(message: Extract<ChildMessage, { t: 'ready' }>): void {
    for (const role of [...this.availabilities.keys()]) {
      const availability = message[role];
      if (availability) this.missing.delete(role);
      else this.missing.add(role);
      const problem = message.problems.find((p) => p.startsWith(role));
      this.set(role, availability ?? { usable: false, reason: 'not_configured', detail: problem ?? `the radio process has no ${role}` });
    }
  }

  /**
   * The child stopped for `why` and the next starts in `delayMs`. `recovering`: it was replaced to find a lost
   * adapter.
   */
  stopped(why: string, delayMs: number, recovering: boolean): void {
    // `starting`, as an adapter coming up: the kiosk waits (bounded) for it rather than refusing the role,
    // and the staff status shows it as a warning; the detail says why.
    const detail = `the radio process stopped (${why}); restarting in ${(delayMs / 1000).toFixed(1)} s`;
    for (const [role, before] of [...this.availabilities]) {
      // Replaced to find a lost adapter: the role still has none until the fresh process says otherwise, and
      // staff and monitoring keep reading why (not a `starting` that comes and goes with each attempt).
      const stillLost = recovering && isLostAdapter(before);
      const base = (before.detail ?? before.reason ?? '').replace(/; looking for the adapter again .*$/, '');
      this.set(
        role,
        stillLost
          ? { ...before, detail: `${base}; looking for the adapter again with a fresh radio process in ${(delayMs / 1000).toFixed(1)} s` }
          : { usable: false, reason: 'starting', detail },
      );
    }
  }

  private set(role: Role, availability: Availability): void {
    this.availabilities.set(role, availability);
    for (const listener of this.listeners.get(role) ?? []) listener(availability);
    this.changed();
  }
}
