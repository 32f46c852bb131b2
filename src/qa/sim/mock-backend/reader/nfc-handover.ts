/**
 * Sans-IO reader side of ISO 18013-5 NFC engagement (ISO/IEC 18013-5 §8.2.2.1, after isomdl's
 * `ReaderApduHandoverDriver` and Multipaz's `mdocReaderNfcHandover.kt`): feed it each response APDU, it
 * answers with the next command APDU (and how long to wait before sending it), or with the handover result.
 * The backend relays the APDUs through the kiosk, so the driver never touches a card itself.
 *
 *   SELECT NDEF AID            (6A82 → poll again: a locked Android phone answers so; Multipaz polls on)
 *   SELECT CC, READ CC (15)    (NFC Forum Type 4 Tag CC: NDEF file id from bytes 9..10; READ chunk =
 *                               clamp(MLe, 15, 255) as isomdl's driver reads)
 *   SELECT NDEF, READ NLEN, READ message   (NLEN 0 → read NLEN again, bounded like isomdl's polls)
 *   no Tp record  → STATIC: the message is the Handover Select; Handover = [HS, null]  (ISO/IEC 18013-5 §9.1.5.1)
 *   Tp present    → NEGOTIATED (NFC Forum TNEP, single response communication mode):
 *                   write Ts, wait t_wait, read Te (status 00), write HR, wait, read HS (poll while NLEN = 0);
 *                   Handover = [HS, HR]
 *
 * Writes follow the NFC Forum Type 4 Tag update rule (T4T §7.5.5; `ndefWriteCommands`): NLEN||message in
 * one UPDATE BINARY below 254 bytes, otherwise 0000, the data in ≤255-byte pieces, then the real NLEN.
 *
 * The reader's Handover Request (the layout of Multipaz's `generateHandoverRequestMessage()` and isomdl's
 * `generate_hr_ndef()`, minus NFC): `Hr` with one `ac`, "0" (BLE), the ReaderEngagement record
 * `{0: "1.0"}`, and the BLE OOB record with LE role 03 (both modes) and a fresh UUID (the one an mdoc in
 * central client mode connects to, ISO/IEC 18013-5 §8.3.3.1.1.2). No NFC carrier: the relay carries data
 * over BLE only, and a phone that picked NFC would wait for NFC data transfer that never comes.
 *
 * The HS must select BLE: an `ac` record naming the BLE OOB record (CH 1.5: the `ac` records of an HS are
 * the carriers it selected). Anything else — NFC only, no carrier, a BLE record no `ac` selects — fails
 * with the named reason `NO_USABLE_CARRIER`.
 *
 * Re-taps: after a recoverable PC/SC error the relay session resends the failed APDU once the card is back
 * (spec §3). A phone whose NFC stack restarted answers it with an error status word, so a status-word
 * failure after the first SELECT restarts the handover from SELECT AID, at most `maxRestarts` times.
 */
import { randomUUID } from 'node:crypto';
import {
  AID_NDEF_APPLICATION,
  CcAccess,
  FILE_ID_CAPABILITY_CONTAINER,
  MAX_SHORT_DATA,
  Sw,
  encodeCommandApdu,
  ndefReadCommands,
  ndefWriteCommands,
  parseCapabilityContainer,
  parseNlen,
  parseResponseApdu,
  readBinary,
  readChunkSize,
  selectAid,
  selectFile,
  swHex,
  type CapabilityContainer,
  type CommandApdu,
  type ResponseApdu,
} from '../../iso/apdu.js';
import { canonicalUuid } from '../../iso/ble-uuids.js';
import {
  BLE_CARRIER_ID,
  LeRole,
  NFC_CARRIER_ID,
  NFC_CARRIER_TYPE,
  buildHandoverRequest,
  parseHandoverSelect,
  type ParsedHandoverSelect,
  type SelectedBleCarrier,
} from '../../iso/handover.js';
import { parseNdefMessage } from '../../iso/ndef.js';
import {
  DEFAULT_T_WAIT_MS,
  TNEP_STATUS_SUCCESS,
  buildServiceSelectMessage,
  findServiceParameter,
  parseTnepStatusMessage,
  tWaitMs,
} from '../../iso/tnep.js';
import { errorText } from '../../../../common/error-text.js';

export interface NfcHandoverOptions {
  /** UUID the reader offers in its HR for mdoc central client mode; fresh v4 per handover by default. */
  readonly readerBleUuid?: () => string;
  /** SELECT NDEF AID answered 6A82 (locked phone): how many more times to try. Default 20. */
  readonly lockedPolls?: number;
  /** Wait between those SELECTs, ms. Default 100. */
  readonly lockedPollDelayMs?: number;
  /** NLEN read as 0: how many more reads (isomdl MAX_NO_PROGRESS_POLLS = 100). Default 100. */
  readonly emptyPolls?: number;
  /** Restarts from SELECT AID after a status-word failure (see the re-tap note above). Default 2. */
  readonly maxRestarts?: number;
}

export type HandoverKind = 'static' | 'negotiated';

/** Names the failure when the HS selects no carrier the kiosk can carry (BLE); it starts the reason text. */
export const NO_USABLE_CARRIER = 'no usable carrier';

export interface HandoverResult {
  readonly kind: HandoverKind;
  /** The HS NDEF message exactly as read, without NLEN (it is hashed into the SessionTranscript, ISO/IEC 18013-5 §9.1.5.1). */
  readonly handoverSelect: Uint8Array;
  /** The HR NDEF message exactly as written, without NLEN; null for static handover (ISO/IEC 18013-5 §9.1.5.1). */
  readonly handoverRequest: Uint8Array | null;
  /** DeviceEngagement record payload, verbatim (a re-encoded one broke Apple Wallet sessions: isomdl commit 3ad4471). */
  readonly deviceEngagement: Uint8Array;
  /** The BLE carrier the mdoc selected (LE role from the mdoc's point of view); without one the handover fails (NO_USABLE_CARRIER). */
  readonly ble: SelectedBleCarrier;
  /** The UUID offered in our HR (negotiated handover only): used when the HS carries none (ISO/IEC 18013-5 §8.3.3.1.1.2). */
  readonly readerBleUuid: string | undefined;
}

export type HandoverStep =
  | { readonly kind: 'command'; readonly apdu: Uint8Array; readonly delayMs: number; readonly what: string }
  | { readonly kind: 'done'; readonly result: HandoverResult }
  | { readonly kind: 'failed'; readonly reason: string };

interface Command {
  readonly apdu: CommandApdu;
  readonly what: string;
  readonly delayMs: number;
}

type Flow<T> = Generator<Command, T, ResponseApdu>;

class HandoverError extends Error {
  override readonly name = 'HandoverError';
}

/** A status word other than 9000: the failure a re-tap can cause, so the driver may restart. */
class StatusWordError extends HandoverError {
  constructor(
    readonly what: string,
    readonly sw: number,
    readonly first: boolean,
  ) {
    super(`${what} failed with status ${swHex(sw)}`);
  }
}

const DEFAULTS = { lockedPolls: 20, lockedPollDelayMs: 100, emptyPolls: 100, maxRestarts: 2 } as const;

function checkCount(value: number, name: string): number {
  if (!Number.isInteger(value) || value < 0) throw new RangeError(`${name} must be a non-negative integer, got ${value}`);
  return value;
}

export class NfcHandoverDriver {
  readonly #lockedPolls: number;
  readonly #lockedPollDelayMs: number;
  readonly #emptyPolls: number;
  readonly #maxRestarts: number;
  readonly #readerBleUuid: string;
  #flow: Flow<HandoverResult>;
  #pending: Command | undefined;
  #restarts = 0;
  #finished = false;

  constructor(options: NfcHandoverOptions = {}) {
    this.#lockedPolls = checkCount(options.lockedPolls ?? DEFAULTS.lockedPolls, 'lockedPolls');
    this.#lockedPollDelayMs = checkCount(options.lockedPollDelayMs ?? DEFAULTS.lockedPollDelayMs, 'lockedPollDelayMs');
    this.#emptyPolls = checkCount(options.emptyPolls ?? DEFAULTS.emptyPolls, 'emptyPolls');
    this.#maxRestarts = checkCount(options.maxRestarts ?? DEFAULTS.maxRestarts, 'maxRestarts');
    this.#readerBleUuid = canonicalUuid((options.readerBleUuid ?? randomUUID)());
    this.#flow = this.#handover();
  }

  /** The UUID our HR offers (for the kiosk's peripheral role in central client mode). */
  get readerBleUuid(): string {
    return this.#readerBleUuid;
  }

  /** The first command: SELECT NDEF AID. */
  start(): HandoverStep {
    if (this.#pending !== undefined || this.#finished) throw new Error('the handover has already started');
    return this.#advance(() => this.#flow.next());
  }

  /** Feeds the response APDU (data || SW1 SW2) to the last command. */
  respond(responseApdu: Uint8Array): HandoverStep {
    if (this.#finished) return { kind: 'failed', reason: 'NFC handover: a response arrived after the handover ended' };
    const pending = this.#pending;
    if (pending === undefined) return this.#fail('NFC handover: a response arrived before the first command');
    let response: ResponseApdu;
    try {
      response = parseResponseApdu(responseApdu);
    } catch (error) {
      return this.#fail(`NFC handover: ${pending.what}: ${message(error)}`);
    }
    return this.#advance(() => this.#flow.next(response));
  }

  #advance(step: () => IteratorResult<Command, HandoverResult>): HandoverStep {
    let result: IteratorResult<Command, HandoverResult>;
    try {
      result = step();
    } catch (error) {
      if (error instanceof StatusWordError && !error.first && this.#restarts < this.#maxRestarts) {
        this.#restarts++;
        this.#flow = this.#handover();
        return this.#advance(() => this.#flow.next());
      }
      const restarted = this.#restarts > 0 ? ` (after ${this.#restarts} restart${this.#restarts === 1 ? '' : 's'})` : '';
      return this.#fail(`NFC handover: ${message(error)}${restarted}`);
    }
    if (result.done === true) {
      this.#finished = true;
      this.#pending = undefined;
      return { kind: 'done', result: result.value };
    }
    this.#pending = result.value;
    return { kind: 'command', apdu: encodeCommandApdu(result.value.apdu), delayMs: result.value.delayMs, what: result.value.what };
  }

  #fail(reason: string): HandoverStep {
    this.#finished = true;
    this.#pending = undefined;
    return { kind: 'failed', reason };
  }

  // ------------------------------------------------------------------ the reader's handover steps

  *#handover(): Flow<HandoverResult> {
    yield* this.#selectApplication();
    ok(yield cmd(selectFile(FILE_ID_CAPABILITY_CONTAINER), 'SELECT capability container (E103)'), 'SELECT capability container (E103)');
    const ccResponse = ok(yield cmd(readBinary(0, 15), 'READ BINARY capability container'), 'READ BINARY capability container');
    const cc = parseCc(ccResponse.data);
    const ndefFile = `NDEF file (${cc.ndefFileId.toString(16).toUpperCase().padStart(4, '0')})`;
    ok(yield cmd(selectFile(cc.ndefFileId), `SELECT ${ndefFile}`), `SELECT ${ndefFile}`);
    const readChunk = readChunkSize(cc);
    // Write pieces no larger than MLc allows (clamped like reads; 255 is the short-APDU maximum, ISO/IEC 7816-4).
    const writeChunk = Math.min(MAX_SHORT_DATA, Math.max(15, cc.maxCommandDataSize));

    const initial = yield* this.#readMessage(cc, readChunk, 'initial NDEF message', 0, DEFAULT_T_WAIT_MS);
    const serviceParameter = findServiceParameter(parseNdefMessage(initial));
    if (serviceParameter === undefined) {
      // No Tp (TNEP service parameter) → static handover; the message read is the Handover Select.
      return selected('static', initial, null, undefined);
    }
    if (cc.writeAccess !== CcAccess.GRANTED) {
      throw new HandoverError('the tag offers TNEP (Tp record) but its NDEF file is read-only (CC write access ≠ 00)');
    }
    const tWait = tWaitMs(serviceParameter.minimumWaitingTime);
    const maxMessage = Math.min(cc.maxNdefFileSize - 2, serviceParameter.maxNdefMessageSize ?? 0xffff);

    yield* this.#writeMessage(buildServiceSelectMessage(), writeChunk, maxMessage, 'Service Select (Ts)');
    const status = parseTnepStatusMessage(yield* this.#readMessage(cc, readChunk, 'TNEP status (Te)', tWait, tWait));
    if (status !== TNEP_STATUS_SUCCESS) {
      throw new HandoverError(`TNEP status 0x${status.toString(16).padStart(2, '0')}: the phone refused the handover service`);
    }
    // BLE only (no `nfc` carrier): the relay has no NFC data transfer (issue 13).
    const handoverRequest = buildHandoverRequest({ ble: { leRole: LeRole.BOTH_CENTRAL_PREFERRED, uuid: this.#readerBleUuid } });
    yield* this.#writeMessage(handoverRequest, writeChunk, maxMessage, 'Handover Request');
    const handoverSelect = yield* this.#readMessage(cc, readChunk, 'Handover Select', tWait, tWait);
    return selected('negotiated', handoverSelect, handoverRequest, this.#readerBleUuid);
  }

  *#selectApplication(): Flow<void> {
    const what = 'SELECT NDEF application (D2760000850101)';
    for (let polls = 0; ; polls++) {
      const response = yield cmd(selectAid(AID_NDEF_APPLICATION), what, polls === 0 ? 0 : this.#lockedPollDelayMs);
      if (response.sw === Sw.OK) return;
      if (response.sw === Sw.FILE_NOT_FOUND) {
        // Android answers 6A82 while the phone is locked (Multipaz's reader polls on); keep polling (bounded).
        if (polls < this.#lockedPolls) continue;
        throw new HandoverError(`${what} still answered 6a82 after ${polls + 1} attempts: the phone is locked or has no mdoc engagement`);
      }
      throw new StatusWordError(what, response.sw, true);
    }
  }

  /** READ NLEN (polling while 0: TNEP's "not ready"), then the message in READ BINARY chunks. */
  *#readMessage(cc: CapabilityContainer, chunk: number, what: string, firstDelayMs: number, pollDelayMs: number): Flow<Uint8Array> {
    const nlenWhat = `READ BINARY NLEN (${what})`;
    let nlen = 0;
    for (let polls = 0; ; polls++) {
      const response = ok(yield cmd(readBinary(0, 2), nlenWhat, polls === 0 ? firstDelayMs : pollDelayMs), nlenWhat);
      nlen = parseNlenOf(response.data, nlenWhat);
      if (nlen > 0) break;
      if (polls >= this.#emptyPolls)
        throw new HandoverError(`${what}: NLEN still 0 after ${polls + 1} reads (the phone never wrote its answer)`);
    }
    if (nlen > cc.maxNdefFileSize - 2) {
      throw new HandoverError(`${what}: NLEN ${nlen} exceeds the NDEF file size ${cc.maxNdefFileSize} from the capability container`);
    }
    const message = new Uint8Array(nlen);
    let at = 0;
    for (const command of ndefReadCommands(nlen, chunk)) {
      const readWhat = `READ BINARY ${what} at offset ${at}`;
      const data = ok(yield cmd(command, readWhat), readWhat).data;
      const expected = command.le ?? 0;
      if (data.length !== expected) throw new HandoverError(`${readWhat}: expected ${expected} bytes, got ${data.length}`);
      message.set(data, at);
      at += data.length;
    }
    return message;
  }

  *#writeMessage(message: Uint8Array, chunk: number, maxMessage: number, what: string): Flow<void> {
    if (message.length > maxMessage)
      throw new HandoverError(`${what} of ${message.length} bytes exceeds the tag's maximum of ${maxMessage}`);
    for (const command of ndefWriteCommands(message, chunk)) {
      const writeWhat = `UPDATE BINARY ${what}`;
      ok(yield cmd(command, writeWhat), writeWhat);
    }
  }
}

function cmd(apdu: CommandApdu, what: string, delayMs = 0): Command {
  return { apdu, what, delayMs };
}

function ok(response: ResponseApdu, what: string): ResponseApdu {
  if (response.sw !== Sw.OK) throw new StatusWordError(what, response.sw, false);
  return response;
}

function parseCc(data: Uint8Array): CapabilityContainer {
  let cc: CapabilityContainer;
  try {
    cc = parseCapabilityContainer(data);
  } catch (error) {
    throw new HandoverError(message(error));
  }
  if (cc.readAccess !== CcAccess.GRANTED)
    throw new HandoverError(`the NDEF file is not readable (CC read access 0x${cc.readAccess.toString(16)})`);
  return cc;
}

function parseNlenOf(data: Uint8Array, what: string): number {
  try {
    return parseNlen(data);
  } catch (error) {
    throw new HandoverError(`${what}: ${message(error)}`);
  }
}

function selected(
  kind: HandoverKind,
  handoverSelect: Uint8Array,
  handoverRequest: Uint8Array | null,
  readerBleUuid: string | undefined,
): HandoverResult {
  let parsed;
  try {
    parsed = parseHandoverSelect(handoverSelect);
  } catch (error) {
    const what = kind === 'static' ? 'the NDEF message (no Tp record, so static handover)' : "the phone's answer to the Handover Request";
    throw new HandoverError(`${what} is not a usable Handover Select: ${message(error)}`);
  }
  const ble = parsed.ble;
  if (ble === undefined || ble.alternativeCarrier === undefined)
    throw new HandoverError(`${NO_USABLE_CARRIER}: ${unusableCarriers(parsed)}; the kiosk carries data over BLE only`);
  return { kind, handoverSelect, handoverRequest, deviceEngagement: parsed.deviceEngagement, ble, readerBleUuid };
}

/** What the HS selected instead of BLE, in words for the failure reason. */
function unusableCarriers(hs: ParsedHandoverSelect): string {
  const refs = hs.alternativeCarriers.map((ac) => ac.carrierDataReference);
  if (refs.length === 0) return 'the Handover Select selects no carrier (no ac record)';
  const names = refs.map((ref) => {
    if (ref === NFC_CARRIER_ID) return `NFC (${NFC_CARRIER_TYPE})`;
    if (ref === BLE_CARRIER_ID) return 'BLE without a BLE OOB record';
    return `carrier "${ref}"`;
  });
  return `the Handover Select selects ${names.join(' and ')} only`;
}

function message(error: unknown): string {
  return errorText(error);
}
