/**
 * The whole chain with real ISO 18013-5 crypto and no hardware: the kiosk (createKiosk, exactly as
 * shipped) with the virtual device ports, the mock backend with its ISO reader engine, and the virtual
 * phone on a virtual radio. For the end-to-end tests and the end-to-end benchmark.
 */
import type { KioskView } from '../../src/common/kiosk-view.js';
import type { DevicePorts } from '../../src/devices/ports.js';
import { createVirtualRig, type VirtualRig, type VirtualRigOptions } from '../../src/qa/devices/virtual-rig.js';
import { createKiosk } from '../../src/kiosk/compose.js';
import { mergeConfig, parseConfig, type KioskConfig } from '../../src/platform/config.js';
import type { Kiosk } from '../../src/kiosk/kiosk.js';
import { createLogger } from '../../src/platform/log.js';
import type { FaultPlanInput } from '../../src/qa/sim/mock-backend/faults.js';
import type { ProtocolLogEntry } from '../../src/qa/sim/mock-backend/protocol-log.js';
import { createIsoReaderEngineFactory } from '../../src/qa/sim/mock-backend/reader/index.js';
import { startMockBackend, type MockBackend } from '../../src/qa/sim/mock-backend/server.js';
import { LogCapture, observeKiosk, type KioskObserver } from './harness.js';

export const E2E_API_KEY = 'e2e-api-key';

export interface E2eOptions extends VirtualRigOptions {
  /** Kiosk configuration overrides. */
  readonly config?: Record<string, unknown>;
  /** Certificates the backend trusts instead of the phone's IACA (e.g. a foreign one). */
  readonly trusted?: readonly Uint8Array[];
  readonly backendFaults?: FaultPlanInput;
  readonly lifetimeMs?: number;
  readonly nfcRetryLimit?: number;
  readonly chunkSize?: number;
  /** A backend to share between stacks (the concurrency benchmark). */
  readonly backend?: MockBackend;
  /** Collect the kiosk's logs (tests); off for benchmarks. */
  readonly captureLogs?: boolean;
  /** The address the kiosk uses for the backend, e.g. a throttling proxy in front of it (default: the backend's). */
  readonly via?: (backendUrl: string) => Promise<string>;
  /** Every protocol message the mock backend sends and receives, payloads in full (byte-exact checks). */
  readonly backendMessages?: (entry: ProtocolLogEntry) => void;
  /** Replaces or wraps the rig's device ports before the kiosk starts (fault tests). */
  readonly devices?: (rig: VirtualRig) => DevicePorts;
}

/** What the stack needs of a counter: the phone's credential (its IACA), the device ports, a stop. */
export interface CounterRig {
  readonly phone: { readonly credential: { readonly pki: { readonly iaca: { readonly der: Uint8Array } } } };
  readonly devices: DevicePorts;
  stop(): Promise<void>;
}

export interface E2eStack<Rig extends CounterRig = VirtualRig> extends KioskObserver {
  readonly rig: Rig;
  readonly backend: MockBackend;
  readonly kiosk: Kiosk;
  readonly config: KioskConfig;
  readonly logs: LogCapture;
  /** Waits for the kiosk to be ready for a tap or a scan. */
  ready(): Promise<KioskView>;
  stop(): Promise<void>;
}

/** Generous enough for real crypto on a loaded CI machine, short enough for tests to move on. */
export const E2E_TIMEOUTS = {
  backendReplyMs: 8_000,
  awaitCardMs: 5_000,
  bleSetupMs: 5_000,
  bleIdleMs: 8_000,
  resultDisplayMs: 300,
  errorDisplayMs: 300,
  removePhoneMs: 1_000,
  armWaitMs: 8_000,
};

export async function startE2e(options: E2eOptions = {}): Promise<E2eStack> {
  const rig = await createVirtualRig(options);
  const { devices, ...rest } = options;
  return startE2eOn(rig, { ...rest, ...(devices ? { devices: () => devices(rig) } : {}) });
}

/** The stack around a counter built elsewhere (e.g. on the emulated Bluetooth radio, src/qa/hci). */
export async function startE2eOn<Rig extends CounterRig>(
  rig: Rig,
  options: Omit<E2eOptions, keyof VirtualRigOptions | 'devices'> & { readonly devices?: () => DevicePorts } = {},
): Promise<E2eStack<Rig>> {
  const trusted = options.trusted ?? [rig.phone.credential.pki.iaca.der];
  const backend =
    options.backend ??
    (await startMockBackend({
      apiKeys: [E2E_API_KEY],
      engineFactory: createIsoReaderEngineFactory({
        trustedIacaCertificates: trusted,
        ...(options.chunkSize === undefined ? {} : { maxCharacteristicSize: options.chunkSize }),
      }),
      ...(options.backendFaults ? { faults: options.backendFaults } : {}),
      ...(options.lifetimeMs === undefined ? {} : { lifetimeMs: options.lifetimeMs }),
      ...(options.nfcRetryLimit === undefined ? {} : { nfcRetryLimit: options.nfcRetryLimit }),
      ...(options.backendMessages ? { protocolLog: options.backendMessages, logPayloads: true } : {}),
    }));
  const logs = new LogCapture();
  const log = createLogger({ level: options.captureLogs === false ? 'silent' : 'debug' }, logs);
  const config = parseConfig(
    mergeConfig(
      { backend: { baseUrl: options.via ? await options.via(backend.url) : backend.url, apiKey: E2E_API_KEY }, timeouts: E2E_TIMEOUTS },
      options.config ?? {},
    ),
  );
  const kiosk = createKiosk(config, options.devices ? options.devices() : rig.devices, log);
  const observed = observeKiosk(kiosk);
  kiosk.start();
  return {
    ...observed,
    rig,
    backend,
    kiosk,
    config,
    logs,
    ready: () => observed.view((v) => v.phase === 'ready', 10_000),
    async stop() {
      await kiosk.stop();
      await rig.stop();
      if (!options.backend) await backend.stop();
      observed.assertViewsValid();
    },
  };
}
