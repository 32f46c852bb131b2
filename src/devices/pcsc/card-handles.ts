/**
 * The card handle of each reader: connect, drop, release, one at a time per reader (`ReaderEntry.serialise`).
 *
 * `connect` uses the configured share mode (default shared) and protocols (default T=0|T=1); the handle is
 * dropped on EMPTY and after any failed exchange (a stale handle keeps `connected` true and breaks the next
 * connect: the `smartcard` binding then answers a connect with neither error nor protocol); `nfc_await_card`
 * therefore always gets a fresh handle.
 *
 * A native transmit a mute card never answers holds the binding's reader mutex: no connect or disconnect is
 * issued on that reader (either would block a worker thread or the JS thread) until it returns, which it
 * does when the card leaves. Every wait here is bounded (`connectTimeoutMs`, `disconnectTimeoutMs`).
 */
import { NfcTransmitError } from '../ports.js';
import { failureVariant } from './failure-variant.js';
import { nativeCall } from './native-call.js';
import { withDeadline } from './pcsc-card.js';
import type { PcscLog, ReaderSettings } from './reader-options.js';
import { Connection, type Presence, type ReaderEntry } from './reader-state.js';
import type { ScardPlatform } from './scard-errors.js';

export interface CardHandlesOptions {
  readonly settings: Pick<ReaderSettings, 'shareMode' | 'protocol' | 'connectTimeoutMs' | 'disconnectTimeoutMs'>;
  readonly log: PcscLog;
  readonly platform: ScardPlatform;
  /** Whether the adapter was closed (a handle made meanwhile is dropped). */
  readonly isClosed: () => boolean;
}

export class CardHandles {
  private nextConnectionId = 1;

  constructor(private readonly options: CardHandlesOptions) {}

  /** A handle for `presence`, unless it left (or the adapter closed) before one was made. */
  connect(presence: Presence): Promise<Connection> {
    const entry = presence.reader;
    const { settings, log } = this.options;
    return entry.serialise(async () => {
      if (presence.removed) throw new NfcTransmitError('RemovedCard', 'the card left before it was connected');
      // A transmit still stuck on this reader (a mute card) holds the binding's reader mutex; SCardConnect
      // would queue behind it.
      await withDeadline(entry.idle(), settings.connectTimeoutMs, undefined, 'an earlier exchange on the reader has not returned');
      await this.drop(entry, true);
      const reader = entry.binding;
      const shareMode = settings.shareMode === 'exclusive' ? reader.SCARD_SHARE_EXCLUSIVE : reader.SCARD_SHARE_SHARED;
      const protocols =
        settings.protocol === 'T0'
          ? reader.SCARD_PROTOCOL_T0
          : settings.protocol === 'T1'
            ? reader.SCARD_PROTOCOL_T1
            : reader.SCARD_PROTOCOL_T0 | reader.SCARD_PROTOCOL_T1;
      const protocol = await nativeCall<number>((done) => reader.connect({ share_mode: shareMode, protocol: protocols }, done), {
        timeoutMs: settings.connectTimeoutMs,
        what: 'SCardConnect',
        // A handle that arrives after we gave up is dropped, or it would block the next connect; but not
        // once a newer connect holds the reader (the binding keeps one handle per reader: dropping would
        // end the newer card's).
        onLateSuccess: () =>
          void entry.serialise(async () => {
            if (entry.connection === undefined) await this.drop(entry, true);
          }),
      });
      if (typeof protocol !== 'number') {
        // The binding answers (undefined, undefined) while it still holds a stale handle of this reader
        await this.drop(entry, true);
        throw new NfcTransmitError('InvalidHandle', 'the binding returned no protocol');
      }
      if (presence.hasLeft() || this.options.isClosed()) {
        await this.drop(entry, true);
        throw new NfcTransmitError('RemovedCard', 'the card left while being connected');
      }
      const connection = new Connection(this.nextConnectionId++, entry, presence, protocol);
      entry.connection = connection;
      log.debug(
        { event: 'pcsc_card_connected', reader: entry.label, presence: presence.id, handle: connection.id, protocol },
        'card connected',
      );
      return connection;
    });
  }

  /** Drops the reader's handle (LEAVE_CARD), bounded; never rejects. `serialised` = already inside `serialise`. */
  drop(entry: ReaderEntry, serialised = false): Promise<void> {
    const drop = async (): Promise<void> => {
      entry.connection?.lose('InvalidHandle', 'the card handle was released');
      entry.connection = undefined;
      const reader = entry.binding;
      if (!reader.connected) return;
      if (entry.transmits > 0) {
        // SCardDisconnect would wait for the stuck transmit on the binding's reader mutex (holding a second
        // worker thread): drop the handle once the transmit has returned, unless a newer one exists by then.
        void entry.idle().then(() =>
          entry.serialise(async () => {
            if (entry.connection === undefined) await this.drop(entry, true);
          }),
        );
        return;
      }
      try {
        await nativeCall<undefined>((done) => reader.disconnect(reader.SCARD_LEAVE_CARD, done), {
          timeoutMs: this.options.settings.disconnectTimeoutMs,
          what: 'SCardDisconnect',
        });
      } catch (e) {
        this.options.log.debug(
          { event: 'pcsc_disconnect_failed', reader: entry.label, variant: failureVariant(e, this.options.platform) },
          'dropping the card handle failed',
        );
      }
    };
    return serialised ? drop() : entry.serialise(drop);
  }

  /** Releases one card's handle if it is still the reader's current one. */
  release(connection: Connection): Promise<void> {
    const entry = connection.entry;
    return entry.serialise(async () => {
      connection.lose('InvalidHandle', 'the card handle was released');
      if (entry.connection === connection) await this.drop(entry, true);
    });
  }
}
