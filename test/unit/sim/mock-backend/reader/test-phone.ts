/**
 * A test-only holder for the reader engine tests, built from the ISO toolkit and @owf/mdoc's Holder (not
 * the virtual wallet, which is written separately): a generated IACA → DS chain issues an mDL, and the
 * phone answers NFC APDUs (static or negotiated handover), shows a QR DeviceEngagement and plays either
 * BLE mode sans-IO: `fromReader(char, data)` takes what the kiosk relays from the backend and returns what
 * the phone sends back.
 */
import 'reflect-metadata';
import { randomBytes, randomUUID, webcrypto } from 'node:crypto';
import {
  CoseKey,
  DateOnly,
  DeviceKey,
  DeviceRequest,
  DocRequest,
  Holder,
  Issuer,
  ItemsRequest,
  SignatureAlgorithm,
  type IssuerSigned,
} from '@owf/mdoc';
import {
  AuthorityKeyIdentifierExtension,
  BasicConstraintsExtension,
  ExtendedKeyUsageExtension,
  KeyUsageFlags,
  KeyUsagesExtension,
  SubjectKeyIdentifierExtension,
  X509CertificateGenerator,
} from '@peculiar/x509';
import {
  AID_NDEF_APPLICATION,
  FILE_ID_CAPABILITY_CONTAINER,
  Sw,
  encodeCapabilityContainer,
  encodeResponseApdu,
  interpretT4tCommand,
  multipazCapabilityContainer,
  parseCommandApdu,
  parseNlen,
  responseOk,
  responseStatus,
  type CapabilityContainer,
  type ResponseApdu,
} from '../../../../../src/qa/sim/iso/apdu.js';
import { chunkMessage, BleReassembler } from '../../../../../src/qa/sim/iso/ble-framing.js';
import { CENTRAL_CLIENT_MODE, PERIPHERAL_SERVER_MODE, BLE_STATE_START, BLE_STATE_END } from '../../../../../src/qa/sim/iso/ble-uuids.js';
import { bytesEqual, cborEncode } from '../../../../../src/qa/sim/iso/cbor.js';
import { encodeRawArray, encodeRawMap, rawArrayItems, rawMapEntries, requireRawMapValue } from '../../../../../src/qa/sim/iso/cbor-raw.js';
import { encodeCoseKey, generateP256KeyPair, toEs256Jwk, type P256KeyPair } from '../../../../../src/qa/sim/iso/cose-key.js';
import { decodeDeviceEngagement, deviceEngagementToQr, encodeDeviceEngagement } from '../../../../../src/qa/sim/iso/device-engagement.js';
import { createDeviceMac, readDeviceSigned } from '../../../../../src/qa/sim/iso/device-mac.js';
import {
  LeRole,
  MULTIPAZ_NFC_CARRIER,
  buildHandoverSelect,
  mdocModesToLeRole,
  parseHandoverRequest,
} from '../../../../../src/qa/sim/iso/handover.js';
import { createNodeMdocContext } from '../../../../../src/qa/sim/iso/mdoc-context.js';
import { Tnf, findRecord, parseNdefMessage } from '../../../../../src/qa/sim/iso/ndef.js';
import { SessionEncryption, bleIdent, deriveEMacKey } from '../../../../../src/qa/sim/iso/session-crypto.js';
import { decodeSessionEstablishment, encodeSessionData } from '../../../../../src/qa/sim/iso/session-messages.js';
import { buildSessionTranscript, type Handover, type SessionTranscript } from '../../../../../src/qa/sim/iso/session-transcript.js';
import {
  MULTIPAZ_SERVICE_PARAMETER,
  buildServiceParameterMessage,
  buildTnepStatusMessage,
  parseServiceSelectMessage,
  type ServiceParameter,
} from '../../../../../src/qa/sim/iso/tnep.js';

type CryptoKeyPair = webcrypto.CryptoKeyPair;

export const ctx = createNodeMdocContext();
export const MDL = 'org.iso.18013.5.1.mDL';
export const NS = 'org.iso.18013.5.1';
export const DAY = 86_400_000;
const subtle = webcrypto.subtle;
const EC_PARAMS = { name: 'ECDSA', namedCurve: 'P-256' } as const;
const SIGNING = { name: 'ECDSA', hash: 'SHA-256' } as const;

// ---------------------------------------------------------------------------------------------------------------
// PKI and issuance

export interface Iaca {
  readonly der: Uint8Array;
  readonly keys: CryptoKeyPair;
}

export async function createIaca(name = 'C=US, CN=Test IACA'): Promise<Iaca> {
  const keys = await subtle.generateKey(EC_PARAMS, true, ['sign', 'verify']);
  const cert = await X509CertificateGenerator.createSelfSigned(
    {
      name,
      keys,
      notBefore: new Date(Date.now() - 60 * DAY),
      notAfter: new Date(Date.now() + 365 * DAY),
      signingAlgorithm: SIGNING,
      extensions: [
        new BasicConstraintsExtension(true, 0, true),
        new KeyUsagesExtension(KeyUsageFlags.keyCertSign | KeyUsageFlags.cRLSign, true),
        await SubjectKeyIdentifierExtension.create(keys.publicKey, false, webcrypto),
      ],
    },
    webcrypto,
  );
  return { der: new Uint8Array(cert.rawData), keys };
}

export interface DocumentSigner {
  readonly der: Uint8Array;
  readonly signingKey: CoseKey;
}

export async function createDocumentSigner(iaca: Iaca, issuerName = 'C=US, CN=Test IACA'): Promise<DocumentSigner> {
  const keys = await subtle.generateKey(EC_PARAMS, true, ['sign', 'verify']);
  const cert = await X509CertificateGenerator.create(
    {
      subject: 'C=US, CN=Test Document Signer',
      issuer: issuerName,
      publicKey: keys.publicKey,
      signingKey: iaca.keys.privateKey,
      notBefore: new Date(Date.now() - 30 * DAY),
      notAfter: new Date(Date.now() + 90 * DAY),
      signingAlgorithm: SIGNING,
      extensions: [
        new KeyUsagesExtension(KeyUsageFlags.digitalSignature, true),
        new ExtendedKeyUsageExtension(['1.0.18013.5.1.2'], true), // mdlDS (ISO/IEC 18013-5 Annex B)
        await AuthorityKeyIdentifierExtension.create(iaca.keys.publicKey, false, webcrypto),
        await SubjectKeyIdentifierExtension.create(keys.publicKey, false, webcrypto),
      ],
    },
    webcrypto,
  );
  const jwk = await subtle.exportKey('jwk', keys.privateKey);
  return {
    der: new Uint8Array(cert.rawData),
    signingKey: CoseKey.fromJwk({ kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y, d: jwk.d, alg: 'ES256' }),
  };
}

/** A small portrait: fixed bytes, long enough to spread the response over many BLE chunks. */
export const PORTRAIT = Uint8Array.from({ length: 1500 }, (_, i) => (i * 7 + 3) & 0xff);

export interface Credential {
  readonly issuerSigned: IssuerSigned;
  readonly deviceKey: P256KeyPair;
}

export async function issueMdl(
  signer: DocumentSigner,
  validity: { signed?: Date; validFrom?: Date; validUntil?: Date } = {},
): Promise<Credential> {
  const now = new Date();
  const deviceKey = generateP256KeyPair();
  const issuerSigned = await new Issuer(MDL, ctx)
    .addIssuerNamespace(NS, {
      family_name: 'Doe',
      given_name: 'Jane',
      birth_date: new DateOnly('1990-04-12'),
      issue_date: new DateOnly('2024-01-02'),
      expiry_date: new DateOnly('2034-01-02'),
      issuing_country: 'US',
      issuing_authority: 'Test DMV',
      document_number: 'D1234567',
      portrait: PORTRAIT,
      driving_privileges: [{ vehicle_category_code: 'B', issue_date: new DateOnly('2010-05-06'), expiry_date: new DateOnly('2034-01-02') }],
      age_over_18: true,
      age_over_21: true,
    })
    .sign({
      signingKey: signer.signingKey,
      algorithm: SignatureAlgorithm.ES256,
      digestAlgorithm: 'SHA-256',
      validityInfo: {
        signed: validity.signed ?? now,
        validFrom: validity.validFrom ?? now,
        validUntil: validity.validUntil ?? new Date(now.getTime() + 365 * DAY),
      },
      deviceKeyInfo: { deviceKey: DeviceKey.decode(encodeCoseKey(deviceKey.publicKey)) },
      certificates: [signer.der],
    });
  return { issuerSigned, deviceKey };
}

// ---------------------------------------------------------------------------------------------------------------
// The phone

export type Respond = 'approve' | 'decline' | 'status10' | 'undecryptable' | 'notCbor';

export interface PhoneOptions {
  readonly credential: Credential;
  /** mdoc BLE modes offered. Default both. */
  readonly peripheralServer?: boolean;
  readonly centralClient?: boolean;
  /** Characteristic size the phone chunks with (its MTU − 3). Default 244. */
  readonly chunkSize?: number;
  readonly respond?: Respond;
  readonly auth?: 'signature' | 'mac' | 'wrongMac';
  /**
   * Pass the request to @owf/mdoc's Holder as received (its limitDisclosure answers a missing age_over_NN
   * with the nearest one) instead of narrowing it to the elements held. Default false.
   */
  readonly unnarrowed?: boolean;
  /** Elements disclosed although not requested. */
  readonly extraElements?: readonly string[];
  /** Replaces one byte sequence of the DeviceResponse (same length) before encryption. */
  readonly tamper?: { readonly from: Uint8Array; readonly to: Uint8Array };
  readonly badChunkFlag?: boolean;
  /** Negotiated handover: Tp to offer (default Multipaz's), CC (default Multipaz's writable CC). */
  readonly serviceParameter?: ServiceParameter;
  readonly capabilityContainer?: CapabilityContainer;
}

export interface PhoneEvent {
  readonly char: string;
  readonly data: Uint8Array;
}

export class TestPhone {
  readonly eDevice = generateP256KeyPair();
  readonly uuid = randomUUID();
  readonly options: PhoneOptions;
  handover: Handover = { type: 'qr' };
  deviceEngagement: Uint8Array;
  /** What the phone decrypted: the DeviceRequest bytes. */
  receivedRequest: Uint8Array | undefined;
  /** Whether the Ident read matched HKDF(EDeviceKeyBytes) (central client mode). */
  identOk: boolean | undefined;
  /** State values the reader wrote or notified. */
  readonly stateFromReader: number[] = [];
  private readonly reassembler = new BleReassembler();
  private ndefFile: Uint8Array = new Uint8Array(0);
  private selected: 'none' | 'app' | 'cc' | 'ndef' = 'none';

  constructor(options: PhoneOptions) {
    this.options = options;
    this.deviceEngagement = encodeDeviceEngagement({
      eDeviceKey: this.eDevice.publicKey,
      retrievalMethods: [
        {
          type: 'ble',
          peripheralServerMode: this.peripheralServer,
          centralClientMode: this.centralClient,
          ...(this.peripheralServer ? { peripheralServerModeUuid: this.uuid } : {}),
          ...(this.centralClient ? { centralClientModeUuid: this.uuid } : {}),
        },
      ],
    });
  }

  get peripheralServer(): boolean {
    return this.options.peripheralServer ?? true;
  }

  get centralClient(): boolean {
    return this.options.centralClient ?? true;
  }

  qr(): string {
    return deviceEngagementToQr(this.deviceEngagement);
  }

  // -------------------------------------------------------------- NFC Type 4 Tag

  private cc(mode: 'static' | 'negotiated'): CapabilityContainer {
    return this.options.capabilityContainer ?? multipazCapabilityContainer(mode);
  }

  /** Prepares the NDEF file: the HS (static) or the Tp (negotiated); the DE has no retrieval methods (as in Multipaz's HS). */
  presentNfc(mode: 'static' | 'negotiated'): (command: Uint8Array) => Uint8Array {
    this.deviceEngagement = encodeDeviceEngagement({ eDeviceKey: this.eDevice.publicKey });
    const withNlen = (message: Uint8Array): Uint8Array => Uint8Array.from([message.length >> 8, message.length & 0xff, ...message]);
    const cc = this.cc(mode);
    if (mode === 'static') {
      const hs = buildHandoverSelect({
        deviceEngagement: this.deviceEngagement,
        ble: {
          leRole: mdocModesToLeRole({ peripheralServer: this.peripheralServer, centralClient: this.centralClient }, 'mdoc'),
          uuid: this.uuid,
        },
        nfc: MULTIPAZ_NFC_CARRIER,
      });
      this.handover = { type: 'nfc', handoverSelect: hs, handoverRequest: null };
      this.ndefFile = withNlen(hs);
    } else {
      this.ndefFile = withNlen(buildServiceParameterMessage(this.options.serviceParameter ?? MULTIPAZ_SERVICE_PARAMETER));
    }
    this.selected = 'none';
    return (bytes) => {
      const command = interpretT4tCommand(parseCommandApdu(bytes));
      let response: ResponseApdu;
      switch (command.kind) {
        case 'selectAid':
          this.selected = bytesEqual(command.aid, AID_NDEF_APPLICATION) ? 'app' : 'none';
          response = this.selected === 'app' ? responseOk() : responseStatus(Sw.FILE_NOT_FOUND);
          break;
        case 'selectFile':
          this.selected =
            command.fileId === FILE_ID_CAPABILITY_CONTAINER ? 'cc' : command.fileId === cc.ndefFileId ? 'ndef' : this.selected;
          response = responseOk();
          break;
        case 'readBinary': {
          const file = this.selected === 'cc' ? encodeCapabilityContainer(cc) : this.ndefFile;
          response = responseOk(file.slice(command.offset, command.offset + command.length));
          break;
        }
        case 'updateBinary': {
          const next = new Uint8Array(Math.max(this.ndefFile.length, command.offset + command.data.length));
          next.set(this.ndefFile);
          next.set(command.data, command.offset);
          this.ndefFile = next;
          const nlen = parseNlen(this.ndefFile.subarray(0, 2));
          if (nlen > 0 && this.ndefFile.length >= 2 + nlen) this.ndefFile = withNlen(this.onNdefWritten(this.ndefFile.slice(2, 2 + nlen)));
          response = responseOk();
          break;
        }
        case 'unsupported':
          response = responseStatus(Sw.INS_NOT_SUPPORTED);
          break;
      }
      return encodeResponseApdu(response);
    };
  }

  private onNdefWritten(message: Uint8Array): Uint8Array {
    if (findRecord(parseNdefMessage(message), Tnf.WELL_KNOWN, 'Ts') !== undefined) {
      parseServiceSelectMessage(message);
      return buildTnepStatusMessage(0);
    }
    const hr = parseHandoverRequest(message);
    // Like Multipaz: central client mode when the reader offers it (no UUID: the HR's is used), else peripheral server.
    const central = this.centralClient && hr.ble?.modes.centralClient === true;
    const hs = buildHandoverSelect({
      deviceEngagement: this.deviceEngagement,
      ble: central ? { leRole: LeRole.CENTRAL_ONLY } : { leRole: LeRole.PERIPHERAL_ONLY, uuid: this.uuid },
    });
    this.handover = { type: 'nfc', handoverSelect: hs, handoverRequest: message };
    return hs;
  }

  // -------------------------------------------------------------- BLE

  /**
   * Central client mode: the phone connected to the kiosk's service and read `ident` from the Ident
   * characteristic; it checks it against HKDF(EDeviceKeyBytes) (as Multipaz's `checkReaderIdentMatches()`) and writes State 0x01.
   */
  connectAsClient(ident: Uint8Array): PhoneEvent[] {
    const eDeviceKeyBytes = decodeDeviceEngagement(this.deviceEngagement).eDeviceKeyBytes;
    this.identOk = bytesEqual(ident, bleIdent(eDeviceKeyBytes));
    return [{ char: CENTRAL_CLIENT_MODE.state.uuid, data: Uint8Array.of(BLE_STATE_START) }];
  }

  /** A write on the phone's GATT server (peripheral server mode) or a notification to its client (central client mode). */
  async fromReader(char: string, data: Uint8Array): Promise<PhoneEvent[]> {
    const lower = char.toLowerCase();
    if (lower === PERIPHERAL_SERVER_MODE.state.uuid || lower === CENTRAL_CLIENT_MODE.state.uuid) {
      this.stateFromReader.push(data[0] ?? -1);
      return [];
    }
    const central = lower === CENTRAL_CLIENT_MODE.server2Client.uuid;
    if (!central && lower !== PERIPHERAL_SERVER_MODE.client2Server.uuid) throw new Error(`the reader used ${char}`);
    const message = this.reassembler.push(data);
    if (message === undefined) return [];
    const answer = await this.answer(message);
    const chunks = chunkMessage(answer, this.options.chunkSize ?? 244);
    if (this.options.badChunkFlag === true && chunks[0] !== undefined) chunks[0][0] = 0x05;
    const out = central ? CENTRAL_CLIENT_MODE.client2Server.uuid : PERIPHERAL_SERVER_MODE.server2Client.uuid;
    return chunks.map((chunk) => ({ char: out, data: chunk }));
  }

  get endedByReader(): boolean {
    return this.stateFromReader.includes(BLE_STATE_END);
  }

  private async answer(sessionEstablishment: Uint8Array): Promise<Uint8Array> {
    const se = decodeSessionEstablishment(sessionEstablishment);
    const transcript = buildSessionTranscript({
      deviceEngagement: this.deviceEngagement,
      eReaderKeyBytes: se.eReaderKeyBytes,
      handover: this.handover,
    });
    const encryption = SessionEncryption.forDevice({
      eDevicePrivateKey: this.eDevice.privateKey,
      eReaderPublicKey: se.eReaderKey,
      sessionTranscriptBytes: transcript.taggedBytes,
    });
    this.receivedRequest = encryption.decrypt(se.data);
    switch (this.options.respond ?? 'approve') {
      case 'decline':
        return encodeSessionData({ status: 20 });
      case 'status10':
        return encodeSessionData({ status: 10 });
      case 'undecryptable':
        return encodeSessionData({ data: Uint8Array.from(randomBytes(80)), status: 20 });
      case 'notCbor':
        return Uint8Array.of(0xff, 0x00, 0x13);
      case 'approve':
        break;
    }
    let response = await this.deviceResponse(this.receivedRequest, transcript, se.eReaderKey);
    const tamper = this.options.tamper;
    if (tamper !== undefined) response = replaceOnce(response, tamper.from, tamper.to);
    // Multipaz sends the DeviceResponse together with status 20 (`mdocPresentment.kt`).
    return encodeSessionData({ data: encryption.encrypt(response), status: 20 });
  }

  private async deviceResponse(
    requestBytes: Uint8Array,
    transcript: SessionTranscript,
    eReaderKey: ReturnType<typeof decodeSessionEstablishment>['eReaderKey'],
  ): Promise<Uint8Array> {
    const request = DeviceRequest.decode(requestBytes);
    const { issuerSigned, deviceKey } = this.options.credential;
    const held = new Set((issuerSigned.getIssuerNamespace(NS) ?? []).map((item) => item.elementIdentifier));
    // A wallet discloses what it holds of the request (Holder throws on elements it lacks), plus test extras.
    const namespaces: Record<string, Record<string, boolean>> = {};
    for (const docRequest of request.docRequests) {
      for (const [namespace, elements] of docRequest.itemsRequest.namespaces) {
        for (const [element] of elements) {
          if (this.options.unnarrowed === true || (namespace === NS && held.has(element))) (namespaces[namespace] ??= {})[element] = false;
        }
      }
    }
    for (const extra of this.options.extraElements ?? []) (namespaces[NS] ??= {})[extra] = false;
    const narrowed = DeviceRequest.create({
      docRequests: [DocRequest.create({ itemsRequest: ItemsRequest.create({ docType: MDL, namespaces }) })],
    });
    const response = await Holder.createDeviceResponseForDeviceRequest(
      {
        deviceRequest: narrowed,
        sessionTranscript: transcript.taggedBytes,
        issuerSigned: [issuerSigned],
        signature: { signingKey: CoseKey.fromJwk(toEs256Jwk(deviceKey.privateKey)) },
      },
      ctx,
    );
    const bytes = response.encode();
    const auth = this.options.auth ?? 'signature';
    if (auth === 'signature') return bytes;
    // deviceMac with the toolkit (ISO/IEC 18013-5 §9.1.3.5); @owf/mdoc 0.6.0 writes a wrong Mac0 header.
    const eMacKey = deriveEMacKey({
      privateKey: deviceKey.privateKey,
      publicKey: eReaderKey,
      sessionTranscriptBytes: transcript.taggedBytes,
    });
    if (auth === 'wrongMac') eMacKey[0] = (eMacKey[0] ?? 0) ^ 0x01;
    const [document] = readDeviceSigned(bytes);
    if (document === undefined) throw new Error('no document');
    const mac = createDeviceMac({
      sessionTranscript: transcript.bytes,
      docType: MDL,
      deviceNameSpacesBytes: document.deviceNameSpacesBytes,
      eMacKey,
    });
    return replaceDeviceAuth(bytes, encodeRawMap([[cborEncode('deviceMac'), mac]]));
  }
}

function replaceEntry(map: Uint8Array, key: string, value: Uint8Array): Uint8Array {
  return encodeRawMap(rawMapEntries(map).map((entry) => [entry.rawKey, entry.key === key ? value : entry.rawValue] as const));
}

/** The response with the first document's deviceAuth replaced, everything else byte-identical. */
function replaceDeviceAuth(response: Uint8Array, deviceAuth: Uint8Array): Uint8Array {
  const [document, ...others] = rawArrayItems(requireRawMapValue(response, 'documents', 'DeviceResponse'));
  if (document === undefined) throw new Error('no document');
  const deviceSigned = replaceEntry(requireRawMapValue(document, 'deviceSigned', 'Document'), 'deviceAuth', deviceAuth);
  return replaceEntry(response, 'documents', encodeRawArray([replaceEntry(document, 'deviceSigned', deviceSigned), ...others]));
}

/** Replaces the single occurrence of `from` by `to` (same length). */
export function replaceOnce(bytes: Uint8Array, from: Uint8Array, to: Uint8Array): Uint8Array {
  const haystack = Buffer.from(bytes);
  const at = haystack.indexOf(Buffer.from(from));
  if (at < 0 || haystack.indexOf(Buffer.from(from), at + 1) >= 0 || from.length !== to.length)
    throw new Error('replaceOnce: pattern must occur exactly once');
  const out = Uint8Array.from(bytes);
  out.set(to, at);
  return out;
}
