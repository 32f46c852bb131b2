/**
 * The virtual phone's BLE transport on the virtual radio, in both ISO 18013-5 modes (ISO/IEC 18013-5
 * 18013-5 §8.3.3.1.1; the sequences as Multipaz's `BleTransportPeripheralMdoc.kt` and `BleTransportCentralMdoc.kt`
 * run them):
 *
 * mdoc peripheral server mode (the phone is the GATT server):
 *   service <uuid> with State 00000001 (notify + write without response), Client2Server 00000002 (write
 *   without response), Server2Client 00000003 (notify) (18013-5 §8.3.3.1.1.4, ble-uuids.ts); advertise the UUID;
 *   accept one reader; the reader subscribes to State and S2C and writes State 0x01 (Table 13) → stop
 *   advertising; its C2S writes are reassembled into the SessionEstablishment (18013-5 §8.3.3.1.1.6); our messages
 *   go out as S2C notifications, chunked to the link's characteristic size min(MTU − 3, 512); State 0x02
 *   written by the reader ends the session.
 *
 * mdoc central client mode (the phone is the GATT client):
 *   scan for <uuid>, connect, discover, READ Ident 00000008 (a long read) and compare it with
 *   HKDF(EDeviceKeyBytes, "BLEIdent") (18013-5 §8.3.3.1.1) — a mismatch aborts, as Multipaz's
 *   `checkReaderIdentMatches()` does; subscribe to State 00000005 and S2C 00000007, write State 0x01
 *   (write without response); S2C notifications carry the SessionEstablishment; our messages are written
 *   to C2S 00000006 (write without response); a State 0x02 notification ends the session.
 *
 * When both modes run (Android QR: one shared UUID, as Multipaz's `MdocConnectionMethodBle.kt` requires),
 * whichever connects first wins: a reader connecting to our GATT server stops our scan; our connecting to a
 * reader's server refuses later centrals. The radio never reports a device's own advertisement to its own scanner.
 *
 * Behaviour "BLE drop after k chunks": after k chunks of our message are on the air, the phone ends the
 * link (an abrupt disconnect from its side; the chunks sent before it still arrive, in order).
 */
import { AttError, AttErrorCode, RadioError, sameUuid, type NotificationEvent, type ServerConnection } from '../radio/virtual-radio.js';
import { BleFramingError, BleReassembler, MAX_CHARACTERISTIC_SIZE, characteristicSizeForMtu, chunkMessage } from '../iso/ble-framing.js';
import { BLE_STATE_END, BLE_STATE_START, CENTRAL_CLIENT_MODE, PERIPHERAL_SERVER_MODE } from '../iso/ble-uuids.js';
import { bytesEqual } from '../iso/cbor.js';
import type { MdocBleMode } from '../iso/handover.js';
import { bleIdent } from '../iso/session-crypto.js';
import type { PhoneLink, PhoneRadio } from './phone-radio.js';
import { errorText } from '../../../common/error-text.js';

export type { MdocBleMode };

/** Why the transport ended (before the presentation closed it itself). */
export type BleCloseReason =
  /** The reader (or the radio) ended the link after the transfer started. */
  | 'disconnected'
  /** The phone dropped the link on purpose (behaviour `bleDropAfterChunks`). */
  | 'dropped'
  /** Central client mode: the reader's Ident did not match (ISO/IEC 18013-5 §8.3.3.1.1). */
  | 'ident_mismatch'
  /** GATT or framing failure (missing characteristic, bad chunk flag, refused write…). */
  | 'error';

export interface BleTransportEvents {
  /** The winning mode's link is up (for peripheral server mode: a reader connected). */
  onConnected(mode: MdocBleMode): void;
  /** A whole message from the reader (SessionEstablishment or SessionData). */
  onMessage(message: Uint8Array): void;
  /** The reader wrote or notified State 0x02 (end, ISO/IEC 18013-5 Table 13). */
  onStateEnd(): void;
  /** The transport is gone; called at most once and never after `close()`. */
  onClosed(reason: BleCloseReason, detail: string): void;
}

export interface BleHolderOptions {
  /** The in-memory radio's device, or a real stack's (src/qa/hci). */
  readonly device: PhoneRadio;
  /** Run mdoc peripheral server mode on this service UUID. */
  readonly peripheralServerUuid?: string;
  /** Run mdoc central client mode, looking for this service UUID. */
  readonly centralClientUuid?: string;
  /** EDeviceKeyBytes of the engagement: the Ident IKM (ISO/IEC 18013-5 §8.3.3.1.1). */
  readonly eDeviceKeyBytes: Uint8Array;
  readonly localName?: string;
  /** Behaviour: expect a wrong Ident (the phone then aborts in central client mode). */
  readonly wrongIdent?: boolean;
  /** Behaviour: in central client mode, stay connected after the Ident read and never subscribe (nor write State 0x01). */
  readonly neverSubscribe?: boolean;
  /** Behaviour: drop the link after this many chunks of our message. */
  readonly dropAfterChunks?: number;
  readonly events: BleTransportEvents;
}

export type SendResult = 'sent' | 'dropped' | 'closed';

const describe = (error: unknown): string => errorText(error);

/** The Ident this phone expects; the wrong-Ident behaviour derives it from altered EDeviceKeyBytes. */
export function expectedIdent(eDeviceKeyBytes: Uint8Array, wrong: boolean): Uint8Array {
  if (!wrong) return bleIdent(eDeviceKeyBytes);
  const altered = Uint8Array.from(eDeviceKeyBytes);
  altered[altered.length - 1] = (altered[altered.length - 1] ?? 0) ^ 0xff;
  return bleIdent(altered);
}

export class BleHolder {
  readonly #options: BleHolderOptions;
  readonly #abort = new AbortController();
  readonly #reassembler = new BleReassembler({ maxCharacteristicSize: MAX_CHARACTERISTIC_SIZE });
  #winner: MdocBleMode | undefined;
  #closed = false;
  #ended = false;
  // peripheral server mode
  #serverRunning = false;
  #connection: ServerConnection | undefined;
  #started = false;
  // central client mode
  #link: PhoneLink | undefined;
  readonly #unsubscribe: (() => void)[] = [];

  constructor(options: BleHolderOptions) {
    if (options.peripheralServerUuid === undefined && options.centralClientUuid === undefined) {
      throw new TypeError('BleHolder needs at least one mode');
    }
    if (options.dropAfterChunks !== undefined && (!Number.isInteger(options.dropAfterChunks) || options.dropAfterChunks < 0)) {
      throw new RangeError(`dropAfterChunks must be a non-negative integer, got ${options.dropAfterChunks}`);
    }
    this.#options = options;
  }

  /** The mode whose link won, once one did. */
  get mode(): MdocBleMode | undefined {
    return this.#winner;
  }

  /** Starts advertising and/or scanning; resolves once advertising is on (scanning goes on in the background). */
  async start(): Promise<void> {
    if (this.#closed) return;
    const { peripheralServerUuid, centralClientUuid } = this.#options;
    if (peripheralServerUuid !== undefined) await this.#startServer(peripheralServerUuid);
    if (centralClientUuid !== undefined && !this.#isClosed()) {
      void this.#runClient(centralClientUuid).catch((error: unknown) => {
        const lost = error instanceof RadioError && error.code === 'disconnected';
        this.#end(lost ? 'disconnected' : 'error', `central client mode: ${describe(error)}`);
      });
    }
  }

  /** Sends one message to the reader in chunks (ISO/IEC 18013-5 §8.3.3.1.1.6) on the winning link. */
  async send(message: Uint8Array): Promise<SendResult> {
    if (this.#closed || this.#ended) return 'closed';
    const mode = this.#winner;
    if (mode === 'peripheralServer') {
      const connection = this.#connection;
      if (connection === undefined) return 'closed';
      const uuid = this.#options.peripheralServerUuid ?? '';
      return this.#sendChunks(
        message,
        connection.mtu,
        (chunk) => this.#options.device.peripheral.notify(connection.handle, uuid, PERIPHERAL_SERVER_MODE.server2Client.uuid, chunk),
        () => this.#options.device.peripheral.disconnect(connection.handle, this.#dropReason()),
      );
    }
    if (mode === 'centralClient') {
      const link = this.#link;
      if (link === undefined) return 'closed';
      const uuid = this.#options.centralClientUuid ?? '';
      return this.#sendChunks(
        message,
        link.mtu,
        (chunk) => link.write(uuid, CENTRAL_CLIENT_MODE.client2Server.uuid, chunk, { withoutResponse: true }),
        () => link.disconnect(this.#dropReason()),
      );
    }
    return 'closed';
  }

  /** Stops advertising and scanning and ends any link. Idempotent; no event follows. */
  async close(reason = 'virtual phone closed the transport'): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#abort.abort();
    for (const stop of this.#unsubscribe.splice(0)) stop();
    this.#reassembler.reset();
    const { device } = this.#options;
    const link = this.#link;
    this.#link = undefined;
    if (link !== undefined) await link.disconnect(reason);
    if (this.#serverRunning) {
      this.#serverRunning = false;
      await device.peripheral.stopAdvertising();
      for (const connection of device.peripheral.connections) await device.peripheral.disconnect(connection.handle, reason);
      device.peripheral.setServices([]);
    }
    this.#connection = undefined;
  }

  /** Closed or ended; a method, so a check after an await is not narrowed away by TypeScript. */
  #isClosed(): boolean {
    return this.#closed || this.#ended;
  }

  #dropReason(): string {
    return `virtual phone dropped the BLE link after ${this.#options.dropAfterChunks ?? 0} chunk(s)`;
  }

  async #sendChunks(
    message: Uint8Array,
    mtu: number,
    put: (chunk: Uint8Array) => Promise<void>,
    drop: () => Promise<void>,
  ): Promise<SendResult> {
    const chunks = chunkMessage(message, characteristicSizeForMtu(Math.max(23, mtu)));
    const limit = this.#options.dropAfterChunks;
    for (const [index, chunk] of chunks.entries()) {
      if (limit !== undefined && index >= limit) {
        // Reported first, so the link's own disconnect event is not taken for the reader leaving.
        this.#end('dropped', `dropped after ${limit} of ${chunks.length} chunk(s)`);
        await drop();
        return 'dropped';
      }
      if (this.#closed || this.#ended) return 'closed';
      try {
        await put(chunk);
      } catch (error) {
        this.#end(
          error instanceof RadioError && error.code === 'disconnected' ? 'disconnected' : 'error',
          `sending chunk ${index + 1}/${chunks.length}: ${describe(error)}`,
        );
        return 'closed';
      }
    }
    return 'sent';
  }

  /** Claims the win for a mode; false when the other mode already won (or the transport is closed). */
  #claim(mode: MdocBleMode): boolean {
    if (this.#closed || this.#ended) return false;
    if (this.#winner !== undefined) return this.#winner === mode;
    this.#winner = mode;
    if (mode === 'peripheralServer') {
      this.#abort.abort(); // stop the central client mode scan / connect
    } else if (this.#serverRunning) {
      void this.#options.device.peripheral.stopAdvertising();
    }
    this.#options.events.onConnected(mode);
    return true;
  }

  #end(reason: BleCloseReason, detail: string): void {
    if (this.#closed || this.#ended) return;
    this.#ended = true;
    this.#options.events.onClosed(reason, detail);
  }

  #deliver(chunk: Uint8Array): void {
    let message: Uint8Array | undefined;
    try {
      message = this.#reassembler.push(chunk);
    } catch (error) {
      this.#end('error', error instanceof BleFramingError ? `BLE framing: ${error.message}` : describe(error));
      return;
    }
    if (message !== undefined) this.#options.events.onMessage(message);
  }

  #onState(value: Uint8Array): void {
    if (value.length === 1 && value[0] === BLE_STATE_END) this.#options.events.onStateEnd();
  }

  // ------------------------------------------------------------------ peripheral server mode

  async #startServer(uuid: string): Promise<void> {
    const { device } = this.#options;
    const chars = PERIPHERAL_SERVER_MODE;
    device.peripheral.setServices(
      [
        {
          uuid,
          characteristics: [
            { uuid: chars.state.uuid, properties: chars.state.properties },
            { uuid: chars.client2Server.uuid, properties: chars.client2Server.properties },
            { uuid: chars.server2Client.uuid, properties: chars.server2Client.properties },
          ],
        },
      ],
      {
        accept: () => !this.#closed && !this.#ended && this.#winner !== 'centralClient' && this.#connection === undefined,
        onConnect: (connection) => {
          if (!this.#claim('peripheralServer')) {
            void device.peripheral.disconnect(connection.handle, 'another transport won');
            return;
          }
          this.#connection = connection;
        },
        onDisconnect: (connection, info) => {
          if (this.#connection?.handle !== connection.handle) return;
          this.#connection = undefined;
          this.#reassembler.reset();
          // Before State 0x01 a reader may come back (we still advertise); after it, the session is lost: there
          // is no resuming BLE data retrieval, only a new engagement.
          if (this.#started) this.#end('disconnected', `the reader's link ended: ${info.reason}`);
        },
        onWrite: (request) => {
          if (this.#connection?.handle !== request.connection.handle || this.#closed) return;
          if (sameUuid(request.characteristicUuid, chars.state.uuid)) {
            if (request.data.length === 1 && request.data[0] === BLE_STATE_START && !this.#started) {
              this.#started = true;
              void device.peripheral.stopAdvertising();
            }
            this.#onState(request.data);
            return;
          }
          if (sameUuid(request.characteristicUuid, chars.client2Server.uuid)) {
            this.#deliver(request.data);
            return;
          }
          throw new AttError(AttErrorCode.WRITE_NOT_PERMITTED);
        },
      },
    );
    this.#serverRunning = true;
    await device.peripheral.startAdvertising({
      ...(this.#options.localName === undefined ? {} : { localName: this.#options.localName }),
      serviceUuids: [uuid],
    });
  }

  // ------------------------------------------------------------------ central client mode

  async #runClient(uuid: string): Promise<void> {
    const { device } = this.#options;
    const signal = this.#abort.signal;
    let report;
    try {
      report = await device.central.scanFor(uuid, { signal });
    } catch (error) {
      if (signal.aborted) return; // the other mode won, or we closed
      throw error;
    }
    let link: PhoneLink;
    try {
      link = await device.central.connect(report.peripheral.id, { signal });
    } catch (error) {
      if (signal.aborted) return;
      throw error;
    }
    if (!this.#claim('centralClient')) {
      await link.disconnect('another transport won');
      return;
    }
    this.#link = link;
    const chars = CENTRAL_CLIENT_MODE;
    this.#unsubscribe.push(
      link.onDisconnect((info) => {
        this.#reassembler.reset();
        this.#end('disconnected', `the reader's link ended: ${info.reason}`);
      }),
      link.onNotification((event: NotificationEvent) => {
        if (this.#closed || !sameUuid(event.serviceUuid, uuid)) return;
        if (sameUuid(event.characteristicUuid, chars.server2Client.uuid)) this.#deliver(event.data);
        else if (sameUuid(event.characteristicUuid, chars.state.uuid)) this.#onState(event.data);
      }),
    );
    const services = await link.discover([uuid]);
    const service = services.find((s) => sameUuid(s.uuid, uuid));
    for (const needed of [chars.state, chars.client2Server, chars.server2Client, chars.ident]) {
      const found = service?.characteristics.find((c) => sameUuid(c.uuid, needed.uuid));
      const missing = found === undefined ? ['(absent)'] : needed.properties.filter((p) => !found.properties.includes(p));
      if (missing.length > 0) {
        await link.disconnect('the reader service lacks an ISO characteristic');
        this.#end('error', `the reader's service lacks ${needed.uuid} ${missing.join(', ')}`);
        return;
      }
    }
    // The reader proves it knows EDeviceKeyBytes (ISO/IEC 18013-5 §8.3.3.1.1.4); Multipaz aborts on a mismatch.
    const ident = await link.read(uuid, chars.ident.uuid);
    if (this.#isClosed()) return;
    if (!bytesEqual(ident, expectedIdent(this.#options.eDeviceKeyBytes, this.#options.wrongIdent ?? false))) {
      this.#end('ident_mismatch', `the reader's Ident ${Buffer.from(ident).toString('hex') || '(empty)'} is not the expected value`);
      await link.disconnect('Ident mismatch');
      return;
    }
    if (this.#options.neverSubscribe === true) return; // connected and silent: the reader's timers must end it
    await link.subscribe(uuid, chars.state.uuid);
    await link.subscribe(uuid, chars.server2Client.uuid);
    if (this.#isClosed()) return;
    await link.write(uuid, chars.state.uuid, Uint8Array.of(BLE_STATE_START), { withoutResponse: true });
  }
}
