/**
 * The production device ports, built from the configuration: the PC/SC contactless reader (`pcsc.*`),
 * noble and bleno on this machine's Bluetooth stack in the roles of `ble.roles` (bleno on `ble.usbDongle`
 * when one is set; on Windows only then), and a QR queue that the
 * screen's camera, a keyboard-wedge scanner or the staff's paste field push scans into. Used by the
 * browser host, the Electron main process and the relay CLI, so all run the same hardware assembly.
 *
 * Nothing here throws for a missing native module or a bad reader pattern: the part is left out and the
 * reason is listed in `problems` (the ports' own availability then says `not_configured`).
 */
import type { Logger } from '../platform/log.js';
import type { KioskConfig } from '../platform/config.js';
import { errorMessage } from '../devices/shared/abort.js';
import { loadPlatformBle } from '../devices/ble/platform-stack.js';
import { forkLauncher, type RadioLauncher } from '../devices/ble/radio-process/launcher.js';
import { RadioProcess } from '../devices/ble/radio-process/radio-process.js';
import { PcscNfcReader } from '../devices/pcsc/pcsc-nfc-reader.js';
import type { BleCentral, BlePeripheral, DevicePorts } from '../devices/ports.js';
import { QrScanQueue } from '../devices/qr/qr-scan-queue.js';

export interface ConfiguredDevicesOptions {
  /** `pcsc`: the PC/SC reader of `config.pcsc`; `none`: no NFC. Default `pcsc`. */
  readonly nfc?: 'pcsc' | 'none';
  /** How long a pushed scan stays usable (default `config.qr.scanFreshMs`). */
  readonly qrFreshMs?: number;
  /**
   * Loads the BLE libraries in this process (tests inject a double; default: noble and bleno on this
   * machine's stack). A double always runs inline, whatever `ble.process` says.
   */
  readonly loadBle?: typeof loadPlatformBle;
  /**
   * Starts the radio process when `ble.process` is `separate` (default: Node's `fork` of the production
   * child; the Electron main process passes its `utilityProcess` launcher).
   */
  readonly radioLauncher?: RadioLauncher;
}

/** The BLE roles as set up, inline or in the radio process. */
interface BleRoles {
  readonly central?: BleCentral;
  readonly peripheral?: BlePeripheral;
  readonly problems: readonly string[];
  close(): Promise<void>;
}

/** noble and bleno in a radio process of their own; resolves once it is ready (or its start bound passed). */
async function separateBle(
  init: { central: boolean; peripheral: boolean; usbDongle?: { vid: number; pid: number } },
  log: Logger,
  launcher: RadioLauncher,
  recoverAfterMs: number,
): Promise<BleRoles> {
  const radio = new RadioProcess({ launcher, init, log: log.child({ component: 'ble' }), recoverAfterMs });
  const problems = await radio.started();
  return {
    ...(radio.central && radio.hasRole('central') ? { central: radio.central } : {}),
    ...(radio.peripheral && radio.hasRole('peripheral') ? { peripheral: radio.peripheral } : {}),
    problems,
    close: () => radio.close(),
  };
}

export interface ConfiguredDevices {
  readonly ports: DevicePorts;
  readonly qr: QrScanQueue;
  /** The PC/SC adapter, when one was set up (reader name for status lines). */
  readonly pcsc?: PcscNfcReader;
  /** What could not be set up, and why (for staff diagnostics). */
  readonly problems: readonly string[];
  close(): Promise<void>;
}

/** The PC/SC reader adapter configured from `pcsc.*`; throws for an invalid reader pattern. */
export function createPcscReader(config: KioskConfig, log: Logger): PcscNfcReader {
  const { reader, shareMode, protocol, serviceRetryMinMs, serviceRetryMaxMs, connectMs } = config.pcsc;
  return new PcscNfcReader({
    ...(reader === undefined ? {} : { reader }),
    shareMode,
    protocol,
    serviceRetryMinMs,
    serviceRetryMaxMs,
    connectTimeoutMs: connectMs,
    log: log.child({ component: 'pcsc' }),
  });
}

export async function createConfiguredDevices(
  config: KioskConfig,
  log: Logger,
  options: ConfiguredDevicesOptions = {},
): Promise<ConfiguredDevices> {
  // `log` is the host's logger: each part gets its own component (pino would repeat a key set twice).
  const own = log.child({ component: 'devices' });
  const problems: string[] = [];
  const qr = new QrScanQueue({ freshMs: options.qrFreshMs ?? config.qr.scanFreshMs });
  let pcsc: PcscNfcReader | undefined;
  if ((options.nfc ?? 'pcsc') === 'pcsc') {
    try {
      pcsc = createPcscReader(config, log);
    } catch (e) {
      problems.push(`nfc (pcsc): ${errorMessage(e)}`);
    }
  }
  const roles = config.ble.roles;
  let ble: BleRoles | undefined;
  if (roles !== 'none') {
    try {
      const { usbDongle } = config.ble;
      const init = { central: roles !== 'peripheral', peripheral: roles !== 'central', ...(usbDongle ? { usbDongle } : {}) };
      ble =
        config.ble.process === 'separate' && !options.loadBle
          ? await separateBle(init, log, options.radioLauncher ?? forkLauncher(), config.ble.adapterRecoveryMs)
          : (options.loadBle ?? loadPlatformBle)({ ...init, log: log.child({ component: 'ble' }) });
      problems.push(...ble.problems.map((p) => `ble ${p}`));
    } catch (e) {
      problems.push(`ble: ${errorMessage(e)}`);
    }
  }
  for (const problem of problems) own.warn({ event: 'device_unavailable' }, `device not set up: ${problem}`);
  const ports: DevicePorts = {
    qr,
    ...(pcsc ? { nfc: pcsc } : {}),
    ...(ble?.central ? { bleCentral: ble.central } : {}),
    ...(ble?.peripheral ? { blePeripheral: ble.peripheral } : {}),
  };
  let closing: Promise<void> | undefined;
  return {
    ports,
    qr,
    ...(pcsc ? { pcsc } : {}),
    problems,
    close() {
      closing ??= (async () => {
        await ble?.close().catch((e: unknown) => own.warn({ event: 'ble_close_failed' }, errorMessage(e)));
        await pcsc?.close().catch((e: unknown) => own.warn({ event: 'pcsc_close_failed' }, errorMessage(e)));
      })();
      return closing;
    },
  };
}

/** A device factory for the kiosk service over the configured real devices. */
export function configuredDeviceFactory(
  options: ConfiguredDevicesOptions = {},
): (config: KioskConfig, log: Logger) => Promise<ConfiguredDevices> {
  return (config, log) => createConfiguredDevices(config, log, options);
}
