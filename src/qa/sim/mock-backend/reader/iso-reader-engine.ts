/**
 * The ISO 18013-5 reader engine behind the mock backend's relay sessions (`../engine.ts` port; the relay
 * session calls it in spec order, see `../relay-session.ts`).
 *
 *   qrScanned ──────────────► DeviceEngagement from the QR, Handover null            ─┐
 *   nfcStart/nfcResponse ───► NfcHandoverDriver (static or negotiated), Handover [HS, HR|null] ─┤
 *                                                                                     ▼
 *        ReaderSession: EReaderKey, SessionTranscript, SessionEstablishment, Ident → modes (central first)
 *   bleConnected('central')   → write State 0x01, then SessionEstablishment chunks on Client2Server
 *   bleConnected('peripheral')→ nothing; the phone reads Ident (bleReadRequest), writes State 0x01
 *   bleWritten(State, 01)     → SessionEstablishment chunks on Server2Client (the kiosk notifies them)
 *   bleNotified(S2C) / bleWritten(C2S) → reassemble SessionData → decrypt → verify
 *                             → write State 0x02 (spec §4.4 final ble_write), outcome
 *
 * Chunks (ISO/IEC 18013-5 §8.3.3.1.1.6, as Multipaz's `BlePeripheralManagerAndroid` sends them):
 * `[flag][≤ maxCharacteristicSize − 1 bytes]`, flag 01 more / 00 last. We send
 * with `maxCharacteristicSize` (default 182: an iOS-sized ATT MTU of 185 − 3) and accept the phone's chunks
 * of any size up to 512 (it chunks with its own MTU).
 *
 * How a session without a DeviceResponse ends (decline semantics, documented in docs/qa-simulators.md):
 * - SessionData `{status: 20}` without data (session termination, ISO/IEC 18013-5 §9.1.1), or State 0x02
 *   from the phone before any response: the holder declined or the wallet gave up. This is a *completed* verification: `complete`
 *   with `issuer_authentication`/`device_authentication` `Unchecked`, empty `response` and an error of
 *   category `session`, because for the kiosk it is a final answer ("not shared"), not a relay fault.
 * - SessionData status 10 or 11 without data: the wallet could not decrypt or decode our request; also a
 *   completed verification with a `session` error (Multipaz's holder answers 10 to a request it cannot
 *   decrypt, since its commit c9c4547c).
 * - Status 20 next to data is the normal Multipaz answer (its `mdocPresentment.kt`) and is accepted silently;
 *   10/11 next to data are reported as `session` errors alongside the verification.
 * - A broken chunk flag, SessionData that is not CBOR, carries neither data nor status, or whose data do
 *   not decrypt: the phone broke the ISO protocol → `failure` (the relay sends `error`).
 */
import type { MdocContext } from '@owf/mdoc';
import { BLE_STATE_END, BLE_STATE_START } from '../../iso/ble-uuids.js';
import { BleFramingError, BleReassembler, MAX_CHARACTERISTIC_SIZE, MIN_CHARACTERISTIC_SIZE, chunkMessage } from '../../iso/ble-framing.js';
import { decodeDeviceEngagement, deviceEngagementFromQr, type DecodedDeviceEngagement } from '../../iso/device-engagement.js';
import { SESSION_STATUS, decodeSessionData } from '../../iso/session-messages.js';
import type { Handover } from '../../iso/session-transcript.js';
import type { BleActions, EngineContext, Engagement, NfcStep, ReaderEngine } from '../engine.js';
import type { BleModeWire, OutcomeWire } from '../wire.js';
import { sameUuid } from '../wire.js';
import {
  ROLE_CHARACTERISTICS,
  buildBleModes,
  offeredFromDeviceEngagement,
  offeredFromHandover,
  type KioskRole,
  type OfferedModes,
} from './ble-modes.js';
import { Findings } from './findings.js';
import { NfcHandoverDriver, type HandoverStep, type NfcHandoverOptions } from './nfc-handover.js';
import { MDL_DOC_TYPE, ReaderSession } from './reader-session.js';
import { uncheckedOutcome, verifyDeviceResponse } from './verify-response.js';
import { errorText } from '../../../../common/error-text.js';

/** Default characteristic size incl. the flag byte (issue 3: "configurable characteristic size (default 182 bytes)"). */
export const DEFAULT_MAX_CHARACTERISTIC_SIZE = 182;
/** Largest reassembled message accepted from the phone (a DeviceResponse with a portrait is tens of KB). */
export const DEFAULT_MAX_MESSAGE_SIZE = 4 * 1024 * 1024;

export interface IsoReaderEngineSettings {
  readonly trustedCertificates: readonly Uint8Array[];
  readonly maxCharacteristicSize: number;
  readonly maxMessageSize: number;
  readonly now: () => Date;
  readonly nfc: NfcHandoverOptions;
  readonly delay: (ms: number) => Promise<void>;
  readonly context: MdocContext;
}

type Phase = 'idle' | 'nfc' | 'engaged' | 'transfer' | 'done' | 'disposed';

const NOTHING: BleActions = { writes: [] };
const message = (error: unknown): string => errorText(error);

export function checkCharacteristicSize(size: number): number {
  if (!Number.isInteger(size) || size < MIN_CHARACTERISTIC_SIZE || size > MAX_CHARACTERISTIC_SIZE) {
    throw new RangeError(`maxCharacteristicSize must be an integer in ${MIN_CHARACTERISTIC_SIZE}..${MAX_CHARACTERISTIC_SIZE}, got ${size}`);
  }
  return size;
}

export class IsoReaderEngine implements ReaderEngine {
  readonly #settings: IsoReaderEngineSettings;
  readonly #namespaces: Record<string, string[]>;
  #phase: Phase = 'idle';
  #driver: NfcHandoverDriver | undefined;
  #session: ReaderSession | undefined;
  #offered: OfferedModes = {};
  #role: KioskRole | undefined;
  /** Whether SessionEstablishment went out (central: at connect; peripheral: after State 0x01). */
  #established = false;
  readonly #reassembler: BleReassembler;

  constructor(context: EngineContext, settings: IsoReaderEngineSettings) {
    this.#settings = settings;
    this.#namespaces = context.namespaces;
    this.#reassembler = new BleReassembler({ maxCharacteristicSize: MAX_CHARACTERISTIC_SIZE, maxMessageSize: settings.maxMessageSize });
  }

  // ------------------------------------------------------------------ engagement

  qrScanned(text: string): Promise<Engagement> {
    if (this.#phase !== 'idle') return Promise.resolve({ kind: 'failed', reason: `QR engagement in phase ${this.#phase}` });
    let deviceEngagement: DecodedDeviceEngagement;
    try {
      deviceEngagement = decodeDeviceEngagement(deviceEngagementFromQr(text));
    } catch (error) {
      this.#phase = 'done';
      return Promise.resolve({ kind: 'failed', reason: `the QR code is not a usable mdoc DeviceEngagement: ${message(error)}` });
    }
    const offered = offeredFromDeviceEngagement(deviceEngagement);
    // QR engagement → Handover null (ISO/IEC 18013-5 §9.1.5.1).
    return Promise.resolve(this.#engage(deviceEngagement, offered, { type: 'qr' }));
  }

  nfcStart(): NfcStep {
    if (this.#phase !== 'idle') return { kind: 'failed', reason: `NFC engagement in phase ${this.#phase}` };
    this.#phase = 'nfc';
    this.#driver = new NfcHandoverDriver(this.#settings.nfc);
    return this.#nfcStep(this.#driver.start());
  }

  async nfcResponse(response: Uint8Array): Promise<NfcStep> {
    const driver = this.#driver;
    if (this.#phase !== 'nfc' || driver === undefined) return { kind: 'failed', reason: `NFC response in phase ${this.#phase}` };
    const step = driver.respond(response);
    if (step.kind === 'command' && step.delayMs > 0) await this.#settings.delay(step.delayMs);
    if (this.#disposed()) return { kind: 'failed', reason: 'the engine was disposed during the NFC handover' };
    return this.#nfcStep(step);
  }

  #nfcStep(step: HandoverStep): NfcStep {
    switch (step.kind) {
      case 'command':
        return { kind: 'apdu', apdu: step.apdu };
      case 'failed':
        this.#driver = undefined;
        this.#phase = 'done';
        return { kind: 'failed', reason: step.reason };
      case 'done': {
        this.#driver = undefined;
        const { result } = step;
        let deviceEngagement: DecodedDeviceEngagement;
        try {
          deviceEngagement = decodeDeviceEngagement(result.deviceEngagement);
        } catch (error) {
          this.#phase = 'done';
          return { kind: 'failed', reason: `the Handover Select carries no usable DeviceEngagement: ${message(error)}` };
        }
        // Handover = [HS, HR | null] (ISO/IEC 18013-5 §9.1.5.1), the messages exactly as read and written.
        const handover: Handover = { type: 'nfc', handoverSelect: result.handoverSelect, handoverRequest: result.handoverRequest };
        const engagement = this.#engage(deviceEngagement, offeredFromHandover(result.ble, result.readerBleUuid), handover);
        return engagement.kind === 'modes' ? { kind: 'done', modes: engagement.modes } : engagement;
      }
    }
  }

  #engage(deviceEngagement: DecodedDeviceEngagement, offered: OfferedModes | string, handover: Handover): Engagement {
    this.#phase = 'done';
    if (typeof offered === 'string') return { kind: 'failed', reason: offered };
    let session: ReaderSession;
    try {
      session = ReaderSession.establish({ deviceEngagement, handover, docType: MDL_DOC_TYPE, namespaces: this.#namespaces });
    } catch (error) {
      return { kind: 'failed', reason: `cannot start the ISO session: ${message(error)}` };
    }
    const modes: BleModeWire[] = buildBleModes(offered);
    this.#session = session;
    this.#offered = offered;
    this.#phase = 'engaged';
    return { kind: 'modes', modes };
  }

  // ------------------------------------------------------------------ BLE

  bleConnected(role: KioskRole): Promise<BleActions> {
    const session = this.#session;
    if (this.#phase !== 'engaged' || session === undefined) return Promise.resolve(this.#failure(`ble_connected in phase ${this.#phase}`));
    const offered = role === 'central' ? this.#offered.peripheralServer : this.#offered.centralClient;
    if (offered === undefined) return Promise.resolve(this.#failure(`the phone did not offer the mode for the kiosk role ${role}`));
    this.#role = role;
    this.#phase = 'transfer';
    if (role === 'peripheral') return Promise.resolve(NOTHING); // the phone reads Ident, then writes State 0x01 (as Multipaz's holder does)
    // Kiosk central, phone in peripheral server mode: State 0x01 ("start"), then the request (as Multipaz's
    // `BleCentralManagerAndroid` reader does).
    const chars = ROLE_CHARACTERISTICS.central;
    this.#established = true;
    return Promise.resolve({
      writes: [{ char: chars.state, data: Uint8Array.of(BLE_STATE_START) }, ...this.#chunks(chars.c2s, session.sessionEstablishment)],
    });
  }

  async bleNotified(char: string, data: Uint8Array): Promise<BleActions> {
    if (this.#phase !== 'transfer') return NOTHING;
    if (this.#role !== 'central') return this.#failure('a notification arrived outside the central role');
    const chars = ROLE_CHARACTERISTICS.central;
    if (sameUuid(char, chars.s2c)) return this.#onChunk(data);
    if (sameUuid(char, chars.state)) return this.#onState(data);
    return this.#failure(`notification on ${char}, which the phone does not notify`);
  }

  async bleWritten(char: string, data: Uint8Array): Promise<BleActions> {
    if (this.#phase !== 'transfer') return NOTHING;
    if (this.#role !== 'peripheral') return this.#failure('a write arrived outside the peripheral role');
    const chars = ROLE_CHARACTERISTICS.peripheral;
    if (sameUuid(char, chars.state)) return this.#onState(data);
    if (sameUuid(char, chars.c2s)) {
      if (!this.#established) return this.#failure('the phone wrote Client2Server before State 0x01 (ISO/IEC 18013-5 §8.3.3.1.1)');
      return this.#onChunk(data);
    }
    return this.#failure(`the phone wrote ${char}, which is not writable`);
  }

  bleReadRequest(char: string): Uint8Array {
    // Ident = HKDF(EDeviceKeyBytes, "BLEIdent") (ISO/IEC 18013-5 §8.3.3.1.1); spec §4.5: empty bytes for other reads.
    const session = this.#session;
    if (this.#role === 'peripheral' && session !== undefined && sameUuid(char, ROLE_CHARACTERISTICS.peripheral.ident))
      return session.ident.slice();
    return new Uint8Array(0);
  }

  #onState(data: Uint8Array): BleActions {
    const value = data.length === 1 ? data[0] : undefined;
    if (value === BLE_STATE_START) {
      const session = this.#session;
      if (this.#role !== 'peripheral' || this.#established || session === undefined) return NOTHING; // a repeated start changes nothing
      this.#established = true;
      // Central client mode: the reader (GATT server) sends SessionEstablishment as S2C notifications (as Multipaz's
      // `BlePeripheralManagerAndroid` reader does).
      return { writes: this.#chunks(ROLE_CHARACTERISTICS.peripheral.s2c, session.sessionEstablishment) };
    }
    if (value === BLE_STATE_END) {
      const errors = new Findings();
      errors.add(
        'session',
        'the phone ended the BLE session (State 0x02) before sending a response: declined on the phone, or the wallet gave up',
      );
      return this.#finish(uncheckedOutcome(errors));
    }
    return this.#failure(
      `invalid State value ${Buffer.from(data).toString('hex') || '(empty)'} (expected 01 or 02, ISO/IEC 18013-5 Table 13)`,
    );
  }

  async #onChunk(chunk: Uint8Array): Promise<BleActions> {
    let whole: Uint8Array | undefined;
    try {
      whole = this.#reassembler.push(chunk);
    } catch (error) {
      return this.#failure(
        error instanceof BleFramingError ? `BLE framing: ${error.message} (ISO/IEC 18013-5 §8.3.3.1.1.6)` : message(error),
      );
    }
    if (whole === undefined) return NOTHING;
    return this.#onSessionData(whole);
  }

  async #onSessionData(bytes: Uint8Array): Promise<BleActions> {
    const session = this.#session;
    if (session === undefined) return this.#failure('SessionData without a session');
    let sessionData;
    try {
      sessionData = decodeSessionData(bytes);
    } catch (error) {
      return this.#failure(`the phone's SessionData is not valid CBOR: ${message(error)}`);
    }
    const { data, status } = sessionData;
    const errors = new Findings();
    const warnings = new Findings();
    if (status === SESSION_STATUS.sessionEncryptionError)
      errors.add('session', 'the wallet reported SessionData status 10 (session encryption error): it could not decrypt the request');
    else if (status === SESSION_STATUS.cborDecodingError)
      errors.add('session', 'the wallet reported SessionData status 11 (CBOR decoding error): it could not decode the request');
    if (data === undefined) {
      if (status === undefined) return this.#failure('the phone sent SessionData with neither data nor status');
      if (status === SESSION_STATUS.sessionTermination) {
        errors.add(
          'session',
          'the holder ended the session without a response (SessionData status 20): declined on the phone, or the wallet failed',
        );
      } else if (!errors.has('session')) {
        errors.add('session', `the wallet ended the session with SessionData status ${status} and no response`);
      }
      return this.#finish(uncheckedOutcome(errors, warnings));
    }
    if (status !== undefined && status !== SESSION_STATUS.sessionTermination && !errors.has('session')) {
      warnings.add('session', `SessionData status ${status} next to the response`);
    }
    let deviceResponse: Uint8Array;
    try {
      deviceResponse = session.decrypt(data);
    } catch (error) {
      return this.#failure(`the phone's SessionData does not decrypt with SKDevice: ${message(error)}`);
    }
    this.#phase = 'done';
    const outcome = await verifyDeviceResponse({
      deviceResponse,
      transcript: session.transcript,
      eReaderPrivateKey: session.eReaderPrivateKey,
      docType: MDL_DOC_TYPE,
      requested: this.#namespaces,
      trustedCertificates: this.#settings.trustedCertificates,
      now: this.#settings.now(),
      context: this.#settings.context,
      errors,
      warnings,
    });
    return this.#finish(outcome);
  }

  /** The verification is over: State 0x02 (spec §4.4: the final ble_write), then `complete`. */
  #finish(outcome: OutcomeWire): BleActions {
    const role = this.#role ?? 'central';
    this.#phase = 'done';
    this.#dropSession();
    return { writes: [{ char: ROLE_CHARACTERISTICS[role].state, data: Uint8Array.of(BLE_STATE_END) }], outcome };
  }

  #failure(reason: string): BleActions {
    this.#phase = 'done';
    this.#dropSession();
    return { writes: [], failure: reason };
  }

  #chunks(char: string, message: Uint8Array): { char: string; data: Uint8Array }[] {
    return chunkMessage(message, this.#settings.maxCharacteristicSize).map((data) => ({ char, data }));
  }

  #dropSession(): void {
    this.#session?.dispose();
    this.#session = undefined;
    this.#reassembler.reset();
  }

  /** A method, so the check after an await is not narrowed away. */
  #disposed(): boolean {
    return this.#phase === 'disposed';
  }

  dispose(): void {
    this.#dropSession();
    this.#driver = undefined;
    this.#offered = {};
    this.#role = undefined;
    this.#phase = 'disposed';
  }
}
