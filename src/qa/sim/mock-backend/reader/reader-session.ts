/**
 * One ISO 18013-5 reader session, from the engagement to the decrypted response (ISO/IEC 18013-5 §9.1.1
 * session establishment and encryption, checked against the Annex D vectors in `test/fixtures/iso18013-5/`):
 *
 *   EReaderKey            fresh P-256 key per verification, the curve of EDeviceKey (as Multipaz's
 *                         `VerificationHelper` picks it)
 *   EReaderKeyBytes       #6.24(bstr .cbor COSE_Key)                                   (18013-5 §9.1.1)
 *   SessionTranscript     [DeviceEngagementBytes, EReaderKeyBytes, Handover] from the RAW bytes received
 *                         (DE as in the QR/NDEF record; Handover = null | [HS, HR|null]) (18013-5 §9.1.5.1)
 *   SKReader / SKDevice   HKDF over ECDH(EReaderKey, EDeviceKey), salt SHA-256(SessionTranscriptBytes) (18013-5 §9.1.1)
 *   DeviceRequest         {"version": "1.0", "docRequests": [{"itemsRequest": #6.24(ItemsRequest)}]},
 *                         ItemsRequest {"docType", "nameSpaces": {ns: {element: false}}} (18013-5 §8.3.2.1.2.1;
 *                         spec §1: intent_to_retain always false); no readerAuth
 *   SessionEstablishment  {"eReaderKey": EReaderKeyBytes, "data": AES-GCM(SKReader, IV(0,1), DeviceRequest)}
 *   BLE Ident             HKDF(EDeviceKeyBytes, "BLEIdent") for the kiosk's GATT server (18013-5 §8.3.3.1.1)
 */
import type { KeyObject } from 'node:crypto';
import { EmbeddedCbor, cborEncode } from '../../iso/cbor.js';
import { encodeCoseKeyBytes, generateP256KeyPair } from '../../iso/cose-key.js';
import type { DecodedDeviceEngagement } from '../../iso/device-engagement.js';
import { SessionEncryption, bleIdent } from '../../iso/session-crypto.js';
import { encodeSessionEstablishment } from '../../iso/session-messages.js';
import { buildSessionTranscript, type Handover, type SessionTranscript } from '../../iso/session-transcript.js';

export const MDL_DOC_TYPE = 'org.iso.18013.5.1.mDL';

export type RequestedNamespaces = Readonly<Record<string, readonly string[]>>;

/** DeviceRequest bytes (ISO/IEC 18013-5 §8.3.2.1.2.1), map keys in CDDL order as Annex D writes them. */
export function encodeDeviceRequest(docType: string, namespaces: RequestedNamespaces): Uint8Array {
  const nameSpaces = new Map<string, Map<string, boolean>>();
  for (const [namespace, elements] of Object.entries(namespaces)) {
    const inner = nameSpaces.get(namespace) ?? new Map<string, boolean>();
    for (const element of elements) inner.set(element, false); // IntentToRetain: always false (spec §1)
    nameSpaces.set(namespace, inner);
  }
  const itemsRequest = EmbeddedCbor.of(
    new Map<string, unknown>([
      ['docType', docType],
      ['nameSpaces', nameSpaces],
    ]),
  );
  return cborEncode(
    new Map<string, unknown>([
      ['version', '1.0'],
      ['docRequests', [new Map([['itemsRequest', itemsRequest]])]],
    ]),
  );
}

export class ReaderSession {
  readonly deviceEngagement: DecodedDeviceEngagement;
  readonly transcript: SessionTranscript;
  /** The first message to the phone, ready to chunk. */
  readonly sessionEstablishment: Uint8Array;
  /** Ident characteristic value for mdoc central client mode. */
  readonly ident: Uint8Array;
  #eReaderPrivateKey: KeyObject | undefined;
  #encryption: SessionEncryption | undefined;

  private constructor(input: {
    deviceEngagement: DecodedDeviceEngagement;
    transcript: SessionTranscript;
    sessionEstablishment: Uint8Array;
    eReaderPrivateKey: KeyObject;
    encryption: SessionEncryption;
  }) {
    this.deviceEngagement = input.deviceEngagement;
    this.transcript = input.transcript;
    this.sessionEstablishment = input.sessionEstablishment;
    this.ident = bleIdent(input.deviceEngagement.eDeviceKeyBytes);
    this.#eReaderPrivateKey = input.eReaderPrivateKey;
    this.#encryption = input.encryption;
  }

  /**
   * Builds the session from the DeviceEngagement (decoded with its bytes as received, `decodeDeviceEngagement`)
   * and the Handover.
   */
  static establish(input: {
    deviceEngagement: DecodedDeviceEngagement;
    handover: Handover;
    docType: string;
    namespaces: RequestedNamespaces;
  }): ReaderSession {
    const deviceEngagement = input.deviceEngagement;
    // decodeDeviceEngagement accepts P-256 EDeviceKeys only (cose-key.ts), so EReaderKey is on its curve.
    const eReader = generateP256KeyPair();
    const eReaderKeyBytes = encodeCoseKeyBytes(eReader.publicKey);
    const transcript = buildSessionTranscript({ deviceEngagement: deviceEngagement.bytes, eReaderKeyBytes, handover: input.handover });
    const encryption = SessionEncryption.forReader({
      eReaderPrivateKey: eReader.privateKey,
      eDevicePublicKey: deviceEngagement.eDeviceKey,
      sessionTranscriptBytes: transcript.taggedBytes,
    });
    const data = encryption.encrypt(encodeDeviceRequest(input.docType, input.namespaces));
    return new ReaderSession({
      deviceEngagement,
      transcript,
      sessionEstablishment: encodeSessionEstablishment({ eReaderKeyBytes, data }),
      eReaderPrivateKey: eReader.privateKey,
      encryption,
    });
  }

  /** EReaderKey (private): needed for EMacKey when the phone authenticates with deviceMac (ISO/IEC 18013-5 §9.1.3.5). */
  get eReaderPrivateKey(): KeyObject {
    if (this.#eReaderPrivateKey === undefined) throw new Error('the reader session was disposed');
    return this.#eReaderPrivateKey;
  }

  /** Decrypts the `data` of a SessionData from the phone (SKDevice, IV(1, counter)); throws SessionCryptoError. */
  decrypt(data: Uint8Array): Uint8Array {
    if (this.#encryption === undefined) throw new Error('the reader session was disposed');
    return this.#encryption.decrypt(data);
  }

  /** Drops the key material (the KeyObjects cannot be zeroed; they become unreachable). */
  dispose(): void {
    this.#eReaderPrivateKey = undefined;
    this.#encryption = undefined;
    this.ident.fill(0);
  }
}
