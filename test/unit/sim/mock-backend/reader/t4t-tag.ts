/**
 * A minimal Type 4 Tag for driving the reader's NFC handover with raw bytes: the capability container and
 * the NDEF messages are given as bytes, so a test can serve records exactly as a wallet wrote them (e.g. a
 * Tp one byte short, an HS selecting only NFC), which the typed builders in src/qa/sim/iso cannot produce.
 */
import {
  AID_NDEF_APPLICATION,
  FILE_ID_CAPABILITY_CONTAINER,
  Sw,
  encodeResponseApdu,
  interpretT4tCommand,
  parseCommandApdu,
  parseNlen,
  responseOk,
  responseStatus,
} from '../../../../../src/qa/sim/iso/apdu.js';
import { bytesEqual } from '../../../../../src/qa/sim/iso/cbor.js';
import { Tnf, findRecord, parseNdefMessage } from '../../../../../src/qa/sim/iso/ndef.js';
import { buildTnepStatusMessage } from '../../../../../src/qa/sim/iso/tnep.js';

export interface RawTagOptions {
  /** The 15 CC bytes. */
  readonly cc: Uint8Array;
  /** The NDEF message the file holds at the tap: a Tp (negotiated) or the HS (static). */
  readonly initial: Uint8Array;
  /** Negotiated: the HS answering the reader's HR (given the HR exactly as written). */
  readonly answerHr?: (hr: Uint8Array) => Uint8Array;
}

export interface RawTag {
  answer(command: Uint8Array): Uint8Array;
  /** Every complete NDEF message the reader wrote (Ts, then HR). */
  readonly written: Uint8Array[];
}

const withNlen = (message: Uint8Array): Uint8Array => Uint8Array.from([message.length >> 8, message.length & 0xff, ...message]);

export function rawTag(options: RawTagOptions): RawTag {
  let file = withNlen(options.initial);
  let selected: 'none' | 'app' | 'cc' | 'ndef' = 'none';
  const written: Uint8Array[] = [];
  const answer = (bytes: Uint8Array): Uint8Array => {
    const command = interpretT4tCommand(parseCommandApdu(bytes));
    switch (command.kind) {
      case 'selectAid':
        selected = bytesEqual(command.aid, AID_NDEF_APPLICATION) ? 'app' : 'none';
        return encodeResponseApdu(selected === 'app' ? responseOk() : responseStatus(Sw.FILE_NOT_FOUND));
      case 'selectFile':
        selected = command.fileId === FILE_ID_CAPABILITY_CONTAINER ? 'cc' : 'ndef';
        return encodeResponseApdu(responseOk());
      case 'readBinary': {
        const source = selected === 'cc' ? options.cc : file;
        return encodeResponseApdu(responseOk(source.slice(command.offset, command.offset + command.length)));
      }
      case 'updateBinary': {
        const next = new Uint8Array(Math.max(file.length, command.offset + command.data.length));
        next.set(file);
        next.set(command.data, command.offset);
        file = next;
        const nlen = parseNlen(file.subarray(0, 2));
        if (nlen > 0 && file.length >= 2 + nlen) {
          const message = file.slice(2, 2 + nlen);
          written.push(message);
          const isTs = findRecord(parseNdefMessage(message), Tnf.WELL_KNOWN, 'Ts') !== undefined;
          if (isTs) file = withNlen(buildTnepStatusMessage(0));
          else if (options.answerHr !== undefined) file = withNlen(options.answerHr(message));
        }
        return encodeResponseApdu(responseOk());
      }
      case 'unsupported':
        return encodeResponseApdu(responseStatus(Sw.INS_NOT_SUPPORTED));
    }
  };
  return { answer, written };
}
