/**
 * The staff PIN: stored only as a salted scrypt hash (`scrypt$N$r$p$saltB64$hashB64`), compared in
 * constant time, with a lockout after `staff.maxAttempts` wrong PINs in a row that doubles with each
 * further lockout (up to an hour). The counter and the lockout are persisted, so restarting the kiosk
 * does not buy an attacker fresh attempts. An unlocked staff session ends after `staff.unlockMs` without
 * a staff action.
 */
import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import type { StaffState, UnlockResult } from '../common/kiosk-api.js';
import { Pin } from '../common/kiosk-api.js';
import type { KioskConfig } from '../kiosk/config.js';
import type { StaffRecord } from './settings-store.js';

export interface ScryptParams {
  readonly N: number;
  readonly r: number;
  readonly p: number;
}

/** About 100 ms and 32 MiB per check on a small kiosk PC (OWASP's scrypt minimum is N=2^17 r=8 p=1 for passwords;
 *  a PIN is guarded by the lockout above all, so the cost only has to make an offline guess slow). */
export const DEFAULT_SCRYPT: ScryptParams = { N: 2 ** 15, r: 8, p: 1 };
const KEY_BYTES = 32;
const SALT_BYTES = 16;
/** Bounds on the parameters read from a file, so a tampered hash cannot make a check eat the machine. */
const MAX_LOG2_N = 20;
export const MAX_LOCKOUT_MS = 3_600_000;

export class PinHashError extends Error {
  override readonly name = 'PinHashError';
}

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

export function parsePinHash(stored: string): { params: ScryptParams; salt: Buffer; hash: Buffer } {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') throw new PinHashError('the staff PIN hash is not in the form scrypt$N$r$p$salt$hash');
  const [N, r, p] = parts.slice(1, 4).map((v) => (/^[0-9]{1,10}$/.test(v) ? Number(v) : NaN)) as [number, number, number];
  const log2N = Math.log2(N);
  if (!Number.isInteger(log2N) || log2N < 1 || log2N > MAX_LOG2_N) throw new PinHashError(`the staff PIN hash has an unusable N (a power of two up to 2^${MAX_LOG2_N})`);
  if (!(r >= 1 && r <= 32) || !(p >= 1 && p <= 16)) throw new PinHashError('the staff PIN hash has an unusable r or p');
  const salt = Buffer.from(parts[4] ?? '', 'base64');
  const hash = Buffer.from(parts[5] ?? '', 'base64');
  if (salt.length < 8 || hash.length < 16) throw new PinHashError('the staff PIN hash has a short salt or hash');
  return { params: { N, r, p }, salt, hash };
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
  readonly onEvent?: (event: 'staff_unlocked' | 'staff_pin_wrong' | 'staff_locked_out' | 'staff_locked' | 'staff_pin_changed' | 'staff_pin_hash_invalid', fields?: Record<string, number>) => void;
  readonly scrypt?: ScryptParams;
  /** A PIN hash set by the managed file, the command line or the test setup: it wins and cannot be changed on the screen. */
  readonly managedPinHash?: string;
}

export class ManagedPinError extends Error {
  override readonly name = 'ManagedPinError';
}

export class StaffGate {
  private record: StaffRecord;
  private unlockedUntil: number | null = null;
  private expiryTimer: NodeJS.Timeout | undefined;
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

  unlocked(): boolean {
    return this.unlockedUntil !== null && this.options.now() < this.unlockedUntil;
  }

  state(): StaffState {
    const now = this.options.now();
    const lockedOutUntil = this.record.lockedOutUntil !== null && this.record.lockedOutUntil > now ? this.record.lockedOutUntil : null;
    const unlocked = this.unlocked();
    return { pinConfigured: this.pinConfigured, unlocked, unlockedUntil: unlocked ? this.unlockedUntil : null, lockedOutUntil };
  }

  unlock(pin: string): Promise<UnlockResult> {
    const run = this.queue.then(() => this.check(pin));
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async check(pin: string): Promise<UnlockResult> {
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
      this.extend();
      this.options.onEvent?.('staff_unlocked');
      this.options.onChange();
      return { ok: true, unlockedUntil: this.unlockedUntil ?? this.options.now() };
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
    await this.options.persist(record);
  }

  /** A staff action: the unlocked session lasts `unlockMs` from now. No-op while locked. */
  touch(): void {
    if (this.unlocked()) this.extend();
  }

  private extend(): void {
    this.unlockedUntil = this.options.now() + this.options.config().unlockMs;
    clearTimeout(this.expiryTimer);
    this.expiryTimer = setTimeout(() => this.expire(), this.options.config().unlockMs + 5);
    this.expiryTimer.unref();
  }

  private expire(): void {
    if (this.unlockedUntil === null) return;
    if (this.unlocked()) {
      // Extended meanwhile by a clock the timer does not know (tests move `now`).
      this.expiryTimer = setTimeout(() => this.expire(), Math.max(5, this.unlockedUntil - this.options.now()));
      this.expiryTimer.unref();
      return;
    }
    this.unlockedUntil = null;
    this.options.onEvent?.('staff_locked');
    this.options.onChange();
  }

  lock(): void {
    clearTimeout(this.expiryTimer);
    const was = this.unlockedUntil !== null;
    this.unlockedUntil = null;
    if (was) {
      this.options.onEvent?.('staff_locked');
      this.options.onChange();
    }
  }

  /** Sets a new PIN (staff, or `--set-pin`); clears the wrong-PIN counter and any lockout. */
  async setPin(pin: string): Promise<void> {
    if (this.options.managedPinHash !== undefined) throw new ManagedPinError('the staff PIN is set by the managed configuration file, the command line or the test setup, and cannot be changed here');
    const checked = Pin.parse(pin);
    const pinHash = await hashPin(checked, this.options.scrypt);
    await this.save({ pinHash, failures: 0, lockouts: 0, lockedOutUntil: null });
    this.options.onEvent?.('staff_pin_changed');
    this.options.onChange();
  }

  dispose(): void {
    clearTimeout(this.expiryTimer);
  }
}
