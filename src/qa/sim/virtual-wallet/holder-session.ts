/**
 * The holder side of one ISO 18013-5 session (ISO/IEC 18013-5 §9.1.1 session establishment and encryption):
 *
 *   SessionEstablishment {eReaderKey, data}      → EReaderKeyBytes kept exactly as received (18013-5 §9.1.1)
 *   SessionTranscript [DE, EReaderKeyBytes, Handover]   Handover: QR null, NFC static [HS, null],
 *                                                 negotiated [HS, HR] (18013-5 §9.1.5.1), from the raw bytes
 *   SKReader/SKDevice (SessionEncryption.forDevice)      decrypt DeviceRequest with IV(0, 1) (18013-5 §9.1.1)
 *   DeviceResponse limited to the requested elements (@owf/mdoc Holder), device authentication (18013-5 §9.1.3):
 *     - signature: COSE_Sign1 ES256 with SDeviceKey over DeviceAuthenticationBytes (18013-5 §9.1.3.6)
 *     - mac:       COSE_Mac0 HMAC-256/256 with EMacKey = HKDF(ECDH(SDeviceKey, EReaderKey), …) built by
 *                  the toolkit's createDeviceMac (@owf/mdoc 0.6.0's own deviceMac check rejects every MAC)
 *   SessionData {data: AES-GCM(SKDevice, IV(1, 1), DeviceResponse), status: 20}   as Multipaz's
 *                                                 `mdocPresentment.kt` sends it
 *
 * Errors: a SessionEstablishment or DeviceRequest that is not valid CBOR → SessionData {status: 11};
 * data that do not decrypt → {status: 10} (as Multipaz answers). Declining → {status: 20} without data: the
 * session ends without a response (status 20 is session termination; the mock backend reports it as
 * "declined").
 *
 * A credential marked `tamperAtAnswer` (the phone's "tampered" behaviour) has one disclosed element
 * altered in the IssuerSigned of the finished DeviceResponse: the first requested element it discloses, a
 * non-portrait one if there is any, else the portrait. So the reader always sees a digest that fails,
 * whatever profile it uses. It is done after @owf/mdoc built the response, not before: the toolkit answers
 * an age_over_NN request with the nearest true statement (ISO/IEC 18013-5 §7.2.5), so a flipped age_over_21
 * would simply not be sent (age_over_25 would). Device authentication covers DeviceNameSpaces, not IssuerSigned, so it
 * stays valid: only the altered element's digest fails.
 *
 * Requests for elements the credential lacks, or for other document types, are filtered out before
 * @owf/mdoc builds the response (it throws on a missing element); a request left with nothing for the
 * mDL gets a DeviceResponse with `documentErrors` {docType: 0} per requested document type, status 0.
 */
import type { KeyObject } from 'node:crypto';
import { CoseKey, DeviceRequest, DocRequest, Holder, ItemsRequest, type MdocContext } from '@owf/mdoc';
import { CborError, EmbeddedCbor, cborDecode, cborEncode, expectArray, expectMap, expectText, isCborMap } from '../iso/cbor.js';
import { encodeRawArray, encodeRawMap, rawArrayItems, rawMapEntries, rawTag24Content } from '../iso/cbor-raw.js';
import { toEs256Jwk } from '../iso/cose-key.js';
import { createDeviceMac } from '../iso/device-mac.js';
import { createNodeMdocContext } from '../iso/mdoc-context.js';
import { SessionCryptoError, SessionEncryption, deriveEMacKey } from '../iso/session-crypto.js';
import {
  SESSION_STATUS,
  decodeSessionData,
  decodeSessionEstablishment,
  encodeSessionData,
  type DecodedSessionEstablishment,
} from '../iso/session-messages.js';
import { buildSessionTranscript, type Handover, type SessionTranscript } from '../iso/session-transcript.js';
import { tamperIssuerSignedBytes, type TestCredential } from './credential.js';
import { errorText } from '../../../common/error-text.js';

export type DeviceAuthMethod = 'signature' | 'mac';

/** Element identifiers per namespace. */
export type ElementsByNamespace = Readonly<Record<string, readonly string[]>>;

export interface RequestedDocument {
  readonly docType: string;
  readonly namespaces: ElementsByNamespace;
  /** Whether the request carried readerAuth (not verified: the kiosk flow has none). */
  readonly readerAuth: boolean;
}

export class HolderProtocolError extends Error {
  override readonly name = 'HolderProtocolError';
  constructor(
    readonly status: 10 | 11,
    message: string,
  ) {
    super(message);
  }
}

export interface OpenedSession {
  readonly establishment: DecodedSessionEstablishment;
  readonly transcript: SessionTranscript;
  readonly encryption: SessionEncryption;
  /** The decrypted DeviceRequest bytes. */
  readonly deviceRequest: Uint8Array;
}

/**
 * Decodes a SessionEstablishment, builds the SessionTranscript with its raw EReaderKeyBytes, derives the
 * session keys and decrypts the DeviceRequest. Throws HolderProtocolError (status 11 / 10).
 */
export function openSessionEstablishment(input: {
  readonly message: Uint8Array;
  readonly eDevicePrivateKey: KeyObject;
  /** DeviceEngagement bytes exactly as sent (QR payload or HS record payload). */
  readonly deviceEngagement: Uint8Array;
  readonly handover: Handover;
}): OpenedSession {
  let establishment: DecodedSessionEstablishment;
  try {
    establishment = decodeSessionEstablishment(input.message);
  } catch (error) {
    throw new HolderProtocolError(SESSION_STATUS.cborDecodingError, `SessionEstablishment is not decodable: ${errorText(error)}`);
  }
  const transcript = buildSessionTranscript({
    deviceEngagement: input.deviceEngagement,
    eReaderKeyBytes: establishment.eReaderKeyBytes,
    handover: input.handover,
  });
  let encryption: SessionEncryption;
  try {
    encryption = SessionEncryption.forDevice({
      eDevicePrivateKey: input.eDevicePrivateKey,
      eReaderPublicKey: establishment.eReaderKey,
      sessionTranscriptBytes: transcript.taggedBytes,
    });
  } catch (error) {
    throw new HolderProtocolError(SESSION_STATUS.sessionEncryptionError, `no session key agreement: ${errorText(error)}`);
  }
  let deviceRequest: Uint8Array;
  try {
    deviceRequest = encryption.decrypt(establishment.data);
  } catch (error) {
    if (error instanceof SessionCryptoError) throw new HolderProtocolError(SESSION_STATUS.sessionEncryptionError, error.message);
    throw error;
  }
  return { establishment, transcript, encryption, deviceRequest };
}

/** The documents and elements a DeviceRequest asks for (read with our CBOR; throws CborError). */
export function summarizeDeviceRequest(deviceRequest: Uint8Array): RequestedDocument[] {
  const map = expectMap(cborDecode(deviceRequest), 'DeviceRequest');
  return expectArray(map.get('docRequests'), 'DeviceRequest docRequests').map((entry) => {
    const docRequest = expectMap(entry, 'DocRequest');
    const itemsRequestBytes = docRequest.get('itemsRequest');
    if (!(itemsRequestBytes instanceof EmbeddedCbor)) throw new CborError('DocRequest itemsRequest: expected tag 24');
    const itemsRequest = expectMap(itemsRequestBytes.decode(), 'ItemsRequest');
    const namespaces: Record<string, string[]> = {};
    for (const [namespace, elements] of expectMap(itemsRequest.get('nameSpaces'), 'ItemsRequest nameSpaces')) {
      namespaces[expectText(namespace, 'namespace')] = [...expectMap(elements, 'DataElements').keys()].map((element) =>
        expectText(element, 'element identifier'),
      );
    }
    return {
      docType: expectText(itemsRequest.get('docType'), 'ItemsRequest docType'),
      namespaces,
      readerAuth: docRequest.has('readerAuth'),
    };
  });
}

/** The issuer-signed element identifiers of each document of a DeviceResponse. */
export function disclosedElements(deviceResponse: Uint8Array): { readonly docType: string; readonly namespaces: ElementsByNamespace }[] {
  const map = expectMap(cborDecode(deviceResponse), 'DeviceResponse');
  const documents = map.get('documents');
  if (documents === undefined) return [];
  return expectArray(documents, 'documents').map((entry) => {
    const document = expectMap(entry, 'Document');
    const issuerSigned = expectMap(document.get('issuerSigned'), 'IssuerSigned');
    const namespaces: Record<string, string[]> = {};
    const nameSpaces = issuerSigned.get('nameSpaces');
    if (isCborMap(nameSpaces)) {
      for (const [namespace, items] of nameSpaces) {
        namespaces[expectText(namespace, 'namespace')] = expectArray(items, 'IssuerSignedItems').map((item) => {
          if (!(item instanceof EmbeddedCbor)) throw new CborError('IssuerSignedItemBytes: expected tag 24');
          return expectText(expectMap(item.decode(), 'IssuerSignedItem').get('elementIdentifier'), 'elementIdentifier');
        });
      }
    }
    return { docType: expectText(document.get('docType'), 'docType'), namespaces };
  });
}

/**
 * Replaces `deviceSigned.deviceAuth` of every document by `{"deviceMac": COSE_Mac0}` over the document's
 * DeviceNameSpacesBytes as they stand in the response; every other byte is spliced through unchanged.
 */
export function withDeviceMac(deviceResponse: Uint8Array, transcript: SessionTranscript, eMacKey: Uint8Array): Uint8Array {
  const entries = rawMapEntries(deviceResponse).map((entry): [Uint8Array, Uint8Array] => {
    if (entry.key !== 'documents') return [entry.rawKey, entry.rawValue];
    const documents = rawArrayItems(entry.rawValue).map((document) => {
      const fields = rawMapEntries(document);
      const docType = expectText(cborDecode(fields.find((f) => f.key === 'docType')?.rawValue ?? Uint8Array.of(0xf6)), 'docType');
      return encodeRawMap(
        fields.map((field): [Uint8Array, Uint8Array] => {
          if (field.key !== 'deviceSigned') return [field.rawKey, field.rawValue];
          const signed = rawMapEntries(field.rawValue);
          const nameSpaces = signed.find((f) => f.key === 'nameSpaces');
          if (nameSpaces === undefined) throw new CborError('DeviceSigned without nameSpaces');
          rawTag24Content(nameSpaces.rawValue); // DeviceNameSpacesBytes must be tag 24
          const mac = createDeviceMac({
            sessionTranscript: transcript.bytes,
            docType,
            deviceNameSpacesBytes: nameSpaces.rawValue,
            eMacKey,
          });
          const deviceAuth = encodeRawMap([[cborEncode('deviceMac'), mac]]);
          return [
            field.rawKey,
            encodeRawMap([
              [nameSpaces.rawKey, nameSpaces.rawValue],
              [cborEncode('deviceAuth'), deviceAuth],
            ]),
          ];
        }),
      );
    });
    return [entry.rawKey, encodeRawArray(documents)];
  });
  return encodeRawMap(entries);
}

/** Keeps the requested elements the credential holds; other document types are dropped. */
function answerableRequest(
  requested: readonly RequestedDocument[],
  credential: TestCredential,
): { docType: string; namespaces: Record<string, string[]> } | undefined {
  const mine = requested.filter((document) => document.docType === credential.docType);
  if (mine.length === 0) return undefined;
  const namespaces: Record<string, string[]> = {};
  for (const document of mine) {
    for (const [namespace, elements] of Object.entries(document.namespaces)) {
      const held = credential.elements.get(namespace);
      if (held === undefined) continue;
      const keep = elements.filter((element) => held.includes(element));
      if (keep.length > 0) namespaces[namespace] = [...new Set([...(namespaces[namespace] ?? []), ...keep])];
    }
  }
  return Object.keys(namespaces).length === 0 ? undefined : { docType: credential.docType, namespaces };
}

/** Element kept for last when choosing what to tamper: a changed portrait is the least visible change. */
const PORTRAIT = 'portrait';

/**
 * The element a `tamperAtAnswer` credential alters: among the `disclosed` elements, the first one in the
 * request's order that is not the portrait, then any other disclosed non-portrait one (an age_over_NN
 * substitute), then the portrait; undefined when nothing is disclosed.
 */
export function tamperTarget(
  requested: readonly RequestedDocument[],
  disclosed: ElementsByNamespace,
): { readonly namespace: string; readonly element: string } | undefined {
  const isDisclosed = (namespace: string, element: string): boolean => disclosed[namespace]?.includes(element) === true;
  const inRequestOrder = requested.flatMap((document) =>
    Object.entries(document.namespaces).flatMap(([namespace, elements]) => elements.map((element) => ({ namespace, element }))),
  );
  const inResponseOrder = Object.entries(disclosed).flatMap(([namespace, elements]) => elements.map((element) => ({ namespace, element })));
  const candidates = [...inRequestOrder.filter((item) => isDisclosed(item.namespace, item.element)), ...inResponseOrder];
  return candidates.find((item) => item.element !== PORTRAIT) ?? candidates[0];
}

/** The DeviceResponse with `namespace/element` altered in every document's IssuerSigned (all else spliced through). */
export function tamperDeviceResponse(deviceResponse: Uint8Array, namespace: string, element: string): Uint8Array {
  const entries = rawMapEntries(deviceResponse).map((entry): [Uint8Array, Uint8Array] => {
    if (entry.key !== 'documents') return [entry.rawKey, entry.rawValue];
    const documents = rawArrayItems(entry.rawValue).map((document) =>
      encodeRawMap(
        rawMapEntries(document).map((field): [Uint8Array, Uint8Array] =>
          field.key === 'issuerSigned'
            ? [field.rawKey, tamperIssuerSignedBytes(field.rawValue, namespace, element)]
            : [field.rawKey, field.rawValue],
        ),
      ),
    );
    return [entry.rawKey, encodeRawArray(documents)];
  });
  return encodeRawMap(entries);
}

function disclosedByNamespace(deviceResponse: Uint8Array): Record<string, string[]> {
  const shared: Record<string, string[]> = {};
  for (const document of disclosedElements(deviceResponse)) {
    for (const [namespace, elements] of Object.entries(document.namespaces))
      shared[namespace] = [...(shared[namespace] ?? []), ...elements];
  }
  return shared;
}

/** DeviceResponse without documents: one documentErrors entry per requested document type (code 0). */
function documentErrorsResponse(requested: readonly RequestedDocument[]): Uint8Array {
  const docTypes = [...new Set(requested.map((document) => document.docType))];
  return cborEncode(
    new Map<string, unknown>([
      ['version', '1.0'],
      ...(docTypes.length > 0 ? [['documentErrors', docTypes.map((docType) => new Map([[docType, 0]]))] as [string, unknown]] : []),
      ['status', 0],
    ]),
  );
}

export interface BuildResponseInput {
  readonly credential: TestCredential;
  readonly requested: readonly RequestedDocument[];
  readonly transcript: SessionTranscript;
  readonly eReaderKey: KeyObject;
  readonly deviceAuth: DeviceAuthMethod;
  readonly context?: MdocContext;
}

/** The DeviceResponse bytes answering `requested` with the credential (see the module comment). */
export async function buildDeviceResponse(input: BuildResponseInput): Promise<Uint8Array> {
  const { credential } = input;
  const answerable = answerableRequest(input.requested, credential);
  if (answerable === undefined) return documentErrorsResponse(input.requested);
  const deviceRequest = DeviceRequest.create({
    docRequests: [
      DocRequest.create({
        itemsRequest: ItemsRequest.create({
          docType: answerable.docType,
          namespaces: Object.fromEntries(
            Object.entries(answerable.namespaces).map(([namespace, elements]) => [
              namespace,
              Object.fromEntries(elements.map((element) => [element, false])),
            ]),
          ),
        }),
      }),
    ],
  });
  const response = await Holder.createDeviceResponseForDeviceRequest(
    {
      deviceRequest,
      sessionTranscript: input.transcript.taggedBytes,
      issuerSigned: [credential.issuerSigned],
      // ES256 on the key, so the protected header is {1: -7} (without it @owf/mdoc 0.6.0 writes {1: null}).
      signature: { signingKey: CoseKey.fromJwk(toEs256Jwk(credential.deviceKey.privateKey)) },
    },
    input.context ?? createNodeMdocContext(),
  );
  let bytes = response.encode();
  const target = credential.tamperAtAnswer ? tamperTarget(input.requested, disclosedByNamespace(bytes)) : undefined;
  if (target !== undefined) bytes = tamperDeviceResponse(bytes, target.namespace, target.element);
  if (input.deviceAuth === 'signature') return bytes;
  const eMacKey = deriveEMacKey({
    privateKey: credential.deviceKey.privateKey,
    publicKey: input.eReaderKey,
    sessionTranscriptBytes: input.transcript.taggedBytes,
  });
  return withDeviceMac(bytes, input.transcript, eMacKey);
}

/** What the holder decided about a request (after any consent delay). */
export type ConsentDecision = 'approve' | 'decline';

export type HolderResult =
  | {
      readonly kind: 'responded';
      readonly requested: readonly RequestedDocument[];
      readonly shared: ElementsByNamespace;
      readonly deviceAuth: DeviceAuthMethod;
      /** The element altered in this answer (a `tamperAtAnswer` credential), if any. */
      readonly tampered?: { readonly namespace: string; readonly element: string };
    }
  | { readonly kind: 'declined'; readonly requested: readonly RequestedDocument[] }
  | { readonly kind: 'error'; readonly status: 10 | 11; readonly detail: string }
  /** The reader ended the session (SessionData status 20) before its request was answered. */
  | { readonly kind: 'terminated'; readonly status: number | undefined };

export interface HolderReply {
  /** SessionData to send to the reader, if any. */
  readonly message: Uint8Array | undefined;
  /** Set once the session is over from the holder's side. */
  readonly result: HolderResult | undefined;
}

export interface HolderSessionOptions {
  readonly eDevicePrivateKey: KeyObject;
  readonly deviceEngagement: Uint8Array;
  /** The handover in force when the SessionEstablishment arrives (NFC: the latest complete one). */
  readonly handover: () => Handover;
  readonly credential: TestCredential;
  readonly deviceAuth: DeviceAuthMethod;
  /** Asked once per request; may wait (consent delay). */
  readonly consent: (requested: readonly RequestedDocument[]) => Promise<ConsentDecision>;
  readonly context?: MdocContext;
}

/**
 * One holder session: feed it each whole message from the reader, send what it returns. The first message
 * must be the SessionEstablishment; after the reply with status 20 (or an error status) the session is over
 * and later messages are ignored.
 */
export class HolderSession {
  readonly #options: HolderSessionOptions;
  #opened: OpenedSession | undefined;
  #over = false;

  constructor(options: HolderSessionOptions) {
    this.#options = options;
  }

  get over(): boolean {
    return this.#over;
  }

  /** The transcript of the established session (after the first message). */
  get transcript(): SessionTranscript | undefined {
    return this.#opened?.transcript;
  }

  async onMessage(message: Uint8Array): Promise<HolderReply> {
    if (this.#over) return { message: undefined, result: undefined };
    if (this.#opened === undefined) return this.#onEstablishment(message);
    return this.#onSessionData(message);
  }

  async #onEstablishment(message: Uint8Array): Promise<HolderReply> {
    let opened: OpenedSession;
    try {
      opened = openSessionEstablishment({
        message,
        eDevicePrivateKey: this.#options.eDevicePrivateKey,
        deviceEngagement: this.#options.deviceEngagement,
        handover: this.#options.handover(),
      });
    } catch (error) {
      if (error instanceof HolderProtocolError) return this.#fail(error.status, error.message);
      throw error;
    }
    this.#opened = opened;
    let requested: RequestedDocument[];
    try {
      requested = summarizeDeviceRequest(opened.deviceRequest);
      DeviceRequest.decode(opened.deviceRequest); // what @owf/mdoc would refuse, we refuse too
    } catch (error) {
      return this.#fail(SESSION_STATUS.cborDecodingError, `DeviceRequest is not decodable: ${errorText(error)}`);
    }
    const decision = await this.#options.consent(requested);
    if (this.#over) return { message: undefined, result: undefined };
    this.#over = true;
    if (decision === 'decline') {
      return { message: encodeSessionData({ status: SESSION_STATUS.sessionTermination }), result: { kind: 'declined', requested } };
    }
    const deviceResponse = await buildDeviceResponse({
      credential: this.#options.credential,
      requested,
      transcript: opened.transcript,
      eReaderKey: opened.establishment.eReaderKey,
      deviceAuth: this.#options.deviceAuth,
      ...(this.#options.context === undefined ? {} : { context: this.#options.context }),
    });
    const shared = disclosedByNamespace(deviceResponse);
    const credential = this.#options.credential;
    const tampered = credential.tamperAtAnswer ? tamperTarget(requested, shared) : credential.tampered;
    return {
      message: encodeSessionData({ data: opened.encryption.encrypt(deviceResponse), status: SESSION_STATUS.sessionTermination }),
      result: {
        kind: 'responded',
        requested,
        shared,
        deviceAuth: this.#options.deviceAuth,
        ...(tampered === undefined ? {} : { tampered }),
      },
    };
  }

  #onSessionData(message: Uint8Array): HolderReply {
    // Only reachable while consent is pending: the reader may end the session (status 20) meanwhile.
    try {
      const data = decodeSessionData(message);
      if (data.status !== undefined) {
        this.#over = true;
        return { message: undefined, result: { kind: 'terminated', status: data.status } };
      }
    } catch {
      // not a SessionData: ignored while we are busy with the request
    }
    return { message: undefined, result: undefined };
  }

  /** Ends the session from outside (transport gone, phone stopped): later messages are ignored. */
  close(): void {
    this.#over = true;
  }

  #fail(status: 10 | 11, detail: string): HolderReply {
    this.#over = true;
    return { message: encodeSessionData({ status }), result: { kind: 'error', status, detail } };
  }
}
