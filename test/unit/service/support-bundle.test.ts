/**
 * The support bundle after a real verification (identity profile: names, dates, document number and a
 * portrait disclosed): what support needs is there — versions, the configuration without secrets and the
 * source of each key, state, devices, self-test, diagnostics, the shell's records and its logs — and the
 * archive, searched file by file, holds none of the holder's data, the API key, the host token, the PIN
 * hash or the proxy password, even where a log line carried one.
 */
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { extract } from 'tar';
import { afterEach, describe, expect, it } from 'vitest';
import { dispatchIntent } from '../../../src/common/kiosk-api.js';
import { hashPin } from '../../../src/service/staff-pin.js';
import { API_KEY, startServiceFixture, TEST_SCRYPT, type ServiceFixture } from './service-fixture.js';

const PIN = '246810';
const TOKEN = 'host-token-QmFzZTY0VXJsU2FmZVRva2VuRm9yVGVzdGluZw';
const PROXY_PASSWORD = 'proxy-pass-7d2f';
/** The virtual wallet's holder (src/qa/sim/virtual-wallet/credential.ts). */
const HOLDER = [/\bDoe\b/, /\bJane\b/, /D1234567/, /A-9876-5432/, /1990-04-12/, /Capitol Mall/, /Sacramento/];

let fixture: ServiceFixture | undefined;
const dirs: string[] = [];
afterEach(async () => {
  await fixture?.stop();
  fixture = undefined;
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'mdl-kiosk-bundle-'));
  dirs.push(dir);
  return dir;
}

async function filesUnder(dir: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (entry.isFile())
      out.set(join(entry.parentPath, entry.name).slice(dir.length + 1), await readFile(join(entry.parentPath, entry.name), 'utf8'));
  }
  return out;
}

describe('support bundle', () => {
  it('holds what support needs and nothing personal or secret', async () => {
    const work = await tempDir();
    const pinHash = await hashPin(PIN, TEST_SCRYPT);
    const logDir = join(work, 'logs');
    const health = join(work, 'health.json');
    fixture = await startServiceFixture({
      backend: 'none',
      config: (url) => ({ profile: 'identity', backend: { baseUrl: url } }),
      overrides: { staff: { pinHash } },
      env: { HTTPS_PROXY: `http://kiosk:${PROXY_PASSWORD}@proxy.invalid:3128`, NO_PROXY: '127.0.0.1' },
      service: { support: () => ({ logDir, files: { 'health.json': health }, secrets: [TOKEN] }) },
    });
    const f = fixture;
    const call = (intent: string, args: unknown): Promise<unknown> =>
      dispatchIntent(f.service, intent, args, () => f.service.staffUnlocked());
    expect(await call('unlock', { pin: PIN })).toMatchObject({ ok: true });
    expect(await call('saveSettings', { apiKey: API_KEY })).toMatchObject({ ok: true });
    await f.service.settled();
    await f.waitState((s) => s.view.phase === 'ready', 15_000, 'ready');
    await call('qrScanned', { text: f.rig.phone.presentQr(), source: 'camera' });
    const result = await f.waitState((s) => s.view.phase === 'result', 20_000, 'the result');
    expect(result.view.outcome?.verdict).toBe('verified');
    expect(JSON.stringify(result.view.outcome?.response)).toContain('D1234567'); // the needles are real
    const portrait = f.reports[0]?.outcome?.response['org.iso.18013.5.1']?.portrait;
    const portraitNeedle = typeof portrait === 'string' ? portrait.slice(0, 48) : JSON.stringify(portrait).slice(0, 48);

    // The shell's records: the kiosk's own log, plus a line that carries secrets (a second line of defence).
    await import('node:fs/promises').then(({ mkdir }) => mkdir(logDir, { recursive: true }));
    await writeFile(
      join(logDir, 'mdl-kiosk.2026-11-27.1.log'),
      `${f.logs.text()}{"event":"careless","detail":"key ${API_KEY} token ${TOKEN} pin ${pinHash}"}\n`,
    );
    await writeFile(join(logDir, 'unrelated.txt'), `not a kiosk log ${API_KEY}`);
    await writeFile(health, JSON.stringify({ schema: 1, phase: 'ready' }));

    const bundle = await f.service.writeSupportBundleTo(join(work, 'out', 'bundle.tar.gz'));
    expect((await stat(bundle.path)).mode & 0o777).toBe(0o600);
    expect(bundle.bytes).toBeGreaterThan(1_000);
    const unpacked = join(work, 'unpacked');
    await import('node:fs/promises').then(({ mkdir }) => mkdir(unpacked));
    await extract({ file: bundle.path, cwd: unpacked });
    const files = await filesUnder(join(unpacked, 'mdl-kiosk-support'));
    expect([...files.keys()].sort()).toEqual(
      [
        'README.txt',
        'config.json',
        'diagnostics.json',
        'environment.json',
        'health.json',
        'logs/mdl-kiosk.2026-11-27.1.log',
        'self-test.json',
        'state.json',
        'summary.txt',
        'versions.json',
      ].sort(),
    );
    // The environment's proxy by host and port only; the bundle describes the kiosk that runs.
    expect(JSON.parse(files.get('environment.json') ?? '{}')).toMatchObject({
      madeBy: 'running kiosk',
      proxyEnvironment: { HTTPS_PROXY: { proxy: 'http://proxy.invalid:3128', credentials: 'set (not included)' }, NO_PROXY: '127.0.0.1' },
    });

    // What support needs.
    const config = JSON.parse(files.get('config.json') ?? '{}') as {
      effective: { backend: { apiKey: string; baseUrl: string }; staff: { pinHash: string }; profile: string };
      sources: Record<string, string>;
    };
    expect(config.effective.backend.apiKey).toBe('(set; not included)');
    expect(config.effective.staff.pinHash).toBe('(set; not included)');
    expect(config.effective.profile).toBe('identity');
    expect(config.sources).toMatchObject({
      'backend.baseUrl': 'config file',
      'backend.apiKey': 'saved settings',
      'staff.pinHash': 'command line',
      profile: 'config file',
    });
    expect(JSON.parse(files.get('versions.json') ?? '{}')).toMatchObject({ node: process.versions.node, flavour: 'qa' });
    expect(JSON.parse(files.get('state.json') ?? '{}')).toMatchObject({ devices: { qr: { usable: true } } });
    expect(JSON.parse(files.get('self-test.json') ?? '[]')).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'backend' })]));
    expect(JSON.parse(files.get('diagnostics.json') ?? '{}')).toMatchObject({ counts: expect.any(Object) as unknown });
    expect(files.get('logs/mdl-kiosk.2026-11-27.1.log')).toContain('"event":"careless"');

    // Nothing personal, nothing secret, in any file.
    for (const [name, text] of files) {
      for (const needle of HOLDER) expect(text, `${name} holds ${needle.source}`).not.toMatch(needle);
      for (const secret of [API_KEY, TOKEN, pinHash, PROXY_PASSWORD, portraitNeedle]) expect(text, name).not.toContain(secret);
    }
  }, 60_000);

  it('a gateway that refuses the session socket: the bundle names the last failure (kind, status, detail, in a row, the budget) and holds no session id, secret or key', async () => {
    const work = await tempDir();
    fixture = await startServiceFixture({
      config: { session: { offlineBackoffMinMs: 20, offlineBackoffMaxMs: 200 } },
      backendFaults: { httpFailures: { upgrade: { status: 404, times: 1_000 } } },
      service: { support: () => ({ logDir: join(work, 'logs'), secrets: [] }) },
    });
    const f = fixture;
    const secrets: string[] = [];
    f.backend.sessions.onCreated((s) => secrets.push(s.id, s.clientSecret));
    await f.waitState((s) => s.view.error?.code === 'backend_refuses_socket', 15_000, 'the gateway refusal');
    // The kiosk's own log goes in too: it names sessions by id, which support may need, so it is not checked here.
    const bundle = await f.service.writeSupportBundleTo(join(work, 'bundle.tar.gz'));
    const unpacked = join(work, 'unpacked');
    await import('node:fs/promises').then(({ mkdir }) => mkdir(unpacked));
    await extract({ file: bundle.path, cwd: unpacked });
    const files = await filesUnder(join(unpacked, 'mdl-kiosk-support'));
    const diagnostics = JSON.parse(files.get('diagnostics.json') ?? '{}') as {
      backend?: {
        lastFailure: { kind: string; status: number; detail: string } | null;
        consecutive: number;
        totals: Record<string, number>;
        requestsLastMinute: number;
        maxRequestsPerMinute: number;
      };
    };
    expect(diagnostics.backend?.lastFailure).toMatchObject({
      kind: 'socket_refused',
      status: 404,
      detail: expect.stringContaining('WebSocket route of the gateway') as string,
    });
    expect(diagnostics.backend?.consecutive).toBeGreaterThanOrEqual(3);
    expect(diagnostics.backend?.totals.socket_refused).toBeGreaterThanOrEqual(3);
    expect(diagnostics.backend?.maxRequestsPerMinute).toBe(20);
    expect(JSON.parse(files.get('state.json') ?? '{}')).toMatchObject({ phase: 'config_error', error: { code: 'backend_refuses_socket' } });
    expect(JSON.parse(files.get('self-test.json') ?? '[]')).toEqual(
      expect.arrayContaining([expect.objectContaining({ name: 'backend', status: 'backend_refuses_socket' })]),
    );
    expect(secrets.length).toBeGreaterThanOrEqual(2);
    for (const name of ['diagnostics.json', 'state.json', 'self-test.json', 'config.json']) {
      for (const secret of [API_KEY, ...secrets]) expect(files.get(name), name).not.toContain(secret);
    }
  }, 40_000);

  it("the staff screen's button writes a bundle into the support folder and says where", async () => {
    const pinHash = await hashPin(PIN, TEST_SCRYPT);
    fixture = await startServiceFixture({ overrides: { staff: { pinHash } } });
    const f = fixture;
    const call = (intent: string, args: unknown): Promise<unknown> =>
      dispatchIntent(f.service, intent, args, () => f.service.staffUnlocked());
    await expect(call('writeSupportBundle', {})).rejects.toMatchObject({ code: 'staff_required' });
    expect(await call('unlock', { pin: PIN })).toMatchObject({ ok: true });
    const written = (await call('writeSupportBundle', {})) as { path: string; bytes: number };
    expect(written.path.startsWith(join(f.dataDir, 'support', 'mdl-kiosk-support-'))).toBe(true);
    expect(written.path.endsWith('.tar.gz')).toBe(true);
    expect((await stat(written.path)).size).toBe(written.bytes);
    expect(f.logs.events()).toContain('support_bundle_written');
  });

  it("records the installed app.asar's digest in environment.json (and says when the kiosk runs from no package)", async () => {
    const digest = 'cd'.repeat(32);
    const read = async (service: { installedAsarSha256?: string }): Promise<unknown> => {
      fixture = await startServiceFixture({ service });
      const bundle = await fixture.service.writeSupportBundleTo(join(await tempDir(), 'bundle.tar.gz'));
      const unpacked = await tempDir();
      await extract({ file: bundle.path, cwd: unpacked });
      await fixture.stop();
      fixture = undefined;
      return JSON.parse(await readFile(join(unpacked, 'mdl-kiosk-support', 'environment.json'), 'utf8'));
    };
    expect(await read({ installedAsarSha256: digest })).toMatchObject({ installedAppAsar: { sha256: digest } });
    expect(await read({})).toMatchObject({ installedAppAsar: { sha256: null, note: 'not running from a package' } });
  });
});
