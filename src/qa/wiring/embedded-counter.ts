/**
 * The embedded default as the demo and the Electron QA flavour both run it: a virtual counter (virtual
 * NFC reader, Bluetooth and phone) with the embedded mock backend, the kiosk's device factory over it,
 * and the virtual phone page on its own loopback port. The page's "Scan it" and phase line reach the
 * kiosk through the two callbacks, which may be bound after the kiosk starts.
 */
import { randomInt } from 'node:crypto';
import type { DeviceFactory } from '../../service/kiosk-service.js';
import { startPhonePage, type PhonePage, type ScanIntoKiosk } from '../phone-page/server.js';
import type { PhoneProfileName } from '../sim/virtual-wallet/profiles.js';
import type { EmbeddedBackend } from './embedded-backend.js';
import type { HciStacks } from '../hci/hci-rig.js';
import { createVirtualCounter, type VirtualCounter } from './virtual-counter.js';

export interface EmbeddedCounterOptions {
  /** The virtual phone's profile (default android; changeable on its page). */
  readonly phone?: PhoneProfileName;
  /** The phone page's port (default: a free one). */
  readonly phonePort?: number;
  readonly scan?: ScanIntoKiosk;
  readonly kioskPhase?: () => string | undefined;
  /** The counter on BlueZ's emulated controllers (src/qa/hci) instead of the in-memory radio. */
  readonly hci?: HciStacks;
}

export interface EmbeddedCounter {
  readonly counter: VirtualCounter;
  readonly backend: EmbeddedBackend;
  /** The kiosk's devices: the counter's ports, the same set on every (re)build; closing is the counter's job. */
  readonly devices: DeviceFactory;
  readonly phonePage: PhonePage;
  /** Stops the phone page, then the counter and its backend. */
  stop(): Promise<void>;
}

/** A staff PIN for one QA run: six random digits. */
export function randomStaffPin(): string {
  return String(randomInt(0, 1_000_000)).padStart(6, '0');
}

export async function startEmbeddedCounter(options: EmbeddedCounterOptions = {}): Promise<EmbeddedCounter> {
  const counter = await createVirtualCounter({ phone: options.phone ?? 'android', ...(options.hci ? { hci: options.hci } : {}) });
  const backend = counter.backend;
  if (backend === undefined) {
    await counter.stop();
    throw new Error('the virtual counter started no backend');
  }
  let phonePage: PhonePage;
  try {
    phonePage = await startPhonePage({
      counter,
      port: options.phonePort ?? 0,
      ...(options.scan ? { scan: options.scan } : {}),
      ...(options.kioskPhase ? { kioskPhase: options.kioskPhase } : {}),
    });
  } catch (e) {
    await counter.stop();
    throw e;
  }
  const devices: DeviceFactory = () => Promise.resolve({ ports: counter.rig.devices, qr: counter.rig.qr, close: () => Promise.resolve() });
  let stopping: Promise<void> | undefined;
  return {
    counter,
    backend,
    devices,
    phonePage,
    stop() {
      stopping ??= (async () => {
        await phonePage.stop();
        await counter.stop();
      })();
      return stopping;
    },
  };
}
