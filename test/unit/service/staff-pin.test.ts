import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/platform/config.js';
import { SettingsStore, type StaffRecord } from '../../../src/service/settings-store.js';
import { hashPin, parsePinHash, PinHashError, StaffGate, verifyPin, MAX_LOCKOUT_MS } from '../../../src/service/staff-pin.js';

const CHEAP = { N: 2 ** 10, r: 8, p: 1 };
const STAFF = { maxAttempts: 3, lockoutMs: 60_000, unlockMs: 120_000 };
const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

describe('PIN hashing', () => {
  it('hashes with salted scrypt in the documented format and verifies in constant time', async () => {
    const stored = await hashPin('1234');
    expect(stored).toMatch(/^scrypt\$32768\$8\$1\$[A-Za-z0-9+/=]{24}\$[A-Za-z0-9+/=]{44}$/);
    expect(await verifyPin('1234', stored)).toBe(true);
    expect(await verifyPin('1235', stored)).toBe(false);
    // Salted: the same PIN hashes differently.
    expect(await hashPin('1234', CHEAP)).not.toBe(await hashPin('1234', CHEAP));
  });

  it('refuses malformed or abusive stored hashes', async () => {
    expect(() => parsePinHash('plain:1234')).toThrow(PinHashError);
    expect(() => parsePinHash('scrypt$1000$8$1$c2FsdHNhbHQ=$aGFzaGhhc2hoYXNoaGFzaA==')).toThrow(/N/);
    expect(() => parsePinHash(`scrypt$${2 ** 30}$8$1$c2FsdHNhbHQ=$aGFzaGhhc2hoYXNoaGFzaA==`)).toThrow(/N/);
    expect(() => parsePinHash('scrypt$1024$99$1$c2FsdHNhbHQ=$aGFzaGhhc2hoYXNoaGFzaA==')).toThrow(/r or p/);
    await expect(verifyPin('1234', 'scrypt$1024$8$1$$')).rejects.toThrow(PinHashError);
  });
});

/** Accepted means usable: a hash parsePinHash takes must let the right PIN in (else staff are locked out). */
async function acceptedMeansUsable(stored: string, pin: string): Promise<'refused' | 'usable' | 'locks staff out'> {
  try {
    parsePinHash(stored);
  } catch (e) {
    expect(e).toBeInstanceOf(PinHashError);
    return 'refused';
  }
  return (await verifyPin(pin, stored)) ? 'usable' : 'locks staff out';
}

describe('truncated or mangled hashes (issue 30: a cut copy passed the check, then never matched)', () => {
  it('a copy cut at every character: refused, or (only a dropped "=" pad) still lets the right PIN in', async () => {
    const stored = await hashPin('482915', CHEAP);
    const outcomes = new Map<string, number>();
    for (let k = 0; k < stored.length; k++) {
      const outcome = await acceptedMeansUsable(stored.slice(0, k), '482915');
      expect(outcome, `cut to ${k} of ${stored.length} characters`).not.toBe('locks staff out');
      outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
    }
    // The whole hash, and the one cut that drops only its "=" pad (the same 32 bytes), are usable.
    expect(await acceptedMeansUsable(stored, '482915')).toBe('usable');
    expect(outcomes.get('usable')).toBe(1);
  });

  it('a hash or salt of every byte length but the derived one is refused, padded or not, naming the lengths', async () => {
    const stored = await hashPin('482915', CHEAP);
    const [head, salt, hash] = [stored.split('$').slice(0, 4).join('$'), stored.split('$')[4] ?? '', stored.split('$')[5] ?? ''];
    const bytes = Buffer.from(hash, 'base64');
    const saltBytes = Buffer.from(salt, 'base64');
    for (let n = 0; n <= 48; n++) {
      const long = Buffer.concat([bytes, bytes]).subarray(0, n).toString('base64');
      const longSalt = Buffer.concat([saltBytes, saltBytes, saltBytes]).subarray(0, n).toString('base64');
      for (const text of [long, long.replace(/=+$/, '')]) {
        const candidate = `${head}$${salt}$${text}`;
        if (n === 32) expect(await acceptedMeansUsable(candidate, '482915')).toBe('usable');
        else if (n === 0) expect(() => parsePinHash(candidate)).toThrow(PinHashError);
        else
          expect(() => parsePinHash(candidate), `hash of ${n} bytes`).toThrow(
            `a 16-byte salt and a 32-byte hash, this one has 16 and ${n}`,
          );
      }
      for (const text of [longSalt, longSalt.replace(/=+$/, '')]) {
        const candidate = `${head}$${text}$${hash}`;
        if (n === 16) expect(await acceptedMeansUsable(candidate, '482915')).toBe('usable');
        else if (n === 0) expect(() => parsePinHash(candidate)).toThrow(PinHashError);
        else
          expect(() => parsePinHash(candidate), `salt of ${n} bytes`).toThrow(
            `a 16-byte salt and a 32-byte hash, this one has ${n} and 32`,
          );
      }
    }
  });

  it('a cost too small to protect a PIN is refused: N below 2^10, such as "1024" with digits dropped (fast-check seed 167793628)', async () => {
    const stored = await hashPin('4321', CHEAP);
    expect(stored.startsWith('scrypt$1024$')).toBe(true);
    // Characters 7 to 10 are "102": what is left reads N = 4, a power of two that no check of this PIN matches.
    const mangled = stored.slice(0, 7) + stored.slice(10);
    expect(mangled.startsWith('scrypt$4$8$1$')).toBe(true);
    expect(() => parsePinHash(mangled)).toThrow(/unusable N \(a power of two from 2\^10 to 2\^20\)/);
    for (const n of [2, 256, 512]) expect(() => parsePinHash(stored.replace('$1024$', `$${n}$`))).toThrow(/unusable N/);
    expect(await acceptedMeansUsable(stored, '4321')).toBe('usable');
  });

  it('as a property: whatever is cut or dropped from a hash, accepted means the right PIN gets in', async () => {
    const stored = await hashPin('4321', CHEAP);
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: stored.length }), fc.integer({ min: 0, max: stored.length }), async (from, to) => {
        // Drop the characters between two positions (a cut end is the case to = length).
        const [a, b] = from <= to ? [from, to] : [to, from];
        const mangled = stored.slice(0, a) + stored.slice(b);
        const outcome = await acceptedMeansUsable(mangled, '4321');
        expect(outcome).not.toBe('locks staff out');
      }),
      { numRuns: 300 },
    );
  });

  it('the configuration names staff.pinHash and the lengths for a truncated copy, and makes no PIN of it', async () => {
    const stored = await hashPin('482915', CHEAP);
    // Cut after 40 of the hash's 44 characters: 30 bytes, a whole base64 group, the case that passed before.
    const cut = stored.slice(0, stored.length - 4);
    expect(() => parseConfig({ staff: { pinHash: cut } })).toThrow(/staff\.pinHash: .*32-byte hash, this one has 16 and 30.*--set-pin/);
    expect(parseConfig({ staff: { pinHash: stored } }).staff.pinHash).toBe(stored);
  });
});

describe('StaffGate', () => {
  async function gate(record: Partial<StaffRecord> = {}, clock = { now: 1_000_000 }) {
    const dir = await mkdtemp(join(tmpdir(), 'mdl-kiosk-pin-'));
    dirs.push(dir);
    const store = new SettingsStore(dir);
    await store.load();
    const pinHash = await hashPin('4321', CHEAP);
    const changes: string[] = [];
    const make = (rec: StaffRecord): StaffGate =>
      new StaffGate({
        config: () => STAFF,
        record: rec,
        persist: (r) => store.saveStaff(r),
        now: () => clock.now,
        onChange: () => changes.push('change'),
        scrypt: CHEAP,
      });
    const staff = make({ pinHash, failures: 0, lockouts: 0, lockedOutUntil: null, ...record });
    return { staff, store, dir, clock, make, changes };
  }

  it('unlocks with the right PIN for unlockMs, extended by staff actions', async () => {
    const { staff, clock } = await gate();
    expect(staff.state('screen-a')).toEqual({ pinConfigured: true, unlocked: false, unlockedUntil: null, lockedOutUntil: null });
    expect(await staff.unlock('4321', 'screen-a')).toEqual({ ok: true, unlockedUntil: clock.now + STAFF.unlockMs });
    clock.now += 100_000;
    staff.touch('screen-a');
    clock.now += 100_000;
    expect(staff.unlocked('screen-a')).toBe(true);
    clock.now += 30_000;
    expect(staff.unlocked('screen-a')).toBe(false);
    staff.touch('screen-a'); // no effect once expired
    expect(staff.unlocked('screen-a')).toBe(false);
    staff.dispose();
  });

  it('locks out after maxAttempts wrong PINs, doubling per lockout; the counter survives a restart', async () => {
    const { staff, store, clock, make } = await gate();
    expect(await staff.unlock('0000', 'screen-a')).toEqual({ ok: false, reason: 'wrong_pin', attemptsLeft: 2 });
    expect(await staff.unlock('abc', 'screen-a')).toEqual({ ok: false, reason: 'wrong_pin', attemptsLeft: 1 });
    expect(await staff.unlock('1111', 'screen-a')).toEqual({ ok: false, reason: 'locked_out', retryAfterMs: 60_000 });
    // Even the right PIN is refused during the lockout, without being checked.
    expect(await staff.unlock('4321', 'screen-a')).toMatchObject({ ok: false, reason: 'locked_out' });
    // A restart reads the persisted lockout.
    const reloaded = new SettingsStore(store.path.replace(/\/settings\.json$/, ''));
    const { staff: record } = await reloaded.load();
    expect(record).toMatchObject({ failures: 0, lockouts: 1, lockedOutUntil: clock.now + 60_000 });
    const restarted = make(record);
    expect(await restarted.unlock('4321', 'screen-a')).toMatchObject({ ok: false, reason: 'locked_out', retryAfterMs: 60_000 });
    clock.now += 60_001;
    for (let i = 0; i < 3; i++) await restarted.unlock('9999', 'screen-a');
    expect(restarted.state('screen-a').lockedOutUntil).toBe(clock.now + 120_000);
    clock.now += 120_001;
    expect(await restarted.unlock('4321', 'screen-a')).toMatchObject({ ok: true });
    const file = JSON.parse(await readFile(store.path, 'utf8')) as { staff: StaffRecord };
    expect(file.staff).toMatchObject({ failures: 0, lockouts: 0, lockedOutUntil: null });
    restarted.dispose();
    staff.dispose();
  });

  it('caps the lockout at one hour', async () => {
    const { staff } = await gate({ lockouts: 20 });
    for (let i = 0; i < 3; i++) await staff.unlock('0000', 'screen-a');
    expect(await staff.unlock('4321', 'screen-a')).toMatchObject({ reason: 'locked_out', retryAfterMs: MAX_LOCKOUT_MS });
  });

  it('a data folder that cannot be written (full disk) does not lock staff out: the right PIN unlocks, wrong ones still lock out', async () => {
    const clock = { now: 1_000_000 };
    const events: string[] = [];
    const full = (): Promise<void> =>
      Promise.reject(Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' }));
    const staff = new StaffGate({
      config: () => STAFF,
      record: { pinHash: await hashPin('4321', CHEAP), failures: 0, lockouts: 0, lockedOutUntil: null },
      persist: full,
      now: () => clock.now,
      onChange: () => undefined,
      onEvent: (event) => events.push(event),
      scrypt: CHEAP,
    });
    expect(await staff.unlock('4321', 'screen-a')).toMatchObject({ ok: true });
    expect(events).toEqual(['staff_record_unsaved', 'staff_unlocked']);
    // The counter holds in memory: no fresh attempts for an attacker because the file was not written.
    expect(await staff.unlock('0000', 'screen-b')).toMatchObject({ ok: false, reason: 'wrong_pin', attemptsLeft: 2 });
    expect(await staff.unlock('0000', 'screen-b')).toMatchObject({ ok: false, reason: 'wrong_pin', attemptsLeft: 1 });
    expect(await staff.unlock('0000', 'screen-b')).toMatchObject({ ok: false, reason: 'locked_out' });
    expect(await staff.unlock('4321', 'screen-b')).toMatchObject({ ok: false, reason: 'locked_out' });
    staff.dispose();
  });

  it('parallel guesses are checked one at a time', async () => {
    const { staff } = await gate();
    const results = await Promise.all(['1', '2', '3', '4', '5'].map((d) => staff.unlock(d.repeat(4), 'screen-a')));
    expect(results.map((r) => (r.ok ? 'ok' : r.reason))).toEqual(['wrong_pin', 'wrong_pin', 'locked_out', 'locked_out', 'locked_out']);
  });

  it('without a PIN every unlock says no_pin; setPin sets one and clears a lockout', async () => {
    const { staff } = await gate({ pinHash: undefined, lockouts: 2, lockedOutUntil: 9e15 });
    const noPin = new StaffGate({
      config: () => STAFF,
      record: { failures: 0, lockouts: 0, lockedOutUntil: null },
      persist: () => Promise.resolve(),
      now: Date.now,
      onChange: () => undefined,
    });
    expect(await noPin.unlock('1234', 'screen-a')).toEqual({ ok: false, reason: 'no_pin' });
    await noPin.setPin('24680');
    expect(await noPin.unlock('24680', 'screen-a')).toMatchObject({ ok: true });
    noPin.dispose();
    await expect(staff.setPin('12a4')).rejects.toThrow();
  });

  it('a staff session belongs to the connection that entered the PIN: others stay locked; lock and expiry end only that one', async () => {
    const { staff, clock } = await gate();
    expect(await staff.unlock('4321', 'screen-a')).toMatchObject({ ok: true });
    expect(staff.unlocked('screen-a')).toBe(true);
    expect(staff.unlocked('screen-b')).toBe(false);
    expect(staff.state('screen-b')).toMatchObject({ unlocked: false, unlockedUntil: null });
    expect(staff.anyUnlocked()).toBe(true);
    // A staff action of another connection extends nothing of A's (and opens nothing for B).
    clock.now += 100_000;
    staff.touch('screen-b');
    expect(staff.unlocked('screen-b')).toBe(false);
    expect(await staff.unlock('4321', 'screen-b')).toMatchObject({ ok: true });
    // B locks: A is still unlocked.
    staff.lock('screen-b');
    expect(staff.unlocked('screen-b')).toBe(false);
    expect(staff.unlocked('screen-a')).toBe(true);
    clock.now += 30_000;
    expect(staff.unlocked('screen-a')).toBe(false);
    expect(staff.anyUnlocked()).toBe(false);
    staff.dispose();
  });
});
