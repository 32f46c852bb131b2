import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { extract } from 'tar';
import WebSocket from 'ws';
import { createConfiguredDevices } from '../../../src/service/configured-devices.js';
import { parseConfig } from '../../../src/platform/config.js';
import { createLogger } from '../../../src/platform/log.js';
import { verifyPin } from '../../../src/service/staff-pin.js';
import { runCli } from '../../support/cli-run.js';
import { startRecordingServer } from '../../support/recording-server.js';

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'mdl-kiosk-host-cli-'));
  dirs.push(dir);
  return dir;
}

describe('npm run host', () => {
  it('--set-pin stores a scrypt hash from MDL_KIOSK_STAFF_PIN in settings.json (0600)', async () => {
    const dir = await tempDir();
    const run = await runCli('src/host/cli.ts', ['--set-pin', '--data-dir', dir], { env: { MDL_KIOSK_STAFF_PIN: '482915' } });
    expect(run.code).toBe(0);
    const path = join(dir, 'settings.json');
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    const file = JSON.parse(await readFile(path, 'utf8')) as { staff: { pinHash: string } };
    expect(await verifyPin('482915', file.staff.pinHash)).toBe(true);
    expect(await readFile(path, 'utf8')).not.toContain('482915');
    const bad = await runCli('src/host/cli.ts', ['--set-pin', '--data-dir', dir], { env: { MDL_KIOSK_STAFF_PIN: '12' } });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('a PIN is 4 to 12 digits');
  });

  it('serves the screen on loopback, prints the URL with its token, and stops on SIGTERM', async () => {
    const dir = await tempDir();
    const config = join(dir, 'config.json');
    await writeFile(config, JSON.stringify({ ble: { roles: 'none' } }));
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', 'src/host/cli.ts', '--config', config, '--data-dir', dir, '--nfc', 'none', '--log-level', 'warn'],
      {
        env: Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('MDL_KIOSK_'))),
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const url = await new Promise<string>((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (c: Buffer) => {
        out += c.toString();
        const line = out.split('\n').find((l) => l.startsWith('http://'));
        if (line) resolve(line.trim());
      });
      child.once('exit', () => reject(new Error(`the host exited: ${stderr}`)));
    });
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/#token=[A-Za-z0-9_-]{43}$/);
    const page = await fetch(url.replace(/#.*$/, ''));
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self' 'wasm-unsafe-eval'");
    expect(stderr).toContain('the kiosk needs staff: backend.baseUrl is not set');
    expect(stderr).toContain('--set-pin');
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });
});

describe('npm run host: the token stays out of every output, and the API key stays with its backend', () => {
  it("docs/browser-host.md's systemd set-up: --url-file keeps the token off stdout and stderr (trace logs too); a staff save of another backend URL is refused and the other server never gets the fleet key", async () => {
    const dir = await tempDir();
    const fleet = await startRecordingServer();
    const other = await startRecordingServer();
    try {
      const apiKey = 'fleet-key-4f1c9d2e7a';
      const keyFile = join(dir, 'api-key');
      await writeFile(keyFile, `${apiKey}\n`, { mode: 0o600 });
      const config = join(dir, 'config.json');
      await writeFile(config, JSON.stringify({ backend: { baseUrl: fleet.url }, ble: { roles: 'none' } }));
      const pin = '735091';
      expect(
        (await runCli('src/host/cli.ts', ['--set-pin', '--data-dir', join(dir, 'data')], { env: { MDL_KIOSK_STAFF_PIN: pin } })).code,
      ).toBe(0);
      const urlFile = join(dir, 'run', 'url');
      const child = spawn(
        process.execPath,
        [
          '--import',
          'tsx',
          'src/host/cli.ts',
          '--data-dir',
          join(dir, 'data'),
          '--nfc',
          'none',
          '--log-level',
          'trace',
          '--url-file',
          urlFile,
          '--health-file',
          join(dir, 'health.json'),
        ],
        {
          env: {
            ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('MDL_KIOSK_'))),
            MDL_KIOSK_CONFIG: config,
            MDL_KIOSK_API_KEY_FILE: keyFile,
          },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      try {
        await expect.poll(() => stdout, { timeout: 30_000 }).toContain('its address with the token is in');
        const url = (await readFile(urlFile, 'utf8')).trim();
        expect((await stat(urlFile)).mode & 0o777).toBe(0o600);
        const token = /#token=([A-Za-z0-9_-]{43})$/.exec(url)?.[1] ?? '';
        expect(token).toHaveLength(43);
        expect(stdout).toMatch(
          new RegExp(
            `^host: the screen is at http://127\\.0\\.0\\.1:\\d+/ ; its address with the token is in ${urlFile.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`,
            'm',
          ),
        );
        // The kiosk uses the fleet key with the fleet backend.
        await expect.poll(() => fleet.seen.length, { timeout: 15_000 }).toBeGreaterThan(0);
        expect(fleet.seen[0]).toBe(`POST /api/sessions Bearer ${apiKey}`);

        const origin = new URL(url).origin;
        const ws = new WebSocket(`${origin.replace('http', 'ws')}/api`, ['mdl-kiosk.v1', `auth.${token}`], { origin });
        const replies = new Map<number, (m: { ok: boolean; result?: unknown; error?: unknown }) => void>();
        ws.on('message', (data: Buffer) => {
          const m = JSON.parse(data.toString()) as { type: string; id: number; ok: boolean };
          if (m.type === 'reply') replies.get(m.id)?.(m);
        });
        await new Promise((resolve, reject) => {
          ws.once('open', resolve);
          ws.once('error', reject);
        });
        let id = 0;
        const call = (intent: string, args: unknown): Promise<{ ok: boolean; result?: unknown; error?: unknown }> =>
          new Promise((resolve) => {
            replies.set(++id, resolve);
            ws.send(JSON.stringify({ type: 'call', id, intent, args }));
          });
        expect(await call('unlock', { pin })).toMatchObject({ ok: true, result: { ok: true } });
        const saved = await call('saveSettings', { backendUrl: other.url });
        expect(saved).toMatchObject({ ok: true, result: { ok: false, errors: [{ key: 'backendUrl' }] } });
        expect(JSON.stringify(saved)).toContain('belongs to the API key set by the environment');
        // The staff button's bundle (downloaded by the staff's browser) carries what the desktop app's does:
        // the health record and the host's own log files, the token scrubbed from them (here from a
        // careless line in a log file: the host registers its token with the scrubber).
        await writeFile(join(dir, 'data', 'logs', 'mdl-kiosk.2026-01-01.9.log'), `{"event":"careless","detail":"token ${token}"}\n`);
        const ticket = (await call('prepareSupportDownload', {})) as { ok: boolean; result: { ticket: string } };
        expect(ticket.ok).toBe(true);
        const download = await fetch(`${origin}/support-bundle/${ticket.result.ticket}`);
        expect(download.status).toBe(200);
        await writeFile(join(dir, 'staff-bundle.tar.gz'), Buffer.from(await download.arrayBuffer()));
        ws.close();
        await new Promise((resolve) => setTimeout(resolve, 500));
        expect(other.seen).toEqual([]);
      } finally {
        child.kill('SIGTERM');
      }
      expect(await exited).toBe(0);
      const token = /#token=([A-Za-z0-9_-]{43})/.exec(await readFile(urlFile, 'utf8'))?.[1] ?? 'missing';
      // Every output: stdout, stderr (JSON logs at trace level), the health record and the data folder
      // (its log files too), and the staff button's bundle.
      const unpacked = join(dir, 'unpacked');
      await mkdir(unpacked);
      await extract({ file: join(dir, 'staff-bundle.tar.gz'), cwd: unpacked });
      const bundled = (await readdir(join(unpacked, 'mdl-kiosk-support'), { recursive: true })).sort();
      expect(bundled).toEqual(
        expect.arrayContaining([
          'health.json',
          'summary.txt',
          'environment.json',
          expect.stringMatching(/^logs\/mdl-kiosk\.\d{4}-\d\d-\d\d\.1\.log$/) as string,
        ]),
      );
      const logText = await readFile(
        join(unpacked, 'mdl-kiosk-support', bundled.find((n) => /^logs\/mdl-kiosk\.\d{4}-\d\d-\d\d\.1\.log$/.test(n)) ?? 'missing'),
        'utf8',
      );
      expect(logText).toContain('"event":"host_started"');
      expect(await readFile(join(unpacked, 'mdl-kiosk-support', 'logs', 'mdl-kiosk.2026-01-01.9.log'), 'utf8')).toBe(
        '{"event":"careless","detail":"token [removed]"}\n',
      );
      await rm(join(dir, 'data', 'logs', 'mdl-kiosk.2026-01-01.9.log'));
      const files = (await readdir(join(dir, 'data'), { recursive: true, withFileTypes: true }))
        .filter((e) => e.isFile())
        .map((e) => join(e.parentPath, e.name));
      expect(files.some((f) => f.includes(`${join(dir, 'data', 'logs')}/mdl-kiosk.`))).toBe(true);
      const bundleFiles = (await readdir(join(unpacked, 'mdl-kiosk-support'), { recursive: true, withFileTypes: true }))
        .filter((e) => e.isFile())
        .map((e) => join(e.parentPath, e.name));
      const written = await Promise.all([join(dir, 'health.json'), ...files, ...bundleFiles].map((f) => readFile(f, 'utf8')));
      for (const [where, text] of [['stdout', stdout], ['stderr', stderr], ...written.map((t, i) => [`file ${i}`, t] as const)] as const) {
        expect(text, where).not.toContain(token);
        expect(text, where).not.toContain('fleet-key-4f1c9d2e7a');
      }
      expect(stderr).toContain('"event":"host_started"'); // the JSON log was written, and searched
    } finally {
      await fleet.stop();
      await other.stop();
    }
  }, 60_000);
});

describe('npm run host -- --support-bundle', () => {
  it('writes a bundle without the key, the PIN hash or the token, without opening a device, and exits 0', async () => {
    const dir = await tempDir();
    const data = join(dir, 'data');
    expect((await runCli('src/host/cli.ts', ['--set-pin', '--data-dir', data], { env: { MDL_KIOSK_STAFF_PIN: '615243' } })).code).toBe(0);
    const settings = JSON.parse(await readFile(join(data, 'settings.json'), 'utf8')) as { staff: { pinHash: string } };
    const apiKey = 'bundle-key-0c9a1e';
    await writeFile(
      join(data, 'secrets.json'),
      JSON.stringify({
        version: 1,
        secrets: { 'backend.apiKey': JSON.stringify({ v: 1, key: apiKey, origin: 'https://verifier.example' }) },
      }),
      { mode: 0o600 },
    );
    const config = join(dir, 'config.json');
    await writeFile(config, JSON.stringify({ backend: { baseUrl: 'https://verifier.example/api' }, ble: { roles: 'both' } }));
    const health = join(dir, 'health.json');
    // The running host's record: a live process (this test's), rewritten just now.
    await writeFile(
      health,
      JSON.stringify({
        schema: 1,
        pid: process.pid,
        updatedAt: new Date().toISOString(),
        phase: 'ready',
        devices: { nfc: { usable: true } },
      }),
    );
    const target = join(dir, 'out', 'support.tar.gz');
    const run = await runCli(
      'src/host/cli.ts',
      ['--data-dir', data, '--config', config, '--health-file', health, '--support-bundle', target],
      { env: { MDL_KIOSK_CONFIG: '' } },
    );
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(
      /^host: support bundle written to .+ \(\d+ bytes\) by this separate process: for a running host's live state use its staff screen's Support bundle button$/m,
    );
    expect(run.stdout.startsWith(`host: support bundle written to ${target} (`)).toBe(true);
    const unpacked = join(dir, 'unpacked');
    await mkdir(unpacked);
    await extract({ file: target, cwd: unpacked });
    const names = (await readdir(join(unpacked, 'mdl-kiosk-support'))).sort();
    expect(names).toEqual([
      'README.txt',
      'config.json',
      'diagnostics.json',
      'environment.json',
      'health.json',
      'logs',
      'self-test.json',
      'state.json',
      'summary.txt',
      'versions.json',
    ]);
    // It says it is not the running kiosk (its own phase is `stopped`), and that the health record shows one running.
    const environment = JSON.parse(await readFile(join(unpacked, 'mdl-kiosk-support', 'environment.json'), 'utf8')) as {
      madeBy: string;
      note: string;
    };
    expect(environment.madeBy).toBe('separate process');
    expect(environment.note).toContain('NOT those of a running kiosk');
    expect(environment.note).toContain(
      `A kiosk IS running (process ${process.pid}, phase ready in health.json): for its live bundle use the staff screen's Diagnostics > Support bundle`,
    );
    expect(await readFile(join(unpacked, 'mdl-kiosk-support', 'summary.txt'), 'utf8')).toMatch(
      /^Made by: separate process \(made by a separate short-lived process/m,
    );
    const config2 = JSON.parse(await readFile(join(unpacked, 'mdl-kiosk-support', 'config.json'), 'utf8')) as {
      sources: Record<string, string>;
    };
    expect(config2.sources).toMatchObject({
      'backend.baseUrl': 'config file',
      'backend.apiKey': 'saved settings',
      'ble.roles': 'config file',
    });
    for (const name of names.filter((n) => n.endsWith('.json') || n.endsWith('.txt'))) {
      const text = await readFile(join(unpacked, 'mdl-kiosk-support', name), 'utf8');
      expect(text, name).not.toContain(apiKey);
      expect(text, name).not.toContain(settings.staff.pinHash);
    }
  });
});

describe('npm run host -- --support-bundle without --health-file', () => {
  // The host has no default health record: without the running host's --health-file nothing was looked at.
  // The bundle said "no running kiosk was found (health.json absent, stopped or stale)", read as "the host is down".
  it('says whether a kiosk runs is not known, and how to tell it, rather than that none runs', async () => {
    const dir = await tempDir();
    const target = join(dir, 'support.tar.gz');
    const run = await runCli('src/host/cli.ts', ['--data-dir', join(dir, 'data'), '--support-bundle', target], {
      env: { MDL_KIOSK_CONFIG: '' },
    });
    expect(run.code).toBe(0);
    const unpacked = join(dir, 'unpacked');
    await mkdir(unpacked);
    await extract({ file: target, cwd: unpacked });
    const environment = JSON.parse(await readFile(join(unpacked, 'mdl-kiosk-support', 'environment.json'), 'utf8')) as {
      madeBy: string;
      note: string;
    };
    expect(environment.madeBy).toBe('separate process');
    expect(environment.note).not.toContain('no running kiosk was found');
    expect(environment.note).toContain(
      "whether a kiosk runs is not known: no health record was given (the browser host: add the running host's --health-file)",
    );
  });
});

describe('configured devices', () => {
  it('reports what cannot be set up instead of throwing', async () => {
    const config = parseConfig({ pcsc: { reader: '/[unclosed/' }, ble: { roles: 'central' } });
    const devices = await createConfiguredDevices(config, createLogger({ level: 'silent' }), {
      loadBle: () => {
        throw new Error('no bluetooth here');
      },
    });
    try {
      expect(devices.problems).toEqual([expect.stringMatching(/^nfc \(pcsc\): /) as string, 'ble: no bluetooth here']);
      expect(devices.ports.nfc).toBeUndefined();
      expect(devices.ports.qr).toBe(devices.qr);
    } finally {
      await devices.close();
    }
  });

  it('sets up the roles of ble.roles and nothing with none', async () => {
    const asked: { central: boolean; peripheral: boolean }[] = [];
    const loadBle = (o: { central: boolean; peripheral: boolean }) => {
      asked.push({ central: o.central, peripheral: o.peripheral });
      return { problems: ['peripheral (bleno): missing'], close: () => Promise.resolve() };
    };
    for (const roles of ['both', 'central', 'peripheral', 'none'] as const) {
      const devices = await createConfiguredDevices(parseConfig({ ble: { roles } }), createLogger({ level: 'silent' }), {
        nfc: 'none',
        loadBle,
      });
      if (roles !== 'none') expect(devices.problems).toEqual(['ble peripheral (bleno): missing']);
      await devices.close();
    }
    expect(asked).toEqual([
      { central: true, peripheral: true },
      { central: true, peripheral: false },
      { central: false, peripheral: true },
    ]);
  });

  it('hands ble.usbDongle to the loader (bleno drives that dongle; on Windows the only peripheral)', async () => {
    const dongles: unknown[] = [];
    const loadBle = (o: { usbDongle?: unknown }) => {
      dongles.push(o.usbDongle);
      return { problems: [], close: () => Promise.resolve() };
    };
    for (const ble of [{ roles: 'both', usbDongle: '0a12:0001' }, { roles: 'both' }] as const) {
      const devices = await createConfiguredDevices(parseConfig({ ble }), createLogger({ level: 'silent' }), { nfc: 'none', loadBle });
      await devices.close();
    }
    expect(dongles).toEqual([{ vid: 0x0a12, pid: 0x0001 }, undefined]);
  });
});
