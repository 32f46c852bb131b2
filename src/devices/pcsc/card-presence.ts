/**
 * What a reader's status words mean for the card (phone) on it. A card is present from a status change to
 * PRESENT until EMPTY — or until the insertion counter in the status word's upper half shows a removal and
 * insertion that came in between. A phone that lay on the reader while the service restarted keeps its
 * presence (`ReaderEntry.orphan`): taken over by the new context's first PRESENT report, ended by its first
 * empty one.
 */
import { eventCounter, ReaderState } from './pcsc-binding.js';
import type { PcscLog } from './reader-options.js';
import { Presence, type ReaderEntry } from './reader-state.js';

export interface PresenceTrackerOptions {
  readonly log: PcscLog;
  /** Drops the reader's card handle (`CardHandles.drop`): on EMPTY. */
  readonly dropHandle: (entry: ReaderEntry) => Promise<void>;
  /** A presence began (or was taken over) that may be handed to a waiting `nextCard`. */
  readonly presenceBegan: () => void;
}

export class PresenceTracker {
  private nextPresenceId = 1;

  constructor(private readonly options: PresenceTrackerOptions) {}

  /** Takes a status word of `entry`, a reader of the current context. */
  onStatus(entry: ReaderEntry, state: number): void {
    const { log } = this.options;
    entry.state = state;
    const present = (state & ReaderState.PRESENT) !== 0 && (state & ReaderState.MUTE) === 0;
    const orphan = entry.orphan;
    entry.orphan = undefined;
    if (orphan && !orphan.removed) {
      if (present) {
        // The phone that lay there before the service restarted: the same presence (handed out or not).
        orphan.counter = eventCounter(state); // a restarted pcscd counts from zero again
        entry.presence = orphan;
        this.options.presenceBegan();
        return;
      }
      orphan.remove();
    }
    const current = entry.presence;
    if (!present) {
      if (current) {
        current.remove();
        entry.presence = undefined;
        log.debug({ event: 'pcsc_card_removed', reader: entry.label, presence: current.id }, 'card left the reader');
      }
      entry.connection?.lose('RemovedCard', 'the card left the reader');
      if ((state & ReaderState.EMPTY) !== 0) void this.options.dropHandle(entry);
      return;
    }
    // INUSE/EXCLUSIVE toggles keep the presence; a jump of two or more in the insertion counter means the
    // card was removed and inserted again between two reports.
    if (current && ((eventCounter(state) - current.counter) & 0xffff) < 2) return;
    if (current) {
      current.remove();
      entry.connection?.lose('RemovedCard', 'the card was replaced');
    }
    const presence = new Presence(this.nextPresenceId++, entry, eventCounter(state));
    entry.presence = presence;
    log.debug({ event: 'pcsc_card_present', reader: entry.label, presence: presence.id }, 'card on the reader');
    this.options.presenceBegan();
  }
}
