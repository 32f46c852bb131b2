/**
 * The presence parts of the PC/SC reader alone, without a service: what status words mean for the card on a
 * reader (`card-presence.ts`), and each presence handed to one `nextCard`, once (`presence-handout.ts`).
 */
import { describe, expect, it } from 'vitest';
import { PresenceTracker } from '../../../../src/devices/pcsc/card-presence.js';
import { ReaderState } from '../../../../src/devices/pcsc/pcsc-binding.js';
import { PresenceHandout } from '../../../../src/devices/pcsc/presence-handout.js';
import { silentLog } from '../../../../src/devices/pcsc/reader-options.js';
import { Presence, ReaderEntry } from '../../../../src/devices/pcsc/reader-state.js';
import { FakeReader, FakeSlot } from '../../../support/fake-pcsclite.js';

/** A status word with the insertion counter `counter` in its upper half. */
const word = (flags: number, counter: number): number => ((counter << 16) | flags) >>> 0;

function tracked(): { entry: ReaderEntry; tracker: PresenceTracker; began: () => number; drops: () => number } {
  let began = 0;
  let drops = 0;
  const entry = new ReaderEntry(new FakeReader(new FakeSlot('Fake Reader PICC 0')));
  const tracker = new PresenceTracker({
    log: silentLog,
    dropHandle: () => {
      drops++;
      return Promise.resolve();
    },
    presenceBegan: () => began++,
  });
  return { entry, tracker, began: () => began, drops: () => drops };
}

describe('PC/SC card presence from status words', () => {
  it('PRESENT begins a presence; INUSE toggles keep it; EMPTY ends it and drops the handle', () => {
    const { entry, tracker, began, drops } = tracked();
    tracker.onStatus(entry, word(ReaderState.PRESENT, 1));
    const first = entry.presence;
    expect(first).toBeDefined();
    tracker.onStatus(entry, word(ReaderState.PRESENT | ReaderState.INUSE, 1));
    expect(entry.presence).toBe(first);
    tracker.onStatus(entry, word(ReaderState.EMPTY, 2));
    expect(first?.removed).toBe(true);
    expect(entry.presence).toBeUndefined();
    expect([began(), drops()]).toEqual([1, 1]);
  });

  it('a jump of two in the insertion counter is a removal and insertion between two reports: a new presence', () => {
    const { entry, tracker, began } = tracked();
    tracker.onStatus(entry, word(ReaderState.PRESENT, 1));
    const first = entry.presence;
    tracker.onStatus(entry, word(ReaderState.PRESENT, 3));
    expect(first?.removed).toBe(true);
    expect(entry.presence).not.toBe(first);
    expect(began()).toBe(2);
  });

  it('a MUTE card is no presence', () => {
    const { entry, tracker } = tracked();
    tracker.onStatus(entry, word(ReaderState.PRESENT | ReaderState.MUTE, 1));
    expect(entry.presence).toBeUndefined();
  });

  it('an orphan from before a service restart is taken over by PRESENT (counter re-based), ended by EMPTY', () => {
    const { entry, tracker } = tracked();
    const orphan = new Presence(7, entry, 40);
    orphan.handedOut = true;
    entry.orphan = orphan;
    tracker.onStatus(entry, word(ReaderState.PRESENT, 0));
    expect(entry.presence).toBe(orphan);
    expect(orphan.counter).toBe(0);
    expect(orphan.handedOut).toBe(true);

    const other = tracked();
    const lifted = new Presence(8, other.entry, 3);
    other.entry.orphan = lifted;
    other.tracker.onStatus(other.entry, word(ReaderState.EMPTY, 0));
    expect(lifted.removed).toBe(true);
    expect(other.entry.presence).toBeUndefined();
  });
});

describe('PC/SC presences handed out once', () => {
  it('a waiting take gets the next presence; a second take waits for another', async () => {
    const { entry } = tracked();
    let current: Presence | undefined = undefined; // no presence until the card is laid down
    const handout = new PresenceHandout(() => current);
    const first = handout.take(AbortSignal.timeout(1_000));
    current = new Presence(1, entry, 0);
    handout.offer();
    expect(await first).toBe(current);
    const controller = new AbortController();
    const second = handout.take(controller.signal);
    handout.offer(); // the same presence again: not handed out twice
    controller.abort();
    await expect(second).rejects.toThrow('NFC nextCard: aborted');
  });

  it('rejectAll fails every waiting take', async () => {
    const handout = new PresenceHandout(() => undefined);
    const waiting = [handout.take(AbortSignal.timeout(1_000)), handout.take(AbortSignal.timeout(1_000))];
    handout.rejectAll('the PC/SC reader is closed');
    for (const take of waiting) await expect(take).rejects.toThrow('the PC/SC reader is closed');
  });
});
