/**
 * The kiosk's `NfcReader` port on PC/SC (pcscd on Linux, the Smart Card service on Windows, CryptoTokenKit
 * on macOS) through a binding behind the port of `pcsc-binding.ts` — by default the N-API `smartcard` addon
 * (`smartcard-binding.ts`). PC/SC behaviour it is built on: docs/nfc-readers.md.
 *
 * A facade over its parts, one job each:
 * - `service-connection.ts`: the PC/SC context, re-established with backoff while the service is absent or
 *   after it was lost;
 * - `reader-registry.ts`: the readers the context lists, the one in use (`reader-selection.ts`), and the
 *   presences kept across a service restart;
 * - `card-presence.ts`: what a reader's status words mean for the card on it;
 * - `presence-handout.ts`: each presence handed to one `nextCard`, once;
 * - `card-handles.ts`: connect, drop and release a reader's card handle;
 * - `card-exchange.ts`: one APDU exchange, bounded, its failures mapped to the canonical variant;
 * - `pcsc-card.ts`: the `NfcCard` handed to the relay.
 *
 * No JS-side wait on the binding is unbounded, and no timer outlives its wait; the retry timers are
 * unref'd so an idle adapter never keeps a process alive.
 */
import type { Availability, NfcCard, NfcReader } from '../ports.js';
import { abortable, isAborted } from '../shared/abort.js';
import { AvailabilityNotifier } from '../shared/availability.js';
import { transmit, type ExchangeContext } from './card-exchange.js';
import { CardHandles } from './card-handles.js';
import { PresenceTracker } from './card-presence.js';
import { failureVariant } from './failure-variant.js';
import { PcscCard } from './pcsc-card.js';
import { PresenceHandout } from './presence-handout.js';
import { readerSettings, silentLog, type PcscLog, type PcscNfcReaderOptions } from './reader-options.js';
import { ReaderRegistry } from './reader-registry.js';
import { readerSelector } from './reader-selection.js';
import type { Connection, Presence, ReaderEntry } from './reader-state.js';
import { currentScardPlatform, type ScardPlatform } from './scard-errors.js';
import { ServiceConnection } from './service-connection.js';

export { RECEIVE_BUFFER_BYTES } from './card-exchange.js';
export type { PcscLog, PcscNfcReaderOptions, ProtocolPreference, ShareMode } from './reader-options.js';

export class PcscNfcReader implements NfcReader {
  private readonly log: PcscLog;
  private readonly platform: ScardPlatform;
  private readonly notifier = new AvailabilityNotifier({ usable: false, reason: 'starting', detail: 'connecting to the PC/SC service' });
  private readonly handles: CardHandles;
  private readonly exchange: ExchangeContext;
  private readonly readers: ReaderRegistry;
  private readonly handout: PresenceHandout;
  private readonly service: ServiceConnection;
  private closed = false;

  constructor(options: PcscNfcReaderOptions = {}) {
    const selector = readerSelector(options.reader);
    const settings = readerSettings(options);
    this.log = options.log ?? silentLog;
    this.platform = options.platform ?? currentScardPlatform();
    const { log, platform } = this;
    this.handles = new CardHandles({ settings, log, platform, isClosed: () => this.closed });
    this.exchange = { platform, release: (connection) => this.handles.release(connection) };
    const dropHandle = (entry: ReaderEntry): Promise<void> => this.handles.drop(entry);
    const presences = new PresenceTracker({ log, dropHandle, presenceBegan: () => this.handout.offer() });
    this.readers = new ReaderRegistry({
      selector,
      log,
      platform,
      dropHandle,
      onStatus: (entry, state) => presences.onStatus(entry, state),
      selectionChanged: () => this.readerChanged(),
    });
    this.handout = new PresenceHandout(() => this.readers.active()?.presence);
    this.service = new ServiceConnection({
      binding: options.binding,
      retry: settings,
      log,
      platform,
      readers: this.readers,
      report: (a) => this.notifier.set(a),
    });
    this.service.start();
  }

  availability(): Availability {
    return this.notifier.current;
  }

  onAvailabilityChange(listener: (availability: Availability) => void): () => void {
    return this.notifier.onChange(listener);
  }

  /** The reader in use now, if any (diagnostics): its name escaped and cut (`readerLabel`). */
  get readerName(): string | undefined {
    return this.readers.active()?.label;
  }

  /**
   * Whether a card (phone) lies on the reader in use now, as far as the service has noticed; undefined
   * before the reader's first status report (or with no reader).
   */
  get cardPresent(): boolean | undefined {
    const entry = this.readers.active();
    if (entry === undefined || entry.state === 0) return undefined;
    return entry.presence !== undefined && !entry.presence.removed;
  }

  /** Names of every reader the service lists now (diagnostics), escaped and cut (`readerLabel`). */
  get readerNames(): string[] {
    return this.readers.labels();
  }

  async nextCard(signal: AbortSignal): Promise<NfcCard> {
    for (;;) {
      const presence = await this.waitForPresence(signal);
      try {
        return await this.connectUnlessAborted(presence, signal);
      } catch (e) {
        if (isAborted(signal) || this.closed) throw e;
        // The presence stays handed out: a card that cannot be connected is not retried in a loop; the
        // customer lifts it and taps again, which is a new presence. A card lifted meanwhile is routine.
        const reason = failureVariant(e, this.platform);
        const fields = { event: 'pcsc_connect_failed', reader: presence.reader.label, reason };
        if (reason === 'RemovedCard' || reason === 'NoSmartcard') this.log.debug(fields, 'the card left before it was connected');
        else this.log.warn(fields, 'could not connect to the card');
      }
    }
  }

  ignoreCurrentCard(): void {
    const presence = this.readers.active()?.presence;
    if (presence && !presence.removed) presence.handedOut = true;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.readers.stopOrphanClock();
    this.handout.rejectAll('the PC/SC reader is closed');
    await this.service.close();
    this.readers.sweepOrphans();
    this.notifier.set({ usable: false, reason: 'closed' });
  }

  private waitForPresence(signal: AbortSignal): Promise<Presence> {
    if (this.closed) return Promise.reject(new Error('the PC/SC reader is closed'));
    return this.handout.take(signal);
  }

  /** `connect`, abandoned when `signal` aborts; a handle that arrives after that is released. */
  private connectUnlessAborted(presence: Presence, signal: AbortSignal): Promise<PcscCard> {
    const connecting = this.handles.connect(presence).then((connection) => this.card(connection));
    return abortable(connecting, signal, 'NFC nextCard').catch((e: unknown) => {
      if (isAborted(signal))
        connecting.then(
          (card) => void card.release(),
          () => undefined,
        );
      throw e;
    });
  }

  private card(connection: Connection): PcscCard {
    return new PcscCard(connection, {
      transmit: (command, options) => transmit(connection, command, options, this.exchange),
      release: () => this.handles.release(connection),
    });
  }

  /** The reader in use may have changed: availability follows, and a presence on it may be handed out. */
  private readerChanged(): void {
    if (this.closed) return;
    if (!this.service.connected) return; // availability is set by whoever dropped the context
    this.notifier.set(this.readers.availability());
    this.handout.offer();
  }
}
