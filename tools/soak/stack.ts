/**
 * The counter the soak runs for its whole length: one kiosk composed as the hosts compose it
 * (`createConfiguredDevices` builds the PC/SC reader from `config.pcsc` and the BLE roles of `config.ble`,
 * `createKiosk` the rest), with its real adapters — the PC/SC adapter (`smartcard` binding) against a private pcscd whose
 * vsmartcard-vpcd reader holds the virtual phone as its card (tools/pcscd, `VpcdCard`), noble and bleno on
 * bindings that reach the virtual phone's radio — and the QA room's virtual counter (virtual phone, test
 * PKI, embedded mock backend with real ISO 18013-5 crypto) through its one door, src/qa/index.ts. This is
 * the relay CLI's `--devices virtual --nfc pcsc --vpcd … --ble noble` assembly, kept alive.
 *
 * Why not test/support/e2e-stack.ts or pcsc-stack.ts: they keep every view and every log line in memory
 * (right for a test, a leak over a night) and wire the virtual BLE ports rather than noble and bleno. The
 * parts are shared instead: the private pcscd, and `waitForEmptyReader` from pcsc-stack.ts.
 */
import type { EventEmitter } from 'node:events';
import type { Noble } from '@stoprocent/noble';
import { BlenoPeripheral } from '../../src/devices/ble/bleno-peripheral.js';
import type { Bleno } from '../../src/devices/ble/bleno-types.js';
import { NobleCentral } from '../../src/devices/ble/noble-central.js';
import type { PlatformBle, PlatformBleOptions } from '../../src/devices/ble/platform-stack.js';
import { createConfiguredDevices, type ConfiguredDevices } from '../../src/service/configured-devices.js';
import type { PcscNfcReader } from '../../src/devices/pcsc/pcsc-nfc-reader.js';
import { createKiosk } from '../../src/kiosk/compose.js';
import { parseConfig, type KioskConfig } from '../../src/platform/config.js';
import type { Kiosk } from '../../src/kiosk/kiosk.js';
import { createLogger } from '../../src/platform/log.js';
import {
  createVirtualBleno,
  createVirtualCounter,
  createVirtualNoble,
  getTestPki,
  VpcdCard,
  type EmbeddedBackend,
  type MockBackend,
  type VirtualCounter,
  type VpcdCardEvent,
} from '../../src/qa/index.js';
import { waitForEmptyReader } from '../../test/support/availability-wait.js';
import { startPrivatePcscd, type PrivatePcscd } from '../pcscd/pcscd-daemon.js';
import type { PcscdReader } from '../pcscd/pcscd-reader.js';
import type { PlanLimits } from './plan.js';

/**
 * The kiosk's timing for the soak: the production defaults shortened so that a fault that waits out a
 * timeout costs seconds, not minutes, while every bound stays well above what a healthy run needs on a
 * loaded two-core machine. The session lifetime is short too (the backend's is set to match), so idle
 * renewal happens within a soak.
 */
export const SOAK_TIMEOUTS = {
  httpMs: 3_000,
  connectMs: 3_000,
  backendReplyMs: 3_000,
  apduMs: 2_000,
  awaitCardMs: 3_000,
  bleSetupMs: 5_000,
  bleIdleMs: 4_000,
  bleWriteMs: 3_000,
  bleReadResponseMs: 2_000,
  bleLinkLossGraceMs: 500,
  completionFlushMs: 1_000,
  verificationMs: 20_000,
  socketCloseMs: 1_000,
  heartbeatMs: 5_000,
  armWaitMs: 4_000,
  recoverResultMs: 2_000,
  resultDisplayMs: 50,
  errorDisplayMs: 50,
  removePhoneMs: 1_500,
} as const;

export const SOAK_SESSION = {
  lifetimeMs: 30_000,
  renewBeforeExpiryMs: 25_000,
  minRemainingToStartMs: 20_000,
  conflictRetries: 5,
  conflictBackoffMs: 100,
  offlineBackoffMinMs: 200,
  offlineBackoffMaxMs: 2_000,
  // Time runs 20 times faster than at a counter (30 s sessions renewed every 5 s, a verification a second):
  // the request budget is raised alike. The budget's own tests are test/property/retry-budget.test.ts.
  maxRequestsPerMinute: 400,
} as const;

export const SOAK_LIMITS: PlanLimits = {
  backendReplyMs: SOAK_TIMEOUTS.backendReplyMs,
  bleIdleMs: SOAK_TIMEOUTS.bleIdleMs,
  httpMs: SOAK_TIMEOUTS.httpMs,
  armWaitMs: SOAK_TIMEOUTS.armWaitMs,
  renewAfterIdleMs: SOAK_SESSION.lifetimeMs - SOAK_SESSION.renewBeforeExpiryMs,
};

export interface SoakStackOptions {
  /** The kiosk's log level (`debug` writes the most, so the secrets search sees the most). */
  readonly logLevel: 'info' | 'debug';
  /** Every line the kiosk's logger writes (its pino destination). */
  readonly onLogLine: (line: string) => void;
  /** Every event of the virtual card on the vpcd reader (APDU headers and lengths only). */
  readonly onCardEvent?: (event: VpcdCardEvent) => void;
}

export interface SoakStack {
  readonly kiosk: Kiosk;
  readonly config: KioskConfig;
  readonly counter: VirtualCounter;
  readonly embedded: EmbeddedBackend;
  readonly pcscd: PrivatePcscd;
  readonly slot: PcscdReader;
  readonly devices: ConfiguredDevices;
  readonly reader: PcscNfcReader;
  readonly card: VpcdCard;
  /** The library objects whose listener counts the soak watches. */
  readonly emitters: { readonly noble: EventEmitter; readonly bleno: EventEmitter };
  /** The mock backend serving now (a new one after each `comeBack`). */
  backend(): MockBackend;
  stop(): Promise<void>;
}

/** noble and bleno on bindings that reach the virtual phone's radio, in the shape `loadPlatformBle` returns. */
function virtualPlatformBle(noble: Noble, bleno: Bleno, options: PlatformBleOptions): PlatformBle {
  const central = options.central ? new NobleCentral(noble, { platform: 'hci' }) : undefined;
  const peripheral = options.peripheral ? new BlenoPeripheral(bleno, { binding: 'hci' }) : undefined;
  return {
    ...(central ? { central } : {}),
    ...(peripheral ? { peripheral } : {}),
    problems: [],
    async close() {
      central?.dispose();
      noble.stop();
      await peripheral?.close();
    },
  };
}

export async function startSoakStack(options: SoakStackOptions): Promise<SoakStack> {
  // First: libpcsclite reads PCSCLITE_CSOCK_NAME once, on its first call (tools/pcscd).
  const pcscd = await startPrivatePcscd({ readers: 2 });
  const slot = pcscd.readers[0];
  if (!slot) throw new Error('the private pcscd has no reader');
  const cleanups: (() => Promise<void>)[] = [() => pcscd.stop()];
  const unwind = async (): Promise<void> => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  };
  try {
    const counter = await createVirtualCounter({
      pki: await getTestPki(),
      phone: 'android',
      kioskBle: 'both',
      backend: { lifetimeMs: SOAK_SESSION.lifetimeMs },
      // The phone gives up waiting for the reader's end soon after a failed verification.
      phoneEndTimeoutMs: 2_000,
      name: 'soak',
    });
    cleanups.push(() => counter.stop());
    const embedded = counter.backend;
    if (!embedded) throw new Error('the virtual counter started no backend');
    const config = parseConfig({
      backend: { baseUrl: embedded.url, apiKey: embedded.apiKey },
      session: SOAK_SESSION,
      timeouts: SOAK_TIMEOUTS,
      pcsc: { reader: slot.name, serviceRetryMinMs: 100, serviceRetryMaxMs: 1_000, connectMs: 3_000 },
      ble: { roles: 'both' },
      profile: 'age_over_21',
      log: { level: options.logLevel },
    });
    const log = createLogger({ level: config.log.level, name: 'mdl-kiosk' }, { write: (line: string) => options.onLogLine(line) });
    const rig = counter.radioRig;
    if (!rig) throw new Error('the soak counter is not on the virtual radio');
    // As in production (platform-stack.ts): a noble of its own per devices build (a stopped one never
    // starts again and its bindings throw, docs/ble-libraries.md §1), one bleno for the process.
    let noble = createVirtualNoble(rig.central.device);
    const bleno = createVirtualBleno(rig.peripheral.device);
    let builds = 0;
    const devices = await createConfiguredDevices(config, log, {
      nfc: 'pcsc',
      loadBle: (o) => {
        if (builds++ > 0) noble = createVirtualNoble(rig.central.device);
        return virtualPlatformBle(noble, bleno, o);
      },
    });
    cleanups.push(() => devices.close());
    const reader = devices.pcsc;
    if (!reader) throw new Error(`the PC/SC reader could not be set up: ${devices.problems.join('; ')}`);
    await waitForEmptyReader(reader, slot.name);
    const card = new VpcdCard({ host: slot.host, port: slot.port, ...(options.onCardEvent ? { onEvent: options.onCardEvent } : {}) });
    cleanups.push(() => card.remove());
    const kiosk = createKiosk(config, devices.ports, log.child({ component: 'kiosk' }));
    cleanups.push(() => kiosk.stop());
    kiosk.start();
    return {
      kiosk,
      config,
      counter,
      embedded,
      pcscd,
      slot,
      devices,
      reader,
      card,
      emitters: {
        get noble() {
          return noble;
        },
        bleno,
      },
      backend: () => embedded.backend,
      stop: unwind,
    };
  } catch (e) {
    await unwind();
    throw e;
  }
}
