/**
 * The `ble_exchange` modes (spec §2.5) built from what the phone offered at engagement.
 *
 * ISO names BLE modes after the mdoc's role (ISO/IEC 18013-5 §8.3.3.1.1; Multipaz `BleTransport*Mdoc*.kt`):
 * - mdoc **peripheral server** mode: the phone advertises and is the GATT server → the kiosk takes
 *   `role: "central"` and uses the State/Client2Server/Server2Client characteristics 01/02/03;
 * - mdoc **central client** mode: the phone scans and is the GATT client → the kiosk takes
 *   `role: "peripheral"`, serves 05/06/07 plus Ident 08.
 * When both are offered the central role is listed first (spec §4.4 "central is listed first").
 *
 * Where the offer comes from:
 * - QR: the DeviceEngagement BLE retrieval option `[2, 1, {0: psm, 1: ccm, 10: psmUuid, 11: ccmUuid}]`
 *   (the DeviceEngagement CDDL of ISO/IEC 18013-5, as in @owf/mdoc's `ble-options.ts`). A mode offered
 *   without its own UUID key uses the other one (Multipaz sends one UUID for both modes and refuses two
 *   different ones: `MdocConnectionMethodBle.kt`, "UUIDs for both BLE modes must be the same").
 * - NFC: the BLE OOB record of the Handover Select, whose LE role is read from the mdoc's point of view
 *   (Bluetooth CSS Part A §1.17 LE Role, as isomdl's `LeRole` reads it; `leRoleToMdocModes`). Negotiated
 *   HS without a UUID → the UUID of our HR (ISO/IEC 18013-5 §8.3.3.1.1.2, quoted in Multipaz's
 *   `MdocNfcEngagementHelper.kt`).
 *
 * Characteristic specs: `operations` are the ISO GATT properties, as Multipaz's `BlePeripheralManagerAndroid`
 * sets them (State notify + write without response, Client2Server write without response, Server2Client
 * notify, Ident read).
 * `permissions` are the attribute permissions of the GATT server's attributes, whoever serves them:
 * State and Client2Server `writeable` (the GATT client writes them), Ident `readable`, Server2Client none
 * (it is only notified; subscribing writes its CCCD descriptor, not the characteristic). In the peripheral
 * role the kiosk's GATT server exposes exactly these. In the central role the phone is the server and the
 * kiosk does not expose attributes; we send the same values, describing the server the kiosk talks to,
 * so one characteristic always carries one spec whatever the role.
 */
import { CENTRAL_CLIENT_MODE, PERIPHERAL_SERVER_MODE } from '../../iso/ble-uuids.js';
import type { DecodedDeviceEngagement } from '../../iso/device-engagement.js';
import type { MdocBleModes } from '../../iso/handover.js';
import type { BleModeWire, CharacteristicWire } from '../wire.js';

export type KioskRole = BleModeWire['role'];

export interface OfferedModes {
  /** Service UUID for mdoc peripheral server mode (kiosk central), when offered. */
  readonly peripheralServer?: string;
  /** Service UUID for mdoc central client mode (kiosk peripheral), when offered. */
  readonly centralClient?: string;
}

const state = (uuid: string): CharacteristicWire => ({
  uuid,
  operations: ['notify', 'write_without_response'],
  permissions: ['writeable'],
});
const c2s = (uuid: string): CharacteristicWire => ({ uuid, operations: ['write_without_response'], permissions: ['writeable'] });
const s2c = (uuid: string): CharacteristicWire => ({ uuid, operations: ['notify'], permissions: [] });
const ident = (uuid: string): CharacteristicWire => ({ uuid, operations: ['read'], permissions: ['readable'] });

/** The fixed characteristic UUIDs the kiosk uses in each of its roles (ISO/IEC 18013-5 §8.3.3.1.1.4). */
export const ROLE_CHARACTERISTICS = {
  central: {
    state: PERIPHERAL_SERVER_MODE.state.uuid,
    c2s: PERIPHERAL_SERVER_MODE.client2Server.uuid,
    s2c: PERIPHERAL_SERVER_MODE.server2Client.uuid,
    ident: undefined,
  },
  peripheral: {
    state: CENTRAL_CLIENT_MODE.state.uuid,
    c2s: CENTRAL_CLIENT_MODE.client2Server.uuid,
    s2c: CENTRAL_CLIENT_MODE.server2Client.uuid,
    ident: CENTRAL_CLIENT_MODE.ident.uuid,
  },
} as const satisfies Record<KioskRole, { state: string; c2s: string; s2c: string; ident: string | undefined }>;

/** Modes in preference order: central (mdoc peripheral server) first. */
export function buildBleModes(offered: OfferedModes): BleModeWire[] {
  const modes: BleModeWire[] = [];
  if (offered.peripheralServer !== undefined) {
    const chars = ROLE_CHARACTERISTICS.central;
    modes.push({
      role: 'central',
      service_uuid: offered.peripheralServer,
      characteristics: { state: state(chars.state), c2s: c2s(chars.c2s), s2c: s2c(chars.s2c) },
    });
  }
  if (offered.centralClient !== undefined) {
    const chars = ROLE_CHARACTERISTICS.peripheral;
    modes.push({
      role: 'peripheral',
      service_uuid: offered.centralClient,
      characteristics: { state: state(chars.state), c2s: c2s(chars.c2s), s2c: s2c(chars.s2c), ident: ident(chars.ident) },
    });
  }
  return modes;
}

/** QR engagement: the DeviceEngagement's BLE option (ISO/IEC 18013-5 DeviceEngagement CDDL). */
export function offeredFromDeviceEngagement(de: DecodedDeviceEngagement): OfferedModes | string {
  const ble = de.ble;
  if (ble === undefined) return 'the DeviceEngagement offers no BLE retrieval method (only BLE data retrieval is supported)';
  const fallback = ble.peripheralServerModeUuid ?? ble.centralClientModeUuid;
  const offered: { peripheralServer?: string; centralClient?: string } = {};
  if (ble.peripheralServerMode) {
    const uuid = ble.peripheralServerModeUuid ?? fallback;
    if (uuid !== undefined) offered.peripheralServer = uuid;
  }
  if (ble.centralClientMode) {
    const uuid = ble.centralClientModeUuid ?? fallback;
    if (uuid !== undefined) offered.centralClient = uuid;
  }
  if (offered.peripheralServer === undefined && offered.centralClient === undefined) {
    return ble.peripheralServerMode || ble.centralClientMode
      ? 'the DeviceEngagement BLE option carries no service UUID (keys 10/11)'
      : 'the DeviceEngagement BLE option enables neither peripheral server nor central client mode';
  }
  return offered;
}

/** NFC engagement: the HS BLE carrier, its modes read with the mdoc as sender; `fallbackUuid` from our HR. */
export function offeredFromHandover(
  carrier: { readonly modes: MdocBleModes; readonly uuid?: string } | undefined,
  fallbackUuid: string | undefined,
): OfferedModes | string {
  if (carrier === undefined) return 'the Handover Select selects no BLE carrier (only BLE data retrieval is supported)';
  const uuid = carrier.uuid ?? fallbackUuid;
  if (uuid === undefined) return 'the Handover Select BLE carrier carries no service UUID';
  return {
    ...(carrier.modes.peripheralServer ? { peripheralServer: uuid } : {}),
    ...(carrier.modes.centralClient ? { centralClient: uuid } : {}),
  };
}
