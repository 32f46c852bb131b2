/**
 * The readers the current PC/SC context lists, and the one in use. Readers are announced and withdrawn by
 * the binding while running; the one used is chosen by `reader-selection.ts` (configured name or pattern;
 * otherwise contactless first, SAM slots never). Names come from drivers: logged and shown escaped and cut
 * (`readerLabel`); a name no real reader has (longer than `MAX_READER_NAME_CHARS`) is not used at all.
 *
 * When the service goes away, the presence on each reader is kept as an orphan for the next context: a phone
 * lying on the reader while the service restarts is not engaged again. It counts as lifted if the new
 * context reports the reader empty (`card-presence.ts`), or not at all within `ORPHAN_CLAIM_MS`.
 */
import type { Availability } from '../ports.js';
import { closeBindingReader } from './binding-close.js';
import { codeVariant } from './failure-variant.js';
import type { BindingReader } from './pcsc-binding.js';
import type { PcscLog } from './reader-options.js';
import { MAX_READER_NAME_CHARS, chooseReader, type ReaderSelector } from './reader-selection.js';
import { ReaderEntry, type Presence } from './reader-state.js';
import { CONTEXT_LOST_CODES, parseScardCode, Scard, type ScardPlatform } from './scard-errors.js';

/** How long a phone's presence waits for its reader to come back after the service restarted. */
const ORPHAN_CLAIM_MS = 5_000;

export interface ReaderRegistryOptions {
  readonly selector: ReaderSelector;
  readonly log: PcscLog;
  readonly platform: ScardPlatform;
  /** Drops a reader's card handle (`CardHandles.drop`): when the reader goes. */
  readonly dropHandle: (entry: ReaderEntry) => Promise<void>;
  /** A status word of a listed reader (`PresenceTracker.onStatus`). */
  readonly onStatus: (entry: ReaderEntry, state: number) => void;
  /** A reader came or went: the one in use may be another (or none) now. */
  readonly selectionChanged: () => void;
}

export class ReaderRegistry {
  private readonly readers = new Map<string, ReaderEntry>();
  private activeName: string | undefined;
  /** Presences of readers whose context was lost, by reader name (see `ReaderEntry.orphan`). */
  private readonly orphans = new Map<string, Presence>();
  private orphanTimer: NodeJS.Timeout | undefined;

  constructor(private readonly options: ReaderRegistryOptions) {}

  /** The reader in use now, if any. */
  active(): ReaderEntry | undefined {
    return this.activeName === undefined ? undefined : this.readers.get(this.activeName);
  }

  /** Every listed reader's label (`readerLabel`). */
  labels(): string[] {
    return [...this.readers.values()].map((entry) => entry.label);
  }

  /** Usable with the reader in use, or waiting for one. */
  availability(): Availability {
    const label = this.active()?.label;
    return label === undefined
      ? { usable: false, reason: 'no_reader', detail: `waiting for ${this.options.selector.description}` }
      : { usable: true, detail: `reader ${label}` };
  }

  /**
   * Takes a reader the binding announced; `wanted` is false when its context is no longer the current one
   * (or the adapter closed), and then the reader is only closed. Returns whether the reader was listed.
   */
  add(reader: BindingReader, wanted: boolean): boolean {
    const { log } = this.options;
    // Without an error listener a late binding error would crash the process (node's EventEmitter throws an unhandled `error` event).
    const entry = new ReaderEntry(reader);
    reader.on('error', (error) => this.onReaderError(entry, error));
    if (!wanted) {
      void closeBindingReader(entry, log);
      return false;
    }
    if (reader.name.length > MAX_READER_NAME_CHARS) {
      // No PC/SC reader is named like this: a broken or hostile driver. Never chosen, never matched.
      log.warn(
        { event: 'pcsc_reader_ignored', reader: entry.label, nameLength: reader.name.length },
        'card reader with an implausible name ignored',
      );
      void closeBindingReader(entry, log);
      return false;
    }
    entry.orphan = this.orphans.get(reader.name);
    this.orphans.delete(reader.name);
    this.readers.set(reader.name, entry);
    reader.on('status', (status) => {
      if (this.readers.get(entry.name) === entry) this.options.onStatus(entry, status.state);
    });
    reader.on('end', () => this.onReaderEnd(entry));
    log.info({ event: 'pcsc_reader_added', reader: entry.label }, 'card reader added');
    this.reselect();
    return true;
  }

  /**
   * Forgets every reader (their context is gone): exchanges in flight fail with the reader's own failure or
   * `reason`; with `keepPresence` each presence waits for the next context as an orphan.
   */
  async retireAll(reason: string, keepPresence: boolean): Promise<void> {
    const entries = [...this.readers.values()];
    this.readers.clear();
    this.activeName = undefined;
    await Promise.all(entries.map((entry) => this.retire(entry, entry.failure ?? reason, keepPresence)));
  }

  /** A new context is there: orphaned presences it does not claim in time count as lifted. */
  startOrphanClock(): void {
    clearTimeout(this.orphanTimer);
    if (this.orphans.size > 0) {
      this.orphanTimer = setTimeout(() => this.sweepOrphans(), ORPHAN_CLAIM_MS);
      this.orphanTimer.unref();
    }
  }

  stopOrphanClock(): void {
    clearTimeout(this.orphanTimer);
  }

  /** Ends every orphaned presence. */
  sweepOrphans(): void {
    for (const orphan of this.orphans.values()) orphan.remove();
    this.orphans.clear();
    for (const entry of this.readers.values()) {
      entry.orphan?.remove();
      entry.orphan = undefined;
    }
  }

  private onReaderError(entry: ReaderEntry, error: unknown): void {
    const code = parseScardCode(error);
    if (code === Scard.CANCELLED) return;
    const variant = codeVariant(code, this.options.platform);
    // A lost service is reported on the context too and handled there; remembered for the exchange it ends.
    if (code !== undefined && CONTEXT_LOST_CODES.has(code)) {
      entry.failure = variant;
      return;
    }
    this.options.log.warn({ event: 'pcsc_reader_error', reader: entry.label, variant }, 'card reader error');
  }

  private onReaderEnd(entry: ReaderEntry): void {
    if (this.readers.get(entry.name) !== entry) return;
    this.readers.delete(entry.name);
    this.options.log.info({ event: 'pcsc_reader_removed', reader: entry.label }, 'card reader removed');
    // Unplugged (SCARD_E_READER_UNAVAILABLE's variant), unless the service went away under it.
    void this.retire(entry, entry.failure ?? 'ReaderUnavailable', entry.failure !== undefined);
    this.reselect();
  }

  /**
   * Forgets a reader: an exchange in flight fails with `variant`; its presence ends, or with `keepPresence`
   * (the service went away, the phone may well still lie there) waits for the next context's first report.
   */
  private async retire(entry: ReaderEntry, variant: string, keepPresence: boolean): Promise<void> {
    const presence = entry.presence;
    entry.presence = undefined;
    if (presence && keepPresence) this.orphans.set(entry.name, presence);
    else presence?.remove();
    entry.connection?.lose(variant, `the card reader went away (${variant})`);
    await this.options.dropHandle(entry);
    await closeBindingReader(entry, this.options.log);
  }

  private reselect(): void {
    const name = chooseReader(this.readers.keys(), this.options.selector);
    if (name !== this.activeName) {
      this.activeName = name;
      const label = name === undefined ? undefined : this.readers.get(name)?.label;
      if (label !== undefined) this.options.log.info({ event: 'pcsc_reader_selected', reader: label }, 'using card reader');
    }
    this.options.selectionChanged();
  }
}
