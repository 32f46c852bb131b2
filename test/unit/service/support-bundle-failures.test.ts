/**
 * The ten failures support hears about most, each made to happen for real where the test tooling allows
 * (a CONNECT proxy asking for credentials or not there, a backend with a private CA, another key or a
 * certificate not valid yet, the mock backend refusing a key or not running, the PC/SC adapter over a
 * PC/SC service that is not running or has no reader, the kiosk's radio switched off or absent, the screen
 * reporting its camera refused, the updater's failure as the desktop app reports it, a data folder on a
 * full or read-only file system). For each, staff press the Support bundle button (the `writeSupportBundle`
 * intent, as the staff screen does), and the test reads the cause where a support engineer reads it —
 * `summary.txt` first, then the JSON part that holds the detail — and checks that no file of the bundle
 * holds the API key, the host token, the PIN hash, the proxy password or the holder's data.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { extract } from 'tar';
import { afterEach, describe, expect, it } from 'vitest';
import { dispatchIntent, type ScreenState } from '../../../src/common/kiosk-api.js';
import { PcscNfcReader } from '../../../src/devices/pcsc/pcsc-nfc-reader.js';
import { QrScanQueue } from '../../../src/devices/qr/qr-scan-queue.js';
import type { DeviceSet } from '../../../src/service/kiosk-service.js';
import { shellSupport } from '../../../src/service/service-support.js';
import { hashPin } from '../../../src/service/staff-pin.js';
import { startConnectProxy, type ConnectProxy } from '../../support/connect-proxy.js';
import { FakeBackend } from '../../support/fake-backend.js';
import { FakePcscService } from '../../support/fake-pcsclite.js';
import { unusedPort } from '../../support/session-http.js';
import { createTestCa, issueServerIdentity } from '../../support/tls-fixtures.js';
import { API_KEY, startServiceFixture, TEST_SCRYPT, type ServiceFixture, type ServiceFixtureOptions } from './service-fixture.js';

const PIN = '318264';
const TOKEN = 'host-token-c3VwcG9ydEJ1bmRsZUZhaWx1cmVzVG9rZW4xMjM';
const PROXY_USER = 'kiosk-17';
const PROXY_PASSWORD = 'Pr0xy-pa55-9f3e';
/** The virtual wallet's holder (src/qa/sim/virtual-wallet/credential.ts). */
const HOLDER = [/\bDoe\b/, /\bJane\b/, /D1234567/, /A-9876-5432/, /1990-04-12/, /Capitol Mall/, /Sacramento/];
/** Retries close together, so a failure is seen (and counted) within the test's time. */
const FAST = { session: { offlineBackoffMinMs: 20, offlineBackoffMaxMs: 200 } };
const DAY_MS = 86_400_000;

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'mdl-kiosk-failure-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

interface Kiosk {
  readonly f: ServiceFixture;
  readonly pinHash: string;
  readonly logDir: string;
  /** The secrets this kiosk holds besides the token and the PIN hash (its API key, its proxy password). */
  readonly knows: readonly string[];
}

/** A kiosk as a shell runs it: a staff PIN, the shell's log folder and records, the host token to scrub. */
async function kiosk(options: ServiceFixtureOptions & { dataDir?: string; knows?: readonly string[] }): Promise<Kiosk> {
  const work = await tempDir();
  const dataDir = options.dataDir ?? join(work, 'data');
  await mkdir(dataDir, { recursive: true });
  const logDir = join(work, 'logs');
  const pinHash = await hashPin(PIN, TEST_SCRYPT);
  const f = await startServiceFixture({
    ...options,
    dataDir,
    overrides: { staff: { pinHash } },
    service: {
      support: shellSupport({ dataDir, logDir, healthFile: join(work, 'health.json'), secrets: () => [TOKEN] }),
      ...options.service,
    },
  });
  cleanups.push(() => f.stop());
  return { f, pinHash, logDir, knows: options.knows ?? [API_KEY] };
}

const call = (f: ServiceFixture, intent: string, args: unknown): Promise<unknown> =>
  dispatchIntent(f.service, intent, args, () => f.service.staffUnlocked());

/** Staff unlock and press Support bundle; the bundle, unpacked, by file name. */
async function staffBundle(k: Kiosk): Promise<Map<string, string>> {
  // The kiosk's own log as the shell's log folder holds it, and a careless line carrying secrets.
  await mkdir(k.logDir, { recursive: true });
  await writeFile(
    join(k.logDir, 'mdl-kiosk.2026-11-28.1.log'),
    `${k.f.logs.text()}{"event":"careless","detail":"token ${TOKEN} pin ${k.pinHash} ${k.knows.join(' ')}"}\n`,
  );
  expect(await call(k.f, 'unlock', { pin: PIN })).toMatchObject({ ok: true });
  const written = (await call(k.f, 'writeSupportBundle', {})) as { path: string };
  const unpacked = await tempDir();
  await extract({ file: written.path, cwd: unpacked });
  const root = join(unpacked, 'mdl-kiosk-support');
  const files = new Map<string, string>();
  for (const entry of await readdir(root, { recursive: true, withFileTypes: true })) {
    if (entry.isFile())
      files.set(join(entry.parentPath, entry.name).slice(root.length + 1), await readFile(join(entry.parentPath, entry.name), 'utf8'));
  }
  files.set('(path)', written.path);
  return files;
}

/** No file holds a secret or the holder's data. */
function expectClean(files: Map<string, string>, k: Kiosk, more: readonly string[] = []): void {
  expect(files.has('summary.txt') && files.has('environment.json') && files.has('logs/mdl-kiosk.2026-11-28.1.log')).toBe(true);
  for (const [name, text] of files) {
    for (const secret of [
      API_KEY,
      TOKEN,
      k.pinHash,
      PROXY_PASSWORD,
      Buffer.from(`${PROXY_USER}:${PROXY_PASSWORD}`).toString('base64'),
      ...more,
    ])
      expect(text, `${name} holds a secret`).not.toContain(secret);
    for (const needle of HOLDER) expect(text, `${name} holds ${needle.source}`).not.toMatch(needle);
  }
}

const json = (files: Map<string, string>, name: string): unknown => JSON.parse(files.get(name) ?? 'null');
/** The summary's line for an area (`Backend:`, `Self-test nfc:`, …). */
const line = (files: Map<string, string>, area: string): string =>
  (files.get('summary.txt') ?? '').split('\n').find((l) => l.startsWith(area)) ?? `(no ${area} line)`;

interface BackendPart {
  backend?: { lastFailure: { kind: string; status: number | null; detail: string } | null };
}
interface StatePart {
  phase: string;
  error: { code: string; detail: string } | null;
  devices: Partial<Record<string, { usable: boolean; reason?: string }>>;
  camera: { state: string };
}
interface SelfTestPart {
  name: string;
  ok: boolean;
  status: string;
  detail?: string;
}
const check = (files: Map<string, string>, name: string): SelfTestPart | undefined =>
  (json(files, 'self-test.json') as SelfTestPart[]).find((c) => c.name === name);

/** A backend failure of this kind, reported (the keeper retries fast in these tests). */
const failureOf =
  (kind: string) =>
  (s: ScreenState): boolean =>
    s.view.phase === 'offline' || s.view.phase === 'config_error' || s.view.error?.code === kind;

describe('support bundle: the ten common failures can be read from it', () => {
  it('1. proxy: one asking for credentials (407) and one not there are named, with the proxy by host and port', async () => {
    const proxy: ConnectProxy = await startConnectProxy({ credentials: { user: PROXY_USER, password: 'the-right-one' } });
    cleanups.push(() => proxy.stop());
    const k = await kiosk({
      backend: 'none',
      config: (url) => ({ backend: { baseUrl: url, apiKey: API_KEY }, ...FAST }),
      env: { HTTP_PROXY: `http://${PROXY_USER}:${PROXY_PASSWORD}@127.0.0.1:${proxy.port}` },
    });
    await k.f.waitState((s) => s.view.error?.code === 'proxy_refused', 15_000, 'the 407');
    const files = await staffBundle(k);
    expect(line(files, 'Screen:')).toMatch(/^Screen: phase config_error, error proxy_refused: .*asked for credentials \(HTTP 407\)/);
    expect(line(files, 'Backend:')).toMatch(/^Backend: last failure proxy_refused \(HTTP 407\) at create/);
    expect((json(files, 'state.json') as StatePart).error?.detail).toContain(
      `the proxy http://127.0.0.1:${proxy.port} asked for credentials (HTTP 407)`,
    );
    expect(json(files, 'environment.json')).toMatchObject({
      proxyEnvironment: { HTTP_PROXY: { proxy: `http://127.0.0.1:${proxy.port}`, credentials: 'set (not included)' } },
      backendRoute: {
        via: 'proxy',
        proxy: `http://127.0.0.1:${proxy.port}`,
        source: 'environment',
        credentials: 'from the proxy variable (not included)',
      },
    });
    expect(proxy.tunnels.length).toBeGreaterThan(0);
    expectClean(files, k);

    // The same kiosk's proxy gone: nothing listens at its address.
    const gone = await unusedPort();
    const k2 = await kiosk({
      backend: 'none',
      config: (url) => ({ backend: { baseUrl: url, apiKey: API_KEY }, ...FAST }),
      env: { HTTP_PROXY: `http://127.0.0.1:${gone}` },
    });
    await k2.f.waitState(failureOf('proxy_unreachable'), 15_000, 'the proxy failure');
    const files2 = await staffBundle(k2);
    expect(line(files2, 'Backend:')).toMatch(
      new RegExp(
        `^Backend: last failure proxy_unreachable at create, \\d+ in a row: .*the proxy http://127\\.0\\.0\\.1:${gone} cannot be reached \\(ECONNREFUSED\\)`,
      ),
    );
    expect(line(files2, 'Proxy variables:')).toBe(`Proxy variables: HTTP_PROXY=http://127.0.0.1:${gone} none`);
    expectClean(files2, k2);
  }, 60_000);

  it('2. TLS: a backend certificate of a CA the kiosk does not trust, then a key that does not match the pins', async () => {
    const ca = await createTestCa();
    const identity = await issueServerIdentity(ca);
    const backend = await FakeBackend.start({ apiKey: API_KEY, tls: { key: identity.key, cert: identity.cert } });
    cleanups.push(() => backend.stop());
    const k = await kiosk({ backend: 'none', config: { backend: { baseUrl: backend.baseUrl, apiKey: API_KEY }, ...FAST } });
    await k.f.waitState(failureOf('tls'), 15_000, 'the TLS failure');
    const files = await staffBundle(k);
    expect(line(files, 'Backend:')).toMatch(
      /^Backend: last failure tls at create, \d+ in a row: .*not issued by a CA this kiosk trusts \(\w+\): add the CA .* to backend\.tls\.caFile/,
    );
    expectClean(files, k);

    const work = await tempDir();
    const caFile = join(work, 'ca.pem');
    await writeFile(caFile, ca.certPem);
    const otherPin = (await issueServerIdentity(await createTestCa('Another CA'))).leafPin;
    const k2 = await kiosk({
      backend: 'none',
      config: { backend: { baseUrl: backend.baseUrl, apiKey: API_KEY, tls: { caFile, pinSha256: [otherPin] } }, ...FAST },
    });
    await k2.f.waitState(failureOf('tls'), 15_000, 'the pin failure');
    const files2 = await staffBundle(k2);
    expect(line(files2, 'Backend:')).toMatch(
      /^Backend: last failure tls at create, \d+ in a row: .*does not match backend\.tls\.pinSha256/,
    );
    expect(
      (json(files2, 'config.json') as { effective: { backend: { tls: { pinSha256: string[] } } } }).effective.backend.tls.pinSha256,
    ).toEqual([otherPin]);
    expectClean(files2, k2);
  }, 60_000);

  it("3. clock: a kiosk whose clock is two days behind sees the backend's certificate as not valid yet; the bundle shows its clock", async () => {
    const ca = await createTestCa();
    // Valid from tomorrow, as seen by a kiosk two days behind a certificate issued yesterday.
    const identity = await issueServerIdentity(
      ca,
      { ips: ['127.0.0.1'] },
      { notBefore: new Date(Date.now() + DAY_MS), notAfter: new Date(Date.now() + 30 * DAY_MS) },
    );
    const backend = await FakeBackend.start({ apiKey: API_KEY, tls: { key: identity.key, cert: identity.cert } });
    cleanups.push(() => backend.stop());
    const work = await tempDir();
    await writeFile(join(work, 'ca.pem'), ca.certPem);
    const k = await kiosk({
      backend: 'none',
      config: { backend: { baseUrl: backend.baseUrl, apiKey: API_KEY, tls: { caFile: join(work, 'ca.pem') } }, ...FAST },
    });
    await k.f.waitState(failureOf('tls'), 15_000, 'the TLS failure');
    const before = Date.now();
    const files = await staffBundle(k);
    expect(line(files, 'Backend:')).toMatch(/not valid yet \(CERT_NOT_YET_VALID\): check this kiosk's clock/);
    const clock = (json(files, 'environment.json') as { kioskClock: { now: string; timeZone: string } }).kioskClock;
    expect(Math.abs(Date.parse(clock.now) - before)).toBeLessThan(60_000);
    expect(line(files, 'Kiosk clock:')).toBe(
      `Kiosk clock: ${clock.now} (compare with the real time the bundle was made; a clock off by minutes breaks TLS and sessions)`,
    );
    expectClean(files, k);
  }, 60_000);

  it("4. API key: the backend refuses the kiosk's key", async () => {
    const wrongKey = 'not-the-fleet-key-5e1d';
    const k = await kiosk({
      backend: 'none',
      config: (url) => ({ backend: { baseUrl: url, apiKey: wrongKey }, ...FAST }),
      knows: [wrongKey],
    });
    await k.f.waitState((s) => s.view.phase === 'config_error', 15_000, 'the refusal');
    const files = await staffBundle(k);
    expect(line(files, 'Backend:')).toMatch(
      /^Backend: last failure credentials_refused \(HTTP 401\) at create, \d+ in a row: .*check the API key/,
    );
    expect(json(files, 'config.json')).toMatchObject({
      effective: { backend: { apiKey: '(set; not included)' } },
      sources: { 'backend.apiKey': 'config file' },
    });
    expectClean(files, k, [wrongKey]);
  }, 60_000);

  it('5. reader: the PC/SC service not running (pcscd missing), then running without a reader', async () => {
    const pcsc = (service: FakePcscService) => (): Promise<DeviceSet> => {
      const nfc = new PcscNfcReader({ binding: service.factory, serviceRetryMinMs: 20, serviceRetryMaxMs: 200 });
      const qr = new QrScanQueue({ freshMs: 60_000 });
      return Promise.resolve({ ports: { nfc, qr }, qr, close: () => nfc.close() });
    };
    const stopped = new FakePcscService();
    stopped.running = false;
    const k = await kiosk({ service: { devices: pcsc(stopped) } });
    await k.f.waitState((s) => s.view.devices.nfc.reason === 'service_down', 10_000, 'the PC/SC service down');
    const files = await staffBundle(k);
    expect(line(files, 'Self-test nfc:')).toMatch(/^Self-test nfc: FAILED service_down: the PC\/SC service is not available/);
    expect((json(files, 'state.json') as StatePart).devices.nfc).toEqual({ usable: false, reason: 'service_down' });
    expect(check(files, 'nfc')).toMatchObject({ ok: false, status: 'service_down' });
    expectClean(files, k);

    const k2 = await kiosk({ service: { devices: pcsc(new FakePcscService([])) } });
    await k2.f.waitState((s) => s.view.devices.nfc.reason === 'no_reader', 10_000, 'no reader');
    const files2 = await staffBundle(k2);
    expect(line(files2, 'Self-test nfc:')).toMatch(/^Self-test nfc: FAILED no_reader: waiting for /);
    expectClean(files2, k2);
  }, 60_000);

  it('6. Bluetooth: the adapter switched off, then a kiosk with no radio at all', async () => {
    const k = await kiosk({});
    await k.f.waitState((s) => s.view.phase === 'ready', 15_000, 'ready');
    k.f.rig.central.device.setPowered(false);
    k.f.rig.peripheral.device.setPowered(false);
    await k.f.waitState(
      (s) => s.view.devices.bleCentral.reason === 'powered_off' && s.view.devices.blePeripheral.reason === 'powered_off',
      10_000,
      'the radio off',
    );
    const files = await staffBundle(k);
    expect(line(files, 'Self-test ble_central:')).toMatch(/^Self-test ble_central: FAILED powered_off: .* is off/);
    expect((json(files, 'state.json') as StatePart).devices.blePeripheral).toEqual({ usable: false, reason: 'powered_off' });
    expectClean(files, k);

    const k2 = await kiosk({ rig: { ble: { central: false, peripheral: false } } });
    await k2.f.waitState((s) => s.view.phase !== 'starting' && s.view.phase !== 'connecting', 15_000, 'started');
    const files2 = await staffBundle(k2);
    expect(line(files2, 'Self-test ble_central:')).toMatch(/^Self-test ble_central: FAILED /);
    expect((json(files2, 'state.json') as StatePart).devices.bleCentral?.usable).toBe(false);
    expectClean(files2, k2);

    // Not a failure: a kiosk whose configuration leaves Bluetooth out (and, here, names no backend yet).
    const k3 = await kiosk({ backend: 'none', config: { ble: { roles: 'none' } }, rig: { ble: { central: false, peripheral: false } } });
    await k3.f.waitState((s) => s.view.phase === 'config_error', 15_000, 'needs staff for its configuration');
    const files3 = await staffBundle(k3);
    expect(line(files3, 'Self-test ble_central:')).toBe('Self-test ble_central: not set up on this kiosk');
    expect(line(files3, 'Self-test ble_peripheral:')).toBe('Self-test ble_peripheral: not set up on this kiosk');
    expect(line(files3, 'Route to the backend:')).toBe('Route to the backend: none (why: no backend.baseUrl is configured)');
  }, 60_000);

  it('7. camera: refused by the operating system (after a verification, so holder data was in the kiosk)', async () => {
    const k = await kiosk({
      config: { profile: 'identity' },
      service: { appStatus: () => ({ flavour: 'production', secretsProtection: 'os-encrypted', managedKeys: [], cameraAccess: 'denied' }) },
    });
    await k.f.waitState((s) => s.view.phase === 'ready', 15_000, 'ready');
    await call(k.f, 'qrScanned', { text: k.f.rig.phone.presentQr(), source: 'scanner' });
    const result = await k.f.waitState((s) => s.view.phase === 'result', 20_000, 'the result');
    expect(JSON.stringify(result.view.outcome?.response)).toContain('D1234567'); // the holder's data was there
    await call(k.f, 'reportCamera', { state: 'denied', detail: 'NotAllowedError: Permission denied' });
    const files = await staffBundle(k);
    expect(line(files, 'Camera:')).toBe('Camera: denied (operating system consent: denied)');
    expect(line(files, 'Self-test camera:')).toBe('Self-test camera: FAILED denied: NotAllowedError: Permission denied');
    expect((json(files, 'state.json') as StatePart).camera.state).toBe('denied');
    expect(check(files, 'camera')).toMatchObject({ ok: false, status: 'denied' });
    expectClean(files, k);
  }, 60_000);

  it('8. backend down: nothing answers at backend.baseUrl', async () => {
    const port = await unusedPort();
    const k = await kiosk({ backend: 'none', config: { backend: { baseUrl: `http://127.0.0.1:${port}`, apiKey: API_KEY }, ...FAST } });
    await k.f.waitState((s) => s.view.phase === 'offline', 15_000, 'offline');
    const files = await staffBundle(k);
    expect(line(files, 'Screen:')).toMatch(/^Screen: phase offline, error \w+: /);
    expect(line(files, 'Backend:')).toMatch(/^Backend: last failure unreachable at create, \d+ in a row: .*ECONNREFUSED/);
    expect(line(files, 'Route to the backend:')).toBe('Route to the backend: direct');
    expect((json(files, 'diagnostics.json') as BackendPart).backend?.lastFailure?.kind).toBe('unreachable');
    expectClean(files, k);
  }, 60_000);

  it("9. update: the desktop app's updater failed (its status as the app reports it)", async () => {
    const error = 'Cannot find channel "latest-pilot.yml" update info: HttpError: 404 Not Found';
    const k = await kiosk({
      service: {
        appStatus: () => ({
          flavour: 'production',
          secretsProtection: 'os-encrypted',
          managedKeys: [],
          updates: { state: 'error', error, checkedAt: Date.now() },
        }),
      },
    });
    const files = await staffBundle(k);
    expect(line(files, 'Updates:')).toBe(`Updates: error: ${error}`);
    expect((json(files, 'diagnostics.json') as { app?: { updates?: { state: string } } }).app?.updates?.state).toBe('error');
    expectClean(files, k);
  }, 60_000);

  // A real file system that is full, then read-only: a tmpfs (mounting needs root; CI runs as root).
  const asRoot = process.getuid?.() === 0;
  it.runIf(process.platform === 'linux' && (asRoot || process.env.CI === 'true'))(
    '10. disk: a full data folder, then a read-only one; the bundle still gets written (to the temporary folder) and says so',
    async () => {
      const mountPoint = await tempDir();
      try {
        execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m,mode=0700', 'tmpfs', mountPoint]);
      } catch (e) {
        throw new Error(`this test mounts a tmpfs (root with CAP_SYS_ADMIN): ${e instanceof Error ? e.message : String(e)}`);
      }
      cleanups.push(() => Promise.resolve(execFileSync('umount', ['-l', mountPoint])));
      const dataDir = join(mountPoint, 'data');
      const k = await kiosk({ dataDir });
      // Fill it: what the settings, health record and logs write next fails with ENOSPC.
      await writeFile(join(mountPoint, 'filler'), Buffer.alloc(1024 * 1024)).catch(() => undefined);
      const files = await staffBundle(k);
      expect(files.get('(path)')?.startsWith(join(tmpdir(), 'mdl-kiosk-support-'))).toBe(true);
      cleanups.push(() => rm(join(files.get('(path)') ?? '', '..'), { recursive: true, force: true }));
      expect(line(files, 'Data folder:')).toBe(`Data folder: ${dataDir}: NOT WRITABLE (ENOSPC: the disk is full), 0 KiB free`);
      expect((json(files, 'environment.json') as { dataFolder: { writable: boolean; freeBytes: number } }).dataFolder).toMatchObject({
        writable: false,
        freeBytes: 0,
      });
      expectClean(files, k);

      await rm(join(mountPoint, 'filler'));
      execFileSync('mount', ['-o', 'remount,ro', mountPoint]);
      await call(k.f, 'lock', {});
      const files2 = await staffBundle(k);
      expect(line(files2, 'Data folder:')).toMatch(
        new RegExp(
          `^Data folder: ${dataDir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: NOT WRITABLE \\(EROFS: the file system is read-only\\), \\d+ KiB free$`,
        ),
      );
      cleanups.push(() => rm(join(files2.get('(path)') ?? '', '..'), { recursive: true, force: true }));
      expectClean(files2, k);
    },
    60_000,
  );
});
