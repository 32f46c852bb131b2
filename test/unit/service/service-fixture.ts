/**
 * A KioskService on the virtual counter (virtual NFC reader, QR queue, Bluetooth and phone) against the
 * real-crypto mock backend, with a data directory of its own. Every state the service pushes is checked
 * against the ScreenState schema and must survive JSON.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { ScreenState } from '../../../src/common/kiosk-api.js';
import { QrScanQueue } from '../../../src/devices/qr/qr-scan-queue.js';
import type { KioskConfig } from '../../../src/platform/config.js';
import type { VerificationReport } from '../../../src/kiosk/kiosk.js';
import { createVirtualRig, type VirtualRig, type VirtualRigOptions } from '../../../src/qa/devices/virtual-rig.js';
import type { FaultPlanInput } from '../../../src/qa/sim/mock-backend/faults.js';
import { createIsoReaderEngineFactory } from '../../../src/qa/sim/mock-backend/reader/index.js';
import { startMockBackend, type MockBackend } from '../../../src/qa/sim/mock-backend/server.js';
import { KioskService, type DeviceSet, type KioskServiceOptions } from '../../../src/service/kiosk-service.js';
import { MemorySecretStore, type SecretStore } from '../../../src/service/secret-store.js';
import { LogCapture } from '../../support/harness.js';

export const API_KEY = 'service-test-api-key';
/** Cheap scrypt for tests; the format and the checks are the same. */
export const TEST_SCRYPT = { N: 2 ** 10, r: 8, p: 1 };
export const SERVICE_TIMEOUTS = {
  backendReplyMs: 8_000,
  awaitCardMs: 5_000,
  bleSetupMs: 5_000,
  bleIdleMs: 8_000,
  resultDisplayMs: 600,
  errorDisplayMs: 400,
  removePhoneMs: 1_000,
  armWaitMs: 8_000,
};

/** A QR queue that remembers what was pushed (the kiosk consumes the scans). */
export class RecordingQrQueue extends QrScanQueue {
  readonly pushed: string[] = [];
  override push(text: string): void {
    this.pushed.push(text);
    super.push(text);
  }
}

/** A value, or one made from the mock backend's base URL (known only once it listens). */
type WithBackend<T> = T | ((backendUrl: string) => T);

export interface ServiceFixtureOptions {
  /** The config file's content besides SERVICE_TIMEOUTS. */
  readonly config?: WithBackend<Record<string, unknown>>;
  /** Command-line values (locked in the settings). */
  readonly overrides?: Record<string, unknown>;
  readonly env?: NodeJS.ProcessEnv;
  /** Use the mock backend as the demo does (locked), or configure nothing (config_error). */
  readonly backend?: 'override' | 'none';
  readonly secrets?: SecretStore;
  readonly dataDir?: string;
  readonly rig?: VirtualRigOptions;
  readonly service?: Partial<KioskServiceOptions>;
  /** Faults the mock backend starts with (e.g. every WebSocket upgrade answered 404, as a misrouting gateway). */
  readonly backendFaults?: FaultPlanInput;
}

export interface ServiceFixture {
  readonly service: KioskService;
  readonly rig: VirtualRig;
  readonly backend: MockBackend;
  readonly logs: LogCapture;
  readonly dataDir: string;
  readonly secrets: SecretStore;
  readonly states: ScreenState[];
  readonly reports: VerificationReport[];
  /** Configurations the device factory was called with, and how many sets were closed. */
  readonly deviceBuilds: KioskConfig[];
  readonly closedSets: () => number;
  readonly qr: () => RecordingQrQueue;
  waitState(predicate: (s: ScreenState) => boolean, timeoutMs?: number, what?: string): Promise<ScreenState>;
  stop(): Promise<void>;
}

export async function startServiceFixture(options: ServiceFixtureOptions = {}): Promise<ServiceFixture> {
  const rig = await createVirtualRig(options.rig ?? {});
  const backend = await startMockBackend({
    apiKeys: [API_KEY],
    engineFactory: createIsoReaderEngineFactory({ trustedIacaCertificates: [rig.phone.credential.pki.iaca.der] }),
    ...(options.backendFaults ? { faults: options.backendFaults } : {}),
  });
  const given = <T>(value: WithBackend<T> | undefined): T | undefined =>
    typeof value === 'function' ? (value as (url: string) => T)(backend.url) : value;
  const ownDir = options.dataDir === undefined;
  const dataDir = options.dataDir ?? (await mkdtemp(join(tmpdir(), 'mdl-kiosk-service-')));
  // Test timeouts come from a config file: a lower layer than saved settings, so nothing is locked by them.
  const configFile = join(await mkdtemp(join(tmpdir(), 'mdl-kiosk-service-config-')), 'config.json');
  await writeFile(configFile, JSON.stringify({ timeouts: SERVICE_TIMEOUTS, log: { level: 'debug' }, ...given(options.config) }));
  const logs = new LogCapture();
  const secrets = options.secrets ?? new MemorySecretStore();
  const deviceBuilds: KioskConfig[] = [];
  let closed = 0;
  let queue = new RecordingQrQueue({ freshMs: 60_000 });
  const devices = (config: KioskConfig): Promise<DeviceSet> => {
    deviceBuilds.push(config);
    queue = new RecordingQrQueue({ freshMs: 60_000 });
    const { nfc, bleCentral, blePeripheral } = rig.devices;
    const ports = {
      qr: queue,
      ...(nfc ? { nfc } : {}),
      ...(bleCentral ? { bleCentral } : {}),
      ...(blePeripheral ? { blePeripheral } : {}),
    };
    return Promise.resolve({
      ports,
      qr: queue,
      close: () => {
        closed++;
        return Promise.resolve();
      },
    });
  };
  const service = new KioskService({
    devices,
    dataDir,
    env: options.env ?? {},
    configFile,
    ...(options.overrides ? { overrides: options.overrides } : {}),
    secrets,
    ...(options.backend === 'none' ? {} : { backendOverride: { baseUrl: backend.url, apiKey: API_KEY } }),
    testMode: true,
    logDestination: logs,
    pinScrypt: TEST_SCRYPT,
    ...options.service,
  });
  const states: ScreenState[] = [];
  const problems: string[] = [];
  let waiters: { predicate: (s: ScreenState) => boolean; resolve: (s: ScreenState) => void }[] = [];
  service.onState((state) => {
    const checked = ScreenState.safeParse(state);
    if (!checked.success) problems.push(checked.error.message);
    else if (!isDeepStrictEqual(JSON.parse(JSON.stringify(state)), state)) problems.push('state does not survive JSON');
    states.push(state);
    const ready = waiters.filter((w) => w.predicate(state));
    waiters = waiters.filter((w) => !w.predicate(state));
    for (const w of ready) w.resolve(state);
  });
  const reports: VerificationReport[] = [];
  service.onVerification((r) => reports.push(r));
  await service.start();
  return {
    service,
    rig,
    backend,
    logs,
    dataDir,
    secrets,
    states,
    reports,
    deviceBuilds,
    closedSets: () => closed,
    qr: () => queue,
    waitState(predicate, timeoutMs = 10_000, what = 'a matching state') {
      const current = service.state();
      if (predicate(current)) return Promise.resolve(current);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters = waiters.filter((w) => w.resolve !== done);
          reject(
            new Error(
              `no ${what} within ${timeoutMs} ms; last: phase ${service.state().view.phase} ${JSON.stringify(service.state().view.error)}`,
            ),
          );
        }, timeoutMs);
        const done = (s: ScreenState): void => {
          clearTimeout(timer);
          resolve(s);
        };
        waiters.push({ predicate, resolve: done });
      });
    },
    async stop() {
      await service.stop();
      await rig.stop();
      await backend.stop();
      if (ownDir) await rm(dataDir, { recursive: true, force: true });
      await rm(dirname(configFile), { recursive: true, force: true });
      if (problems.length > 0) throw new Error(`${problems.length} invalid states, first: ${problems[0] ?? ''}`);
    },
  };
}
