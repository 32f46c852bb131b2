/**
 * A counter with no hardware: the kiosk's device ports (NFC reader, QR input, BLE central and peripheral)
 * wired to a virtual phone on one virtual radio. Used by the end-to-end tests, by
 * `npm run relay -- --devices virtual`, and by the demo.
 *
 *   const rig = await createVirtualRig({ profile: 'iphone' });
 *   createKiosk(config, rig.devices, log);
 *   rig.tap();            // the phone on the reader (NFC engagement)
 *   rig.showQr();         // or the phone's QR code to the camera
 */
import type { DevicePorts } from '../../devices/ports.js';
import { QrScanQueue } from '../../devices/qr/qr-scan-queue.js';
import { VirtualRadio } from '../sim/radio/virtual-radio.js';
import { VirtualPhone, type PhoneBehaviour } from '../sim/virtual-wallet/virtual-phone.js';
import type { PhoneProfileName } from '../sim/virtual-wallet/profiles.js';
import type { TestCredential } from '../sim/virtual-wallet/credential.js';
import { customerHands } from './customer-hands.js';
import { VirtualBleCentral } from './virtual-ble-central.js';
import { VirtualBlePeripheral } from './virtual-ble-peripheral.js';
import { VirtualNfcReader, type VirtualNfcReaderOptions } from './virtual-nfc-reader.js';

export interface VirtualRigOptions {
  readonly profile?: PhoneProfileName;
  readonly behaviour?: PhoneBehaviour;
  /** The phone's mDL (default: the wallet's per-process test credential). */
  readonly credential?: TestCredential;
  /** A radio to share (several rigs on one air); default a radio of its own. */
  readonly radio?: VirtualRadio;
  /** Which BLE roles the kiosk can take (both by default). */
  readonly ble?: { readonly central?: boolean; readonly peripheral?: boolean };
  readonly nfc?: VirtualNfcReaderOptions;
  /** A name for the rig's radio devices (logs). */
  readonly name?: string;
  /** How long the phone waits for the reader's end after answering (the phone's default otherwise). */
  readonly phoneEndTimeoutMs?: number;
}

export interface VirtualRig {
  readonly radio: VirtualRadio;
  /** The phone at the counter now (see `replacePhone`). */
  readonly phone: VirtualPhone;
  readonly devices: DevicePorts;
  readonly nfc: VirtualNfcReader;
  readonly qr: QrScanQueue;
  readonly central: VirtualBleCentral;
  readonly peripheral: VirtualBlePeripheral;
  /** The phone shows a fresh QR engagement to the camera; returns its text. */
  showQr(): string;
  /** The phone is laid on the reader (a fresh NFC engagement). */
  tap(): void;
  /** The phone is lifted and laid on the reader again, continuing the same presentation (after `nfc_await_card`). */
  retap(): void;
  /** The phone is taken off the reader. */
  lift(): void;
  /**
   * Another phone comes to the counter on the same radio (a new credential or phone profile): the current
   * one leaves the reader, is stopped and taken off the radio; the kiosk's ports stay the same.
   */
  replacePhone(next: VirtualPhone): Promise<void>;
  stop(): Promise<void>;
}

export async function createVirtualRig(options: VirtualRigOptions = {}): Promise<VirtualRig> {
  const radio = options.radio ?? new VirtualRadio();
  const name = options.name ?? 'counter';
  const kioskDevice = radio.addDevice({ name: `${name}-kiosk` });
  let phone = await VirtualPhone.create({
    profile: options.profile ?? 'android',
    radio,
    name: `${name}-phone`,
    ...(options.behaviour ? { behaviour: options.behaviour } : {}),
    ...(options.credential ? { credential: options.credential } : {}),
    ...(options.phoneEndTimeoutMs === undefined ? {} : { endTimeoutMs: options.phoneEndTimeoutMs }),
  });
  const unusable = { usable: false, reason: 'not_configured' } as const;
  const central = new VirtualBleCentral(kioskDevice, options.ble?.central === false ? { availability: unusable } : {});
  const peripheral = new VirtualBlePeripheral(kioskDevice, options.ble?.peripheral === false ? { availability: unusable } : {});
  const nfc = new VirtualNfcReader(options.nfc ?? {});
  const qr = new QrScanQueue({ freshMs: 60_000 });
  const hands = customerHands(() => phone, nfc, qr);
  return {
    radio,
    get phone() {
      return phone;
    },
    devices: { nfc, qr, bleCentral: central, blePeripheral: peripheral },
    nfc,
    qr,
    central,
    peripheral,
    showQr: hands.showQr,
    tap: hands.tap,
    retap: hands.retap,
    lift: hands.lift,
    replacePhone: async (next) => {
      const old = phone;
      if (next === old) return;
      hands.newPhone();
      phone = next;
      await old.stop();
      // Off the air for good (a radio kept every phone it had seen: a long QA session grew with each).
      radio.removeDevice(old.device);
    },
    stop: async () => {
      nfc.lift();
      await phone.stop();
      await nfc.close();
      if (!options.radio) radio.shutdown();
    },
  };
}
