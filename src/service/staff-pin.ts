/**
 * The staff PIN: stored only as a salted scrypt hash (`scrypt$N$r$p$saltB64$hashB64`), compared in
 * constant time, with a lockout after `staff.maxAttempts` wrong PINs in a row that doubles with each
 * further lockout (up to an hour). The counter and the lockout are persisted, so restarting the kiosk
 * does not buy an attacker fresh attempts.
 *
 * A staff session belongs to the screen connection that entered the PIN (the Electron kiosk window, or
 * one browser-host socket): other connections stay locked, and the session ends when its connection
 * closes, locks, or goes `staff.unlockMs` without a staff action.
 */
import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import type { StaffState, UnlockResult } from '../common/kiosk-api.js';
import { Pin } from '../common/kiosk-api.js';
import type { KioskConfig } from '../platform/config.js';
import { parsePinHash, PIN_KEY_BYTES, PIN_SALT_BYTES, PinHashError, type ScryptParams } from '../platform/pin-hash-format.js';

export { parsePinHash, PinHashError, type ScryptParams };
import type { StaffRecord } from './settings-store.js';

/** About 100 ms and 32 MiB per check on a small kiosk PC (OWASP's scrypt minimum is N=2^17 r=8 p=1 for passwords;
 *  a PIN is guarded by the lockout above all, so the cost only has to make an offline guess slow). */
export const DEFAULT_SCRYPT: ScryptParams = { N: 2 ** 15, r: 8, p: 1 };
// The lengths parsePinHash requires: what is stored is what a check derives.
const KEY_BYTES = PIN_KEY_BYTES;
const SALT_BYTES = PIN_SALT_BYTES;
export const MAX_LOCKOUT_MS = 3_600_000;

function scryptAsync(pin: string, salt: Buffer, params: ScryptParams): Promise<Buffer> {
  const options: ScryptOptions = { N: params.N, r: params.r, p: params.p, maxmem: 256 * params.N * params.r + 1024 * 1024 };
  return new Promise((resolve, reject) => {
    scrypt(pin.normalize('NFKC'), salt, KEY_BYTES, options, (error, key) => {
      if (error) reject(error);
      else resolve(key);
    });
  });
}

export async function hashPin(pin: string, params: ScryptParams = DEFAULT_SCRYPT): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const hash = await scryptAsync(pin, salt, params);
  return `scrypt$${params.N}$${params.r}$${params.p}$${salt.toString('base64')}$${hash.toString('base64')}`;
}

/** True when `pin` matches `stored`; a malformed `stored` throws {@link PinHashError}. */
export async function verifyPin(pin: string, stored: string): Promise<boolean> {
  const { params, salt, hash } = parsePinHash(stored);
  const candidate = await scryptAsync(pin, salt, params);
  return candidate.length === hash.length && timingSafeEqual(candidate, hash);
}

// ---------------------------------------------------------------- the staff session

export interface StaffGateOptions {
  /** Current staff settings (they may change with the configuration). */
  readonly config: () => KioskConfig['staff'];
  readonly record: StaffRecord;
  readonly persist: (record: StaffRecord) => Promise<void>;
  readonly now: () => number;
  /** The staff state changed (unlock, lock, expiry, lockout). */
  readonly onChange: () => void;
  readonly onEvent?: (
    event:
      | 'staff_unlocked'
      | 'staff_pin_wrong'
      | 'staff_locked_out'
      | 'staff_locked'
      | 'staff_pin_changed'
      | 'staff_pin_hash_invalid'
      | 'staff_record_unsaved',
    fields?: Record<string, number>,
  ) => void;
  readonly scrypt?: ScryptParams;
  /** A PIN hash set by the managed file, the command line or the test setup: it wins and cannot be changed on the screen. */
  readonly managedPinHash?: string;
}

export class ManagedPinError extends Error {
  override readonly name = 'ManagedPinError';
}

/** One connection's unlocked staff session. */
interface StaffSession {
  until: number;
  timer: NodeJS.Timeout;
}

export class StaffGate {
  private record: StaffRecord;
  /** Unlocked sessions by connection. */
  private readonly sessions = new Map<string, StaffSession>();
  /** Checks run one at a time: parallel guesses cannot overtake the counter. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly options: StaffGateOptions) {
    this.record = options.record;
  }

  /** The persisted record as loaded at start (the gate is built before the file is read). */
  replaceRecord(record: StaffRecord): void {
    this.record = record;
  }

  private get pinHash(): string | undefined {
    return this.options.managedPinHash ?? this.record.pinHash ?? this.options.config().pinHash;
  }

  get pinConfigured(): boolean {
    return this.pinHash !== undefined;
  }

  /** The connection has an unlocked staff session. */
  unlocked(connection: string): boolean {
    const session = this.sessions.get(connection);
    return session !== undefined && this.options.now() < session.until;
  }

  /** Some connection has an unlocked staff session (the updater waits for none). */
  anyUnlocked(): boolean {
    for (const connection of this.sessions.keys()) if (this.unlocked(connection)) return true;
    return false;
  }

  /** The staff state as `connection` sees it: its own session, the kiosk-wide PIN and lockout. */
  state(connection: string): StaffState {
    const now = this.options.now();
    const lockedOutUntil = this.record.lockedOutUntil !== null && this.record.lockedOutUntil > now ? this.record.lockedOutUntil : null;
    const unlocked = this.unlocked(connection);
    return {
      pinConfigured: this.pinConfigured,
      unlocked,
      unlockedUntil: unlocked ? (this.sessions.get(connection)?.until ?? null) : null,
      lockedOutUntil,
    };
  }

  /** Checks the PIN; a match opens a staff session for `connection` only. */
  unlock(pin: string, connection: string): Promise<UnlockResult> {
    const run = this.queue.then(() => this.check(pin, connection));
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async check(pin: string, connection: string): Promise<UnlockResult> {
    const stored = this.pinHash;
    if (stored === undefined) return { ok: false, reason: 'no_pin' };
    const now = this.options.now();
    if (this.record.lockedOutUntil !== null && this.record.lockedOutUntil > now) {
      return { ok: false, reason: 'locked_out', retryAfterMs: this.record.lockedOutUntil - now };
    }
    let match: boolean;
    try {
      // A PIN of the wrong form cannot match, but it costs an attempt all the same (no oracle on the form).
      match = Pin.safeParse(pin).success && (await verifyPin(pin, stored));
    } catch (e) {
      if (!(e instanceof PinHashError)) throw e;
      this.options.onEvent?.('staff_pin_hash_invalid');
      return { ok: false, reason: 'no_pin' };
    }
    const { maxAttempts, lockoutMs } = this.options.config();
    if (match) {
      await this.save({ ...this.record, failures: 0, lockouts: 0, lockedOutUntil: null });
      const until = this.extend(connection);
      this.options.onEvent?.('staff_unlocked');
      this.options.onChange();
      return { ok: true, unlockedUntil: until };
    }
    const failures = this.record.failures + 1;
    if (failures >= maxAttempts) {
      const lockouts = this.record.lockouts + 1;
      const duration = Math.min(lockoutMs * 2 ** Math.min(lockouts - 1, 30), MAX_LOCKOUT_MS);
      const until = this.options.now() + duration;
      await this.save({ ...this.record, failures: 0, lockouts, lockedOutUntil: until });
      this.options.onEvent?.('staff_locked_out', { lockouts, durationMs: duration });
      this.options.onChange();
      return { ok: false, reason: 'locked_out', retryAfterMs: duration };
    }
    await this.save({ ...this.record, failures, lockedOutUntil: null });
    this.options.onEvent?.('staff_pin_wrong', { attemptsLeft: maxAttempts - failures });
    return { ok: false, reason: 'wrong_pin', attemptsLeft: maxAttempts - failures };
  }

  private async save(record: StaffRecord): Promise<void> {
    this.record = record;
    try {
      await this.options.persist(record);
    } catch {
      // A full or read-only data folder must not lock staff out of the screens that diagnose it (the
      // support bundle): the counter and any lockout hold in memory, and the file keeps its last record.
      this.options.onEvent?.('staff_record_unsaved');
    }
  }

  /** A staff action on `connection`: its unlocked session lasts `unlockMs` from now. No-op while locked. */
  touch(connection: string): void {
    if (this.unlocked(connection)) this.extend(connection);
  }

  private extend(connection: string): number {
    const { unlockMs } = this.options.config();
    const until = this.options.now() + unlockMs;
    clearTimeout(this.sessions.get(connection)?.timer);
    const timer = setTimeout(() => this.expire(connection), unlockMs + 5);
    timer.unref();
    this.sessions.set(connection, { until, timer });
    return until;
  }

  private expire(connection: string): void {
    const session = this.sessions.get(connection);
    if (session === undefined) return;
    if (this.unlocked(connection)) {
      // Extended meanwhile by a clock the timer does not know (tests move `now`).
      session.timer = setTimeout(() => this.expire(connection), Math.max(5, session.until - this.options.now()));
      session.timer.unref();
      return;
    }
    this.sessions.delete(connection);
    this.options.onEvent?.('staff_locked');
    this.options.onChange();
  }

  /** Ends `connection`'s staff session (Lock, or the connection closed). */
  lock(connection: string): void {
    const session = this.sessions.get(connection);
    if (session === undefined) return;
    clearTimeout(session.timer);
    this.sessions.delete(connection);
    this.options.onEvent?.('staff_locked');
    this.options.onChange();
  }

  /** Sets a new PIN (staff, or `--set-pin`); clears the wrong-PIN counter and any lockout. */
  async setPin(pin: string): Promise<void> {
    if (this.options.managedPinHash !== undefined)
      throw new ManagedPinError(
        'the staff PIN is set by the managed configuration file, the command line or the test setup, and cannot be changed here',
      );
    const checked = Pin.parse(pin);
    const pinHash = await hashPin(checked, this.options.scrypt);
    await this.save({ pinHash, failures: 0, lockouts: 0, lockedOutUntil: null });
    this.options.onEvent?.('staff_pin_changed');
    this.options.onChange();
  }

  dispose(): void {
    for (const session of this.sessions.values()) clearTimeout(session.timer);
    this.sessions.clear();
  }
}
