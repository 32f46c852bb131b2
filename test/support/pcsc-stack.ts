/**
 * The end-to-end stack (kiosk + mock backend + virtual phone) with the kiosk's NFC on the real PC/SC stack:
 * the PC/SC adapter (on the `smartcard` binding) talks to a private pcscd, whose vpcd reader has the virtual phone's tag as its card
 * (a `VpcdCard`). BLE still goes through the virtual radio.
 */
import type { Availability } from '../../src/devices/ports.js';
import { PcscNfcReader, type PcscNfcReaderOptions } from '../../src/devices/pcsc/pcsc-nfc-reader.js';
import type { VirtualNfcTag } from '../../src/qa/sim/virtual-wallet/nfc-tag.js';
import { VpcdCard } from '../../src/qa/sim/vpcd/vpcd-card.js';
import type { PcscdReader } from '../../tools/pcscd/pcscd-reader.js';
import { createLogger } from '../../src/platform/log.js';
import { startE2e, type E2eOptions, type E2eStack } from './e2e-stack.js';
import { availabilityWhen, waitForEmptyReader } from './availability-wait.js';
import { LogCapture } from './harness.js';

export interface PcscStackOptions extends E2eOptions {
  /** The vpcd reader the phone is laid on. */
  readonly slot: PcscdReader;
  /** The adapter's reader selector (default: the slot's exact name). */
  readonly readerSelector?: string;
  readonly adapter?: Omit<PcscNfcReaderOptions, 'reader'>;
}

export interface PcscStack extends E2eStack {
  readonly reader: PcscNfcReader;
  readonly card: VpcdCard;
  /** The adapter's own log (debug level). */
  readonly adapterLogs: LogCapture;
  /** Lays the phone on the reader with a fresh engagement. */
  tap(tag?: VirtualNfcTag): Promise<void>;
  /** Lifts the phone and lays it down again, continuing the same presentation. */
  retap(): Promise<void>;
  lift(): Promise<void>;
}

/** Resolves once `reader` reports the wanted availability. */
export const readerAvailability = (reader: PcscNfcReader, test: (a: Availability) => boolean, ms = 10_000): Promise<Availability> =>
  availabilityWhen(reader, test, ms);

export async function startPcscStack(options: PcscStackOptions): Promise<PcscStack> {
  const adapterLogs = new LogCapture();
  const log = createLogger({ level: 'debug' }, adapterLogs).child({ component: 'pcsc' });
  const reader = new PcscNfcReader({
    serviceRetryMinMs: 50,
    serviceRetryMaxMs: 500,
    log,
    ...options.adapter,
    reader: options.readerSelector ?? options.slot.name,
  });
  await waitForEmptyReader(reader, options.slot.name);
  const card = new VpcdCard({ host: options.slot.host, port: options.slot.port });
  let stack: E2eStack;
  try {
    stack = await startE2e({ ...options, devices: (rig) => ({ ...rig.devices, nfc: reader }) });
  } catch (e) {
    await reader.close();
    throw e;
  }
  let last: VirtualNfcTag | undefined;
  return {
    ...stack,
    reader,
    card,
    adapterLogs,
    async tap(tag) {
      last = tag ?? stack.rig.phone.tag();
      await card.insert(last);
    },
    async retap() {
      await card.reinsert(last ?? stack.rig.phone.tag());
    },
    lift: () => card.remove(),
    async stop() {
      await card.remove();
      await stack.stop();
      await reader.close();
    },
  };
}
