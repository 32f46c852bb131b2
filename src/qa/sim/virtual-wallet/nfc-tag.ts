/**
 * The virtual phone's NFC side: a Type 4 Tag emulation (host card emulation) answering the APDUs of ISO
 * 18013-5 NFC engagement (ISO/IEC 18013-5 §8.2.2.1), like Multipaz's
 * `MdocNfcEngagementHelper.processApdu()`.
 *
 *   SELECT AID D2760000850101 → 9000 (other AIDs, e.g. the mdoc data-transfer AID, → 6A82)   NFC Forum T4T
 *   SELECT E103 / NDEF file (from the CC) → 9000; unknown file → 6A82
 *   READ BINARY → bytes of the selected file from the offset, at most MLe of them (CC: 15 bytes, as
 *     Multipaz's and isomdl's holders write it; NDEF: NLEN||message)
 *   UPDATE BINARY → negotiated handover only (CC write access 00); static tags answer 6982
 *
 * Static handover (Multipaz's `testStaticHandover`, `test/fixtures/captures/multipaz-loopback-static.json`):
 * read-only CC (write access FF); the NDEF file holds the Handover Select. Negotiated handover (NFC Forum
 * TNEP, single response mode; `testNegotiatedHandover`): writable CC; the NDEF file first holds the Tp
 * record; a complete Ts message written (NLEN > 0 and all its bytes present, so both the one-write form and
 * the T4T §7.5.5 "0000, data, NLEN" form work) is answered by a Te with status 00; a complete Hr message by
 * the Handover Select the `onHandoverRequest` callback builds. Apple-like wallets acknowledge the HR before
 * their HS is ready: `handoverSelectNotReadyReads` NLEN reads return 0000 first (isomdl
 * `apple_wallet_hs_polls_then_done`, `test/fixtures/captures/apple-wallet-negotiated.json`).
 *
 * The tag keeps the HS and HR exactly as sent and received (without NLEN) for the SessionTranscript
 * (ISO/IEC 18013-5 §9.1.5.1) and reports a handover as complete once the reader has read the HS to its
 * last byte.
 *
 * Field loss: the reader (src/qa/devices/virtual-nfc-reader.ts) calls `fieldOn()` / `fieldOff()` on
 * tap and lift. A new field starts the tag afresh: nothing selected, TNEP back to the Tp message (a phone
 * re-tapped restarts its HCE session); a completed handover stays recorded. The `fieldDropAtApdu`
 * behaviour makes the n-th APDU (1-based, counted over the tag's life) throw `NfcFieldLostError` instead
 * of answering: the field is gone and the command was not processed.
 */
import {
  AID_NDEF_APPLICATION,
  FILE_ID_CAPABILITY_CONTAINER,
  Sw,
  encodeCapabilityContainer,
  encodeResponseApdu,
  interpretT4tCommand,
  parseCommandApdu,
  type CapabilityContainer,
  type HandoverMode,
} from '../iso/apdu.js';
import { concatBytes, uintBytes } from '../iso/byte-cursor.js';
import { bytesEqual } from '../iso/cbor.js';
import { RTD_HANDOVER_REQUEST } from '../iso/handover.js';
import { Tnf, findRecord, parseNdefMessage } from '../iso/ndef.js';
import {
  MULTIPAZ_SERVICE_PARAMETER,
  RTD_SERVICE_SELECT,
  TNEP_HANDOVER_SERVICE,
  TNEP_STATUS_SUCCESS,
  buildServiceParameterMessage,
  buildTnepStatusMessage,
  parseServiceSelectPayload,
  type ServiceParameter,
} from '../iso/tnep.js';

/** Status words the tag uses beyond the toolkit's `Sw` (ISO 7816-4 §5.6). */
export const TagSw = {
  ...Sw,
  WRONG_LENGTH: 0x6700,
  SECURITY_STATUS_NOT_SATISFIED: 0x6982,
  NO_CURRENT_EF: 0x6986,
  NOT_ENOUGH_MEMORY: 0x6a84,
  WRONG_P1P2: 0x6b00,
} as const;

/** TNEP status "protocol error" (NFC Forum TNEP: any non-zero status is a failure). */
export const TNEP_STATUS_PROTOCOL_ERROR = 0x01;

/** The field went away while this APDU was in flight: no response. */
export class NfcFieldLostError extends Error {
  override readonly name = 'NfcFieldLostError';
  constructor(readonly apduNumber: number) {
    super(`NFC field lost at APDU ${apduNumber}`);
  }
}

/** What a virtual NFC reader needs from a phone on it. */
export interface VirtualNfcTag {
  /** Answers one command APDU (response data || SW1 SW2); throws NfcFieldLostError on a field drop. */
  processApdu(command: Uint8Array): Uint8Array;
  /** The phone entered a reader's field (tap). */
  fieldOn(): void;
  /** The phone left the field (lift, or the field dropped). */
  fieldOff(): void;
}

export interface CompletedHandover {
  /** HS NDEF message as read by the reader (no NLEN). */
  readonly handoverSelect: Uint8Array;
  /** HR NDEF message as written by the reader (no NLEN); null for static handover. */
  readonly handoverRequest: Uint8Array | null;
}

export interface HandoverTagOptions {
  readonly mode: HandoverMode;
  readonly capabilityContainer: CapabilityContainer;
  /** Static: the HS NDEF message the file holds. */
  readonly handoverSelect?: Uint8Array;
  /** Negotiated: the Tp offered (default Multipaz's). */
  readonly serviceParameter?: ServiceParameter;
  /** Negotiated: the HS answering an HR (the HR bytes exactly as written). */
  readonly onHandoverRequest?: (handoverRequest: Uint8Array) => Uint8Array;
  /** Negotiated: NLEN reads answered 0000 after the HR before the HS shows (default 0). */
  readonly handoverSelectNotReadyReads?: number;
  /** Called when the reader has read an HS to its end (once per HS built). */
  readonly onHandoverComplete?: (handover: CompletedHandover) => void;
  /** 1-based APDU numbers at which the field drops (behaviour "NFC field drop at APDU n"). */
  readonly fieldDropAtApdu?: readonly number[];
  /** Observes each exchange (tests, traces); `response` undefined for a field drop. */
  readonly onApdu?: (exchange: {
    readonly number: number;
    readonly command: Uint8Array;
    readonly response: Uint8Array | undefined;
  }) => void;
}

type Selected = 'cc' | 'ndef' | undefined;
type TnepState = 'initial' | 'serviceSelected' | 'handoverRequested';

const withNlen = (message: Uint8Array): Uint8Array => concatBytes([uintBytes(message.length, 2), message]);

function response(sw: number, data: Uint8Array = new Uint8Array(0)): Uint8Array {
  return encodeResponseApdu({ data, sw });
}

/** A Type 4 Tag doing ISO 18013-5 static or negotiated handover (see the module comment). */
export class HandoverTag implements VirtualNfcTag {
  readonly #options: HandoverTagOptions;
  readonly #cc: Uint8Array;
  readonly #ndefFileId: number;
  readonly #initialFile: Uint8Array;
  readonly #dropAt: ReadonlySet<number>;
  #applicationSelected = false;
  #selected: Selected;
  #file: Uint8Array;
  #tnep: TnepState = 'initial';
  #notReadyLeft = 0;
  /** The HS in the file now, and the HR it answers, until read to the end. */
  #pendingHandover: CompletedHandover | undefined;
  #apdus = 0;
  #completed: CompletedHandover | undefined;

  constructor(options: HandoverTagOptions) {
    this.#options = options;
    this.#cc = encodeCapabilityContainer(options.capabilityContainer);
    this.#ndefFileId = options.capabilityContainer.ndefFileId;
    if (options.mode === 'static') {
      if (options.handoverSelect === undefined) throw new TypeError('a static handover tag needs its Handover Select');
      this.#initialFile = withNlen(options.handoverSelect);
    } else {
      if (options.onHandoverRequest === undefined) throw new TypeError('a negotiated handover tag needs onHandoverRequest');
      this.#initialFile = withNlen(buildServiceParameterMessage(options.serviceParameter ?? MULTIPAZ_SERVICE_PARAMETER));
    }
    this.#file = this.#initialFile;
    this.#dropAt = new Set(options.fieldDropAtApdu ?? []);
    this.#reset();
  }

  get mode(): HandoverMode {
    return this.#options.mode;
  }

  /** APDUs received so far (field drops included). */
  get apduCount(): number {
    return this.#apdus;
  }

  /** The last handover whose HS the reader read completely. */
  get completedHandover(): CompletedHandover | undefined {
    return this.#completed;
  }

  fieldOn(): void {
    this.#reset();
  }

  fieldOff(): void {
    this.#reset();
  }

  processApdu(command: Uint8Array): Uint8Array {
    const number = ++this.#apdus;
    if (this.#dropAt.has(number)) {
      this.#reset();
      this.#options.onApdu?.({ number, command, response: undefined });
      throw new NfcFieldLostError(number);
    }
    const answer = this.#answer(command);
    this.#options.onApdu?.({ number, command, response: answer });
    return answer;
  }

  #reset(): void {
    this.#applicationSelected = false;
    this.#selected = undefined;
    if (this.#options.mode === 'negotiated') {
      this.#file = this.#initialFile;
      this.#tnep = 'initial';
      this.#notReadyLeft = 0;
      this.#pendingHandover = undefined;
    } else {
      this.#pendingHandover = { handoverSelect: this.#initialFile.subarray(2), handoverRequest: null };
    }
  }

  #answer(bytes: Uint8Array): Uint8Array {
    let command;
    try {
      command = interpretT4tCommand(parseCommandApdu(bytes));
    } catch {
      return response(TagSw.WRONG_LENGTH);
    }
    switch (command.kind) {
      case 'selectAid':
        this.#selected = undefined;
        this.#applicationSelected = bytesEqual(command.aid, AID_NDEF_APPLICATION);
        return response(this.#applicationSelected ? Sw.OK : Sw.FILE_NOT_FOUND);
      case 'selectFile':
        if (this.#applicationSelected && command.fileId === FILE_ID_CAPABILITY_CONTAINER) this.#selected = 'cc';
        else if (this.#applicationSelected && command.fileId === this.#ndefFileId) this.#selected = 'ndef';
        else {
          this.#selected = undefined;
          return response(Sw.FILE_NOT_FOUND);
        }
        return response(Sw.OK);
      case 'readBinary':
        return this.#read(command.offset, command.length);
      case 'updateBinary':
        return this.#update(command.offset, command.data);
      case 'unsupported':
        return response(Sw.INS_NOT_SUPPORTED);
    }
  }

  #read(offset: number, requested: number): Uint8Array {
    if (this.#selected === undefined) return response(TagSw.NO_CURRENT_EF);
    // A tag answers at most MLe bytes (its CC's max R-APDU data size, NFC Forum T4T), whatever Le asks.
    const length = Math.min(requested, this.#options.capabilityContainer.maxResponseDataSize);
    if (this.#selected === 'cc') {
      if (offset > this.#cc.length) return response(TagSw.WRONG_P1P2);
      return response(Sw.OK, this.#cc.slice(offset, offset + length));
    }
    if (this.#notReadyLeft > 0 && offset === 0) {
      // Apple-like: the HR is acknowledged, the HS not written yet (isomdl `apple_wallet_hs_polls_then_done`).
      this.#notReadyLeft--;
      return response(Sw.OK, Uint8Array.of(0, 0).subarray(0, Math.min(2, length)));
    }
    const file = this.#file;
    if (offset > file.length) return response(TagSw.WRONG_P1P2);
    const data = file.slice(offset, offset + length);
    const pending = this.#pendingHandover;
    if (pending !== undefined && offset + data.length >= file.length && file.length > 2) {
      // The reader has now read the HS to its last byte: the handover is done.
      this.#pendingHandover = undefined;
      if (this.#completed === undefined || !sameHandover(this.#completed, pending)) {
        this.#completed = pending;
        this.#options.onHandoverComplete?.(pending);
      }
    }
    return response(Sw.OK, data);
  }

  #update(offset: number, data: Uint8Array): Uint8Array {
    if (this.#selected === undefined) return response(TagSw.NO_CURRENT_EF);
    const writable =
      this.#selected === 'ndef' && this.#options.mode === 'negotiated' && this.#options.capabilityContainer.writeAccess === 0x00;
    if (!writable) return response(TagSw.SECURITY_STATUS_NOT_SATISFIED);
    const end = offset + data.length;
    if (end > this.#options.capabilityContainer.maxNdefFileSize) return response(TagSw.NOT_ENOUGH_MEMORY);
    const file = new Uint8Array(Math.max(this.#file.length, end));
    file.set(this.#file);
    file.set(data, offset);
    this.#file = file;
    this.#notReadyLeft = 0;
    this.#pendingHandover = undefined;
    const nlen = ((file[0] ?? 0) << 8) | (file[1] ?? 0);
    if (nlen > 0 && file.length >= 2 + nlen) this.#onMessage(file.slice(2, 2 + nlen));
    return response(Sw.OK);
  }

  /** A complete NDEF message written by the reader (NFC Forum TNEP). */
  #onMessage(message: Uint8Array): void {
    let records;
    try {
      records = parseNdefMessage(message);
    } catch {
      this.#file = withNlen(buildTnepStatusMessage(TNEP_STATUS_PROTOCOL_ERROR));
      return;
    }
    const serviceSelect = findRecord(records, Tnf.WELL_KNOWN, RTD_SERVICE_SELECT);
    if (serviceSelect !== undefined) {
      let service: string | undefined;
      try {
        service = parseServiceSelectPayload(serviceSelect.payload);
      } catch {
        service = undefined;
      }
      const ok = service === TNEP_HANDOVER_SERVICE;
      this.#tnep = ok ? 'serviceSelected' : 'initial';
      this.#file = withNlen(buildTnepStatusMessage(ok ? TNEP_STATUS_SUCCESS : TNEP_STATUS_PROTOCOL_ERROR));
      return;
    }
    const onHandoverRequest = this.#options.onHandoverRequest;
    if (
      findRecord(records, Tnf.WELL_KNOWN, RTD_HANDOVER_REQUEST) !== undefined &&
      this.#tnep !== 'initial' &&
      onHandoverRequest !== undefined
    ) {
      const handoverSelect = onHandoverRequest(message);
      this.#tnep = 'handoverRequested';
      this.#file = withNlen(handoverSelect);
      this.#notReadyLeft = this.#options.handoverSelectNotReadyReads ?? 0;
      this.#pendingHandover = { handoverSelect, handoverRequest: message };
      return;
    }
    // Anything else (an HR before the service was selected, an unknown message): TNEP protocol error.
    this.#file = withNlen(buildTnepStatusMessage(TNEP_STATUS_PROTOCOL_ERROR));
  }
}

function sameHandover(a: CompletedHandover, b: CompletedHandover): boolean {
  if (!bytesEqual(a.handoverSelect, b.handoverSelect)) return false;
  if (a.handoverRequest === null || b.handoverRequest === null) return a.handoverRequest === b.handoverRequest;
  return bytesEqual(a.handoverRequest, b.handoverRequest);
}
