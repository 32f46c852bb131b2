import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createConfiguredDevices } from '../../../src/devices/configured-devices.js';
import { parseConfig } from '../../../src/kiosk/config.js';
import { createLogger } from '../../../src/kiosk/log.js';
import { verifyPin } from '../../../src/service/staff-pin.js';
import { runCli } from '../../support/cli-run.js';

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
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/host/cli.ts', '--config', config, '--data-dir', dir, '--nfc', 'none', '--log-level', 'warn'], {
      env: Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('MDL_KIOSK_'))),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
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
      const devices = await createConfiguredDevices(parseConfig({ ble: { roles } }), createLogger({ level: 'silent' }), { nfc: 'none', loadBle });
      if (roles !== 'none') expect(devices.problems).toEqual(['ble peripheral (bleno): missing']);
      await devices.close();
    }
    expect(asked).toEqual([
      { central: true, peripheral: true },
      { central: true, peripheral: false },
      { central: false, peripheral: true },
    ]);
  });
});
