/**
 * What the PC/SC adapter knows about each reader: the card presence on it, its one card handle (the
 * binding keeps one per reader), and the native transmits running on it.
 */
import { NfcTransmitError } from '../ports.js';
import type { BindingReader } from './pcsc-binding.js';
import { readerLabel } from './reader-selection.js';

/** One physical presence of a card on a reader. */
export class Presence {
  removed = false;
  handedOut = false;
  private readonly listeners = new Set<() => void>();

  constructor(
    readonly id: number,
    readonly reader: ReaderEntry,
    /** Insertion counter when the presence began (re-based when it survives a service restart). */
    public counter: number,
  ) {}

  /** Reads the flag afresh (TypeScript keeps an earlier narrowing across awaits). */
  hasLeft(): boolean {
    return this.removed;
  }

  remove(): void {
    if (this.removed) return;
    this.removed = true;
    for (const listener of [...this.listeners]) listener();
    this.listeners.clear();
  }

  onRemoval(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

/** A reader the context announced. Connect and disconnect on it run one at a time. */
export class ReaderEntry {
  state = 0;
  /** The variant of the failure that ended the reader's monitor (a lost service), if any. */
  failure: string | undefined;
  /**
   * A presence carried over from the previous context (the service restarted while a phone lay on the
   * reader): taken over by the first PRESENT report, removed by the first EMPTY one.
   */
  orphan: Presence | undefined;
  /** Native transmits still running (the binding holds the reader's mutex for each). */
  transmits = 0;
  private idleWaiters: (() => void)[] = [];
  presence: Presence | undefined;
  connection: Connection | undefined;
  private ops: Promise<unknown> = Promise.resolve();

  /** The name as it may be logged or shown (escaped, cut: reader-selection.ts `readerLabel`). */
  readonly label: string;

  constructor(readonly binding: BindingReader) {
    this.label = readerLabel(binding.name);
  }

  get name(): string {
    return this.binding.name;
  }

  /** Resolves once no native transmit runs on this reader. */
  idle(): Promise<void> {
    return this.transmits === 0 ? Promise.resolve() : new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  transmitStarted(): void {
    this.transmits++;
  }

  transmitEnded(): void {
    this.transmits--;
    if (this.transmits > 0) return;
    for (const resolve of this.idleWaiters.splice(0)) resolve();
  }

  serialise<T>(op: () => Promise<T>): Promise<T> {
    const run = this.ops.then(op, op);
    this.ops = run.catch(() => undefined);
    return run;
  }
}

/** One card handle; `lost` once it must not be used again. */
export class Connection {
  lost: string | undefined;
  /** Rejects the exchange in flight (card removed, handle dropped). */
  failInFlight: ((error: NfcTransmitError) => void) | undefined;
  /** Exchanges on this handle run one after another. */
  queue: Promise<void> = Promise.resolve();
  /** Exchanges queued or running on this handle (`queue` is settled when 0). */
  exchanges = 0;

  constructor(
    readonly id: number,
    readonly entry: ReaderEntry,
    readonly presence: Presence,
    readonly protocol: number,
  ) {}

  lose(reason: string, message: string): void {
    if (this.lost !== undefined) return;
    this.lost = reason;
    this.failInFlight?.(new NfcTransmitError(reason, message));
  }
}
