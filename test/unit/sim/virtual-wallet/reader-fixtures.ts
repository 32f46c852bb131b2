/**
 * An ISO 18013-5 reader for tests of the virtual phone, written only with the toolkit (src/qa/sim/iso) and the
 * virtual radio: NFC engagement (static and negotiated, polling NLEN 0), the session (EReaderKey,
 * SessionTranscript, DeviceRequest, SessionEstablishment), both BLE roles with chunking, and verification
 * of the DeviceResponse (@owf/mdoc Verifier for the issuer side, the toolkit for device auth).
 */
import 'reflect-metadata';
import type { KeyObject } from 'node:crypto';
import { Verifier, type VerificationAssessment } from '@owf/mdoc';
import {
  AID_NDEF_APPLICATION,
  FILE_ID_CAPABILITY_CONTAINER,
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
  type CommandApdu,
} from '../../../../src/qa/sim/iso/apdu.js';
import { BleReassembler, chunkMessage } from '../../../../src/qa/sim/iso/ble-framing.js';
import { BLE_STATE_END, BLE_STATE_START, CENTRAL_CLIENT_MODE, PERIPHERAL_SERVER_MODE } from '../../../../src/qa/sim/iso/ble-uuids.js';
import { EmbeddedCbor, cborEncode } from '../../../../src/qa/sim/iso/cbor.js';
import { encodeCoseKeyBytes, generateP256KeyPair, type P256KeyPair } from '../../../../src/qa/sim/iso/cose-key.js';
import {
  decodeDeviceEngagement,
  deviceEngagementFromQr,
  type DecodedDeviceEngagement,
} from '../../../../src/qa/sim/iso/device-engagement.js';
import { readDeviceSigned, verifyDeviceMac } from '../../../../src/qa/sim/iso/device-mac.js';
import { LeRole, MULTIPAZ_NFC_CARRIER, buildHandoverRequest, parseHandoverSelect } from '../../../../src/qa/sim/iso/handover.js';
import { createNodeMdocContext } from '../../../../src/qa/sim/iso/mdoc-context.js';
import { parseNdefMessage } from '../../../../src/qa/sim/iso/ndef.js';
import { SessionEncryption, bleIdent, deriveEMacKey } from '../../../../src/qa/sim/iso/session-crypto.js';
import { decodeSessionData, encodeSessionEstablishment, type SessionData } from '../../../../src/qa/sim/iso/session-messages.js';
import { buildSessionTranscript, type Handover, type SessionTranscript } from '../../../../src/qa/sim/iso/session-transcript.js';
import { buildServiceSelectMessage, findServiceParameter, parseTnepStatusMessage } from '../../../../src/qa/sim/iso/tnep.js';
import {
  sameUuid,
  type DisconnectInfo,
  type RadioDevice,
  type RadioLink,
  type ServerConnection,
  type VirtualRadio,
} from '../../../../src/qa/sim/radio/virtual-radio.js';
import type { VirtualNfcTag } from '../../../../src/qa/sim/virtual-wallet/index.js';

export const MDL = 'org.iso.18013.5.1.mDL';
export const NS = 'org.iso.18013.5.1';
export const ctx = createNodeMdocContext();

/** Lets the radio deliver what is queued. */
export async function turns(n = 1): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

export async function until(predicate: () => boolean, timeoutMs = 3_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise<void>((resolve) => setTimeout(resolve, 1));
  }
}

export function encodeRequest(elements: Readonly<Record<string, readonly string[]>>, docType = MDL): Uint8Array {
  const nameSpaces = new Map(Object.entries(elements).map(([ns, list]) => [ns, new Map(list.map((e) => [e, false]))]));
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

// ---------------------------------------------------------------- NFC engagement

export interface NfcEngagement {
  readonly kind: 'static' | 'negotiated';
  readonly handoverSelect: Uint8Array;
  readonly handoverRequest: Uint8Array | null;
  readonly deviceEngagement: Uint8Array;
  readonly commands: number;
}

/** A reader's NFC handover as isomdl's and Multipaz's readers run it, against a tag (no waits); HR offers both modes with `hrUuid`. */
export function nfcEngage(tag: VirtualNfcTag, hrUuid: string): NfcEngagement {
  let commands = 0;
  const send = (command: CommandApdu): Uint8Array => {
    commands++;
    const response = parseResponseApdu(tag.processApdu(encodeCommandApdu(command)));
    if (response.sw !== 0x9000) throw new Error(`APDU ${commands} failed with ${response.sw.toString(16)}`);
    return response.data;
  };
  send(selectAid(AID_NDEF_APPLICATION));
  send(selectFile(FILE_ID_CAPABILITY_CONTAINER));
  const cc = parseCapabilityContainer(send(readBinary(0, 15)));
  send(selectFile(cc.ndefFileId));
  const readMessage = (): Uint8Array => {
    let nlen = 0;
    for (let polls = 0; nlen === 0; polls++) {
      if (polls > 20) throw new Error('NLEN stays 0');
      nlen = parseNlen(send(readBinary(0, 2)));
    }
    const parts: number[] = [];
    for (const command of ndefReadCommands(nlen, readChunkSize(cc))) parts.push(...send(command));
    return Uint8Array.from(parts);
  };
  const initial = readMessage();
  const deOf = (hs: Uint8Array): Uint8Array => parseHandoverSelect(hs).deviceEngagement;
  if (findServiceParameter(parseNdefMessage(initial)) === undefined) {
    return { kind: 'static', handoverSelect: initial, handoverRequest: null, deviceEngagement: deOf(initial), commands };
  }
  for (const command of ndefWriteCommands(buildServiceSelectMessage())) send(command);
  if (parseTnepStatusMessage(readMessage()) !== 0) throw new Error('TNEP status not 00');
  const hr = buildHandoverRequest({ ble: { leRole: LeRole.BOTH_CENTRAL_PREFERRED, uuid: hrUuid }, nfc: MULTIPAZ_NFC_CARRIER });
  for (const command of ndefWriteCommands(hr)) send(command);
  const hs = readMessage();
  return { kind: 'negotiated', handoverSelect: hs, handoverRequest: hr, deviceEngagement: deOf(hs), commands };
}

// ---------------------------------------------------------------- session

export class TestReader {
  readonly eReader: P256KeyPair = generateP256KeyPair();
  readonly de: DecodedDeviceEngagement;
  readonly transcript: SessionTranscript;
  readonly encryption: SessionEncryption;
  readonly sessionEstablishment: Uint8Array;
  readonly ident: Uint8Array;

  constructor(
    deviceEngagement: Uint8Array,
    readonly handover: Handover,
    readonly requested: Readonly<Record<string, readonly string[]>>,
    options: { readonly corruptData?: boolean; readonly rawDeviceRequest?: Uint8Array } = {},
  ) {
    this.de = decodeDeviceEngagement(deviceEngagement);
    const eReaderKeyBytes = encodeCoseKeyBytes(this.eReader.publicKey);
    this.transcript = buildSessionTranscript({ deviceEngagement: this.de.bytes, eReaderKeyBytes, handover });
    this.encryption = SessionEncryption.forReader({
      eReaderPrivateKey: this.eReader.privateKey,
      eDevicePublicKey: this.de.eDeviceKey,
      sessionTranscriptBytes: this.transcript.taggedBytes,
    });
    const data = this.encryption.encrypt(options.rawDeviceRequest ?? encodeRequest(requested));
    if (options.corruptData === true) data[0] = (data[0] ?? 0) ^ 0xff;
    this.sessionEstablishment = encodeSessionEstablishment({ eReaderKeyBytes, data });
    this.ident = bleIdent(this.de.eDeviceKeyBytes);
  }

  static fromQr(qr: string, requested: Readonly<Record<string, readonly string[]>>): TestReader {
    return new TestReader(deviceEngagementFromQr(qr), { type: 'qr' }, requested);
  }

  static fromNfc(engagement: NfcEngagement, requested: Readonly<Record<string, readonly string[]>>): TestReader {
    return new TestReader(
      engagement.deviceEngagement,
      { type: 'nfc', handoverSelect: engagement.handoverSelect, handoverRequest: engagement.handoverRequest },
      requested,
    );
  }

  /** SessionData from the phone → status and the decrypted DeviceResponse. */
  open(message: Uint8Array): { readonly sessionData: SessionData; readonly deviceResponse: Uint8Array | undefined } {
    const sessionData = decodeSessionData(message);
    return { sessionData, deviceResponse: sessionData.data === undefined ? undefined : this.encryption.decrypt(sessionData.data) };
  }

  /** @owf/mdoc issuer checks plus the device check (signature via @owf/mdoc, MAC via the toolkit). */
  async verify(
    deviceResponse: Uint8Array,
    trusted: readonly Uint8Array[],
    sDevicePublicKey: KeyObject,
  ): Promise<{ failed: string[]; checks: VerificationAssessment[]; device: 'signature' | 'mac'; deviceValid: boolean }> {
    const checks: VerificationAssessment[] = [];
    await Verifier.verifyDeviceResponse(
      { deviceResponse, sessionTranscript: this.transcript.taggedBytes, trustedCertificates: [...trusted], onCheck: (c) => checks.push(c) },
      ctx,
    );
    const [document] = readDeviceSigned(deviceResponse);
    if (document === undefined) throw new Error('no document');
    if (document.deviceMac !== undefined) {
      const eMacKey = deriveEMacKey({
        privateKey: this.eReader.privateKey,
        publicKey: sDevicePublicKey,
        sessionTranscriptBytes: this.transcript.taggedBytes,
      });
      const verdict = verifyDeviceMac({
        sessionTranscript: this.transcript.bytes,
        docType: document.docType,
        deviceNameSpacesBytes: document.deviceNameSpacesBytes,
        eMacKey,
        deviceMac: document.deviceMac,
      });
      // @owf/mdoc 0.6.0's `DeviceAuth.verify` fails every deviceMac: judge it with the toolkit only.
      return {
        failed: checks.filter((c) => c.status === 'FAILED' && c.category !== 'DEVICE_AUTH').map((c) => c.check),
        checks,
        device: 'mac',
        deviceValid: verdict.valid,
      };
    }
    const deviceValid = checks.some((c) => c.check === 'Device signature must be valid' && c.status === 'PASSED');
    return { failed: checks.filter((c) => c.status === 'FAILED').map((c) => c.check), checks, device: 'signature', deviceValid };
  }
}

// ---------------------------------------------------------------- BLE: reader as central (mdoc peripheral server mode)

export interface ReaderTransfer {
  /** The phone's chunks as received. */
  readonly chunks: Uint8Array[];
  /** Whole messages from the phone. */
  readonly messages: Uint8Array[];
  readonly disconnects: DisconnectInfo[];
  /** Sends the SessionEstablishment (or any message) in chunks of `chunkSize`. */
  send(message: Uint8Array): Promise<void>;
  /** State 0x02. */
  end(): Promise<void>;
  close(): Promise<void>;
}

export async function readerCentral(
  device: RadioDevice,
  serviceUuid: string,
  options: { readonly chunkSize?: number; readonly skipStart?: boolean } = {},
): Promise<ReaderTransfer & { readonly link: RadioLink }> {
  const report = await device.central.scanFor(serviceUuid, { signal: AbortSignal.timeout(3_000) });
  const link = await device.central.connect(report.peripheral.id);
  const chars = PERIPHERAL_SERVER_MODE;
  const chunks: Uint8Array[] = [];
  const messages: Uint8Array[] = [];
  const disconnects: DisconnectInfo[] = [];
  const reassembler = new BleReassembler();
  link.onNotification((event) => {
    if (!sameUuid(event.characteristicUuid, chars.server2Client.uuid)) return;
    chunks.push(event.data);
    const message = reassembler.push(event.data);
    if (message) messages.push(message);
  });
  link.onDisconnect((info) => disconnects.push(info));
  await link.subscribe(serviceUuid, chars.state.uuid);
  await link.subscribe(serviceUuid, chars.server2Client.uuid);
  if (options.skipStart !== true)
    await link.write(serviceUuid, chars.state.uuid, Uint8Array.of(BLE_STATE_START), { withoutResponse: true });
  const size = options.chunkSize ?? 182;
  return {
    link,
    chunks,
    messages,
    disconnects,
    async send(message) {
      for (const chunk of chunkMessage(message, size))
        await link.write(serviceUuid, chars.client2Server.uuid, chunk, { withoutResponse: true });
    },
    async end() {
      await link.write(serviceUuid, chars.state.uuid, Uint8Array.of(BLE_STATE_END), { withoutResponse: true });
    },
    async close() {
      await link.disconnect();
    },
  };
}

// ---------------------------------------------------------------- BLE: reader as peripheral (mdoc central client mode)

export interface ReaderServer extends ReaderTransfer {
  readonly events: string[];
  readonly started: Promise<void>;
  connection(): ServerConnection | undefined;
}

/** GATT server with State/C2S/S2C/Ident; SessionEstablishment is notified after the phone writes State 0x01. */
export async function readerPeripheral(
  device: RadioDevice,
  serviceUuid: string,
  ident: Uint8Array,
  options: { readonly chunkSize?: number } = {},
): Promise<ReaderServer> {
  const chars = CENTRAL_CLIENT_MODE;
  const chunks: Uint8Array[] = [];
  const messages: Uint8Array[] = [];
  const disconnects: DisconnectInfo[] = [];
  const events: string[] = [];
  const reassembler = new BleReassembler();
  let current: ServerConnection | undefined;
  let markStarted: () => void = () => undefined;
  const started = new Promise<void>((resolve) => (markStarted = resolve));
  device.peripheral.setServices(
    [
      {
        uuid: serviceUuid,
        characteristics: [chars.state, chars.client2Server, chars.server2Client, chars.ident].map((c) => ({
          uuid: c.uuid,
          properties: c.properties,
        })),
      },
    ],
    {
      onConnect: (connection) => {
        current = connection;
        events.push('connect');
      },
      onDisconnect: (_connection, info) => {
        events.push('disconnect');
        disconnects.push(info);
      },
      onSubscribe: (request) => events.push(`subscribe:${request.characteristicUuid.slice(0, 8)}`),
      onRead: (request) => {
        events.push(`read:${request.characteristicUuid.slice(0, 8)}`);
        return sameUuid(request.characteristicUuid, chars.ident.uuid) ? ident.subarray(request.offset) : new Uint8Array(0);
      },
      onWrite: (request) => {
        if (sameUuid(request.characteristicUuid, chars.state.uuid)) {
          events.push(`state:${Buffer.from(request.data).toString('hex')}`);
          if (request.data[0] === BLE_STATE_START) markStarted();
          return;
        }
        chunks.push(request.data);
        const message = reassembler.push(request.data);
        if (message) messages.push(message);
      },
    },
  );
  await device.peripheral.startAdvertising({ localName: 'reader', serviceUuids: [serviceUuid] });
  const size = options.chunkSize ?? 182;
  const handle = (): number => {
    if (!current) throw new Error('no phone connected');
    return current.handle;
  };
  return {
    chunks,
    messages,
    disconnects,
    events,
    started,
    connection: () => current,
    async send(message) {
      await started; // the reader sends SessionEstablishment once the phone wrote State 0x01 (as Multipaz's reader)
      for (const chunk of chunkMessage(message, size))
        await device.peripheral.notify(handle(), serviceUuid, chars.server2Client.uuid, chunk);
    },
    async end() {
      await device.peripheral.notify(handle(), serviceUuid, chars.state.uuid, Uint8Array.of(BLE_STATE_END));
    },
    async close() {
      await device.peripheral.stopAdvertising();
      if (current) await device.peripheral.disconnect(current.handle);
      device.peripheral.setServices([]);
    },
  };
}

export function newReaderDevice(radio: VirtualRadio, name = 'reader'): RadioDevice {
  return radio.addDevice({ name });
}
