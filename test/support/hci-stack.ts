/**
 * The end-to-end stack on the emulated Bluetooth LE radio (tools/btvirt): btvirt with four controllers,
 * noble and bleno on each role's tty, the kiosk's adapters and the virtual phone on them (src/qa/hci), the
 * mock backend with real crypto. One radio per test file (btvirt's paths are fixed: the `hci` Vitest
 * project runs its files one after another); rigs come and go on the same library instances.
 */
import { expect } from 'vitest';
import { uuidKey } from '../../src/devices/ble/uuid.js';
import type { NfcReader } from '../../src/devices/ports.js';
import {
  createHciRig,
  createHciStacks,
  HCI_CONTROLLER_NAMES,
  hciTtysIn,
  type HciRig,
  type HciRigOptions,
  type HciStacks,
} from '../../src/qa/hci/hci-rig.js';
import type { TracedValue } from '../../src/qa/hci/hci-phone-radio.js';
import type { ProtocolLogEntry } from '../../src/qa/sim/mock-backend/protocol-log.js';
import { startEmulatedRadio, type EmulatedRadio } from '../../tools/btvirt/emulated-radio.js';
import { startE2eOn, type E2eOptions, type E2eStack } from './e2e-stack.js';

export interface HciRadio {
  readonly radio: EmulatedRadio;
  readonly stacks: HciStacks;
}

/** btvirt and the four library instances (nothing of the libraries runs until a rig listens). */
export async function startHciRadio(): Promise<HciRadio> {
  const radio = await startEmulatedRadio({
    controllers: Object.values(HCI_CONTROLLER_NAMES),
    dir: `/tmp/mdl-kiosk-btvirt-test-${process.pid}`,
  });
  return { radio, stacks: createHciStacks(hciTtysIn(radio.dir)) };
}

/** One BLE value the backend sent (`ble_write`) or received (`ble_notified`/`ble_written`), in order. */
export interface BackendValue {
  readonly direction: 'sent' | 'received';
  readonly characteristic: string;
  readonly data: string;
}

export interface HciStack extends E2eStack<HciRig> {
  /** The backend's BLE values, from its protocol log (payloads in full). */
  readonly backendValues: BackendValue[];
}

export type HciStackOptions = HciRigOptions &
  Omit<E2eOptions, keyof HciRigOptions | 'devices' | 'backendMessages'> & {
    /** Another NFC reader for the kiosk (the pcsclite adapter on a private pcscd with vpcd). */
    readonly nfcReader?: NfcReader;
  };

function backendValue(entry: ProtocolLogEntry): BackendValue | undefined {
  if (entry.event !== 'message') return undefined;
  const message = entry.message as
    | { op?: unknown; char?: unknown; data?: unknown; params?: { char?: unknown; data?: unknown } }
    | undefined;
  const op = message?.op;
  if (
    entry.direction === 'out' &&
    op === 'ble_write' &&
    typeof message?.params?.char === 'string' &&
    typeof message.params.data === 'string'
  ) {
    return { direction: 'sent', characteristic: uuidKey(message.params.char), data: message.params.data };
  }
  if (
    entry.direction === 'in' &&
    (op === 'ble_notified' || op === 'ble_written') &&
    typeof message?.char === 'string' &&
    typeof message.data === 'string'
  ) {
    return { direction: 'received', characteristic: uuidKey(message.char), data: message.data };
  }
  return undefined;
}

export async function startHciStack(radio: HciRadio, options: HciStackOptions = {}): Promise<HciStack> {
  const rig = await createHciRig(radio.stacks, options);
  const backendValues: BackendValue[] = [];
  const { nfcReader } = options;
  const stack = await startE2eOn(rig, {
    ...options,
    ...(nfcReader ? { devices: () => ({ ...rig.devices, nfc: nfcReader }) } : {}),
    backendMessages: (entry) => {
      const value = backendValue(entry);
      if (value) backendValues.push(value);
    },
  });
  return { ...stack, backendValues };
}

const asBase64 = (values: readonly TracedValue[]): { characteristic: string; data: string }[] =>
  values.map((v) => ({ characteristic: v.characteristic, data: Buffer.from(v.data).toString('base64') }));

/**
 * Byte-exact relay: every value the backend sent reached the phone, in order and unchanged, and every
 * value the phone sent reached the backend. `dropped`: the link went down mid-transfer, so each side got
 * an unchanged prefix of what the other sent (what was still queued in a stack when the link went is lost,
 * as on the air) — never a changed, reordered or invented value.
 */
export function expectByteExact(stack: HciStack, options: { readonly dropped?: boolean } = {}): void {
  const trace = stack.rig.phone.device.trace;
  const toPhone = stack.backendValues.filter((v) => v.direction === 'sent').map(({ characteristic, data }) => ({ characteristic, data }));
  const atPhone = asBase64(trace.filter((v) => v.direction === 'received'));
  const fromPhone = asBase64(trace.filter((v) => v.direction === 'sent'));
  const atBackend = stack.backendValues
    .filter((v) => v.direction === 'received')
    .map(({ characteristic, data }) => ({ characteristic, data }));
  expect(toPhone.length).toBeGreaterThan(0);
  expect(fromPhone.length).toBeGreaterThan(0);
  if (options.dropped) {
    expect(toPhone.slice(0, atPhone.length)).toEqual(atPhone);
    expect(fromPhone.slice(0, atBackend.length)).toEqual(atBackend);
    return;
  }
  expect(atPhone).toEqual(toPhone);
  expect(atBackend).toEqual(fromPhone);
}
