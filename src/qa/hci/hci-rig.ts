/**
 * A counter on an emulated Bluetooth LE radio (tools/btvirt): the kiosk's noble central and bleno
 * peripheral adapters, as shipped, each on a controller of its own, and the virtual phone on the other
 * controllers, its wallet built on the opposite library (bleno for mdoc peripheral server mode, noble for
 * central client mode). NFC and QR are the virtual rig's (or, for NFC, a real reader the caller supplies).
 *
 *   const stacks = createHciStacks(ttys);            // once per process: a library instance owns its tty
 *   const rig = await createHciRig(stacks, { profile: 'iphone' });
 *   createKiosk(config, rig.devices, log); rig.showQr();
 *
 * The four library instances live as long as the process (bleno cannot be stopped safely, and a tty is
 * held by the instance that opened it); rigs come and go on them.
 */
import os from 'node:os';
import path from 'node:path';
import type { Noble } from '@stoprocent/noble';
import { BlenoPeripheral, type BlenoPeripheralOptions } from '../../devices/ble/bleno-peripheral.js';
import type { Bleno } from '../../devices/ble/bleno-types.js';
import { NobleCentral, type NobleCentralOptions } from '../../devices/ble/noble-central.js';
import type { Availability, DevicePorts } from '../../devices/ports.js';
import { QrScanQueue } from '../../devices/qr/qr-scan-queue.js';
import type { TestCredential } from '../sim/virtual-wallet/credential.js';
import { resolvePhoneProfile, type PhoneProfileName } from '../sim/virtual-wallet/profiles.js';
import { VirtualPhone, type PhoneBehaviour, type PhoneSetup } from '../sim/virtual-wallet/virtual-phone.js';
import { customerHands } from '../devices/customer-hands.js';
import { VirtualNfcReader, type VirtualNfcReaderOptions } from '../devices/virtual-nfc-reader.js';
import { createHciBleno, createHciNoble } from './hci-libraries.js';
import { HciPhoneRadio } from './hci-phone-radio.js';

/** The ttys of the controllers, by role (tools/btvirt's default names). */
export interface HciTtys {
  readonly kioskCentral: string;
  readonly kioskPeripheral: string;
  readonly phoneCentral: string;
  readonly phonePeripheral: string;
}

export const HCI_CONTROLLER_NAMES = {
  kioskCentral: 'kiosk-central',
  kioskPeripheral: 'kiosk-peripheral',
  phoneCentral: 'phone-central',
  phonePeripheral: 'phone-peripheral',
} as const;

/** Where `npm run btvirt -- start` makes the ttys by default (tools/btvirt/emulated-radio.ts). */
export function defaultHciDir(): string {
  return path.join(os.tmpdir(), 'mdl-kiosk-btvirt');
}

/** The ttys tools/btvirt makes in `dir` under its default controller names. */
export function hciTtysIn(dir: string): HciTtys {
  const at = (name: string): string => `${dir.replace(/\/$/, '')}/${name}`;
  return {
    kioskCentral: at(HCI_CONTROLLER_NAMES.kioskCentral),
    kioskPeripheral: at(HCI_CONTROLLER_NAMES.kioskPeripheral),
    phoneCentral: at(HCI_CONTROLLER_NAMES.phoneCentral),
    phonePeripheral: at(HCI_CONTROLLER_NAMES.phonePeripheral),
  };
}

export interface HciStacks {
  readonly kioskNoble: Noble;
  readonly kioskBleno: Bleno;
  readonly phoneNoble: Noble;
  readonly phoneBleno: Bleno;
}

/** noble and bleno for each role; nothing runs until an adapter or phone listens. */
export function createHciStacks(ttys: HciTtys): HciStacks {
  return {
    kioskNoble: createHciNoble({ tty: ttys.kioskCentral }),
    kioskBleno: createHciBleno({ tty: ttys.kioskPeripheral }),
    phoneNoble: createHciNoble({ tty: ttys.phoneCentral }),
    phoneBleno: createHciBleno({ tty: ttys.phonePeripheral }),
  };
}

export interface HciRigOptions {
  readonly profile?: PhoneProfileName;
  readonly behaviour?: PhoneBehaviour;
  readonly credential?: TestCredential;
  /** Which BLE roles the kiosk can take (both by default). */
  readonly ble?: { readonly central?: boolean; readonly peripheral?: boolean };
  readonly nfc?: VirtualNfcReaderOptions;
  readonly phoneEndTimeoutMs?: number;
  readonly central?: NobleCentralOptions;
  readonly peripheral?: BlenoPeripheralOptions;
}

/** A virtual phone whose wallet runs on the phone's two controllers (noble and bleno of `stacks`). */
export async function createHciPhone(stacks: HciStacks, setup: PhoneSetup): Promise<VirtualPhone<HciPhoneRadio>> {
  const profile = resolvePhoneProfile(setup.profile);
  const radio = new HciPhoneRadio({ noble: stacks.phoneNoble, bleno: stacks.phoneBleno, mtu: profile.mtu });
  return VirtualPhone.createOn(radio, { ...setup, profile });
}

export interface HciRig {
  /** The phone at the counter now (see `replacePhone`). */
  readonly phone: VirtualPhone<HciPhoneRadio>;
  readonly devices: DevicePorts;
  readonly nfc: VirtualNfcReader;
  readonly qr: QrScanQueue;
  readonly central: NobleCentral | undefined;
  readonly peripheral: BlenoPeripheral | undefined;
  showQr(): string;
  tap(): void;
  retap(): void;
  lift(): void;
  /** Another phone comes to the counter (on the same controllers); the current one is stopped. */
  replacePhone(next: VirtualPhone<HciPhoneRadio>): Promise<void>;
  stop(): Promise<void>;
}

const NOT_CONFIGURED: Availability = { usable: false, reason: 'not_configured' };

export async function createHciRig(stacks: HciStacks, options: HciRigOptions = {}): Promise<HciRig> {
  let phone = await createHciPhone(stacks, {
    profile: options.profile ?? 'android',
    ...(options.behaviour ? { behaviour: options.behaviour } : {}),
    ...(options.credential ? { credential: options.credential } : {}),
    ...(options.phoneEndTimeoutMs === undefined ? {} : { endTimeoutMs: options.phoneEndTimeoutMs }),
  });
  const central = options.ble?.central === false ? undefined : new NobleCentral(stacks.kioskNoble, { platform: 'hci', ...options.central });
  const peripheral =
    options.ble?.peripheral === false ? undefined : new BlenoPeripheral(stacks.kioskBleno, { binding: 'hci', ...options.peripheral });
  const nfc = new VirtualNfcReader(options.nfc ?? {});
  const qr = new QrScanQueue({ freshMs: 60_000 });
  const notConfigured = { availability: () => NOT_CONFIGURED };
  const hands = customerHands(() => phone, nfc, qr);
  return {
    get phone() {
      return phone;
    },
    devices: {
      nfc,
      qr,
      bleCentral: central ?? { ...notConfigured, connect: () => Promise.reject(new Error('not configured')) },
      blePeripheral: peripheral ?? { ...notConfigured, advertise: () => Promise.reject(new Error('not configured')) },
    },
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
      old.device.dispose();
    },
    stop: async () => {
      nfc.lift();
      await phone.stop();
      await nfc.close();
      central?.dispose();
      await peripheral?.close();
      phone.device.dispose();
    },
  };
}
