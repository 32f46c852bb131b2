/**
 * The QA commands as processes: `npm run relay -- --devices virtual` (a counter with no hardware, the
 * embedded mock backend or an external one) and `npm run mock-backend`, sharing the QA PKI.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { runCli, type CliRun } from '../support/cli-run.js';

const pkiDir = mkdtempSync(join(tmpdir(), 'mdl-qa-pki-'));
const env = { ...process.env, MDL_KIOSK_QA_PKI: pkiDir };
const children: ChildProcess[] = [];

afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});
afterAll(() => rmSync(pkiDir, { recursive: true, force: true }));

const run = (script: string, args: string[], timeoutMs = 60_000): Promise<CliRun> =>
  runCli(script, args, { env, killAfterMs: timeoutMs, stdin: '', onSpawn: (child) => children.push(child) });

function reports(out: string): { result: string; transport: string; outcome: { verdict: string } | null }[] {
  return out
    .trim()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { result: string; transport: string; outcome: { verdict: string } | null });
}

describe('npm run relay -- --devices virtual', () => {
  it('QR with the embedded mock backend: verified, exit 0', async () => {
    const r = await run('src/cli/relay.ts', ['--devices', 'virtual', '--profile', 'identity']);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('embedded mock backend');
    const [report] = reports(r.stdout);
    expect(report).toMatchObject({ result: 'complete', transport: 'qr', outcome: { verdict: 'verified' } });
  }, 90_000);

  it('NFC on an iphone, twice, with a field drop and re-tap in each: verified twice', async () => {
    const r = await run('src/cli/relay.ts', [
      '--devices',
      'virtual',
      '--phone',
      'iphone',
      '--engage',
      'nfc',
      '--loop',
      '2',
      '--field-drop-at',
      '3',
    ]);
    expect(r.code).toBe(0);
    const all = reports(r.stdout);
    expect(all.map((x) => x.outcome?.verdict)).toEqual(['verified', 'verified']);
    expect(r.stderr).toContain('awaiting_card');
  }, 90_000);

  it('a declined presentation exits 1; a tampered credential too', async () => {
    expect((await run('src/cli/relay.ts', ['--devices', 'virtual', '--decline'])).code).toBe(1);
    // The tampered element (family_name) must be requested: an undisclosed element's digest is never checked.
    expect((await run('src/cli/relay.ts', ['--devices', 'virtual', '--credential', 'tampered', '--profile', 'identity'])).code).toBe(1);
  }, 90_000);

  it('--ble noble: QR on an android phone (noble central) and NFC on an iphone (bleno peripheral), verified', async () => {
    const qr = await run('src/cli/relay.ts', ['--devices', 'virtual', '--ble', 'noble', '--phone', 'android', '--kiosk-ble', 'central']);
    expect(qr.code, qr.stderr).toBe(0);
    expect(reports(qr.stdout)[0]?.outcome?.verdict).toBe('verified');
    const nfc = await run('src/cli/relay.ts', ['--devices', 'virtual', '--ble', 'noble', '--phone', 'iphone', '--engage', 'nfc']);
    expect(nfc.code, nfc.stderr).toBe(0);
    expect(reports(nfc.stdout)[0]).toMatchObject({ transport: 'nfc', outcome: { verdict: 'verified' } });
    expect(`${qr.stderr}${nfc.stderr}`).not.toMatch(/warning/i);
  }, 90_000);

  it('--ble none leaves the kiosk without Bluetooth: the verification ends at the BLE step (exit 2), and the last line names Bluetooth, not the backend', async () => {
    const r = await run('src/cli/relay.ts', ['--devices', 'virtual', '--ble', 'none']);
    expect(r.code).toBe(2);
    const [report] = reports(r.stdout);
    expect(report).toMatchObject({ result: 'ble_failed', outcome: null });
    expect(r.stdout).not.toContain('backend_error');
  }, 90_000);

  it('--nfc none is honoured with --devices virtual: an NFC engagement is refused up front (exit 2) instead of tapping the virtual reader anyway', async () => {
    const refused = await run('src/cli/relay.ts', ['--devices', 'virtual', '--nfc', 'none', '--engage', 'nfc']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/--engage nfc needs an NFC reader/);
    expect(reports(refused.stdout)).toEqual([]);
  }, 90_000);

  it('a phone fault that cannot apply to the run is said, not silently ignored', async () => {
    const r = await run('src/cli/relay.ts', [
      '--devices',
      'virtual',
      '--engage',
      'qr',
      '--field-drop-at',
      '2',
      '--kiosk-ble',
      'central',
      '--wrong-ident',
    ]);
    expect(r.stderr).toMatch(/note: --field-drop-at has no effect with --engage qr/);
    expect(r.stderr).toMatch(/note: --wrong-ident has no effect with --kiosk-ble central/);
    expect(r.code).toBe(0);
  }, 90_000);

  it("a config file's log.level stands when --log-level is not given; the flag still wins", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mdl-relay-cfg-'));
    try {
      const file = join(dir, 'config.json');
      writeFileSync(file, JSON.stringify({ log: { level: 'info' } }));
      const fromFile = await run('src/cli/relay.ts', ['--devices', 'virtual', '--config', file]);
      expect(fromFile.code).toBe(0);
      expect(fromFile.stderr).toContain('"event":"kiosk_configured"');
      const flag = await run('src/cli/relay.ts', ['--devices', 'virtual', '--config', file, '--log-level', 'warn']);
      expect(flag.code).toBe(0);
      expect(flag.stderr).not.toContain('"event":"kiosk_configured"');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it('refuses --qr with --devices virtual', async () => {
    const r = await run('src/cli/relay.ts', ['--devices', 'virtual', '--qr', 'mdoc:x']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/do not go with --devices virtual/);
  });
});

describe('npm run mock-backend + npm run relay -- --devices virtual in separate processes', () => {
  it('the backend trusts the QA PKI by default; the phone of the other process verifies against it', async () => {
    const backend = spawn(
      process.execPath,
      ['--import', 'tsx', 'src/cli/mock-backend.ts', '--port', '0', '--api-key', 'cli-key', '--protocol-log', 'off'],
      {
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    children.push(backend);
    const url = await new Promise<string>((resolve, reject) => {
      let out = '';
      backend.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        const line = out.split('\n')[0];
        if (out.includes('\n') && line) resolve(line.trim());
      });
      backend.on('exit', (code) => reject(new Error(`mock backend exited ${String(code)}`)));
    });
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const keyFile = join(pkiDir, 'key.txt');
    writeFileSync(keyFile, 'cli-key\n');
    const r = await run('src/cli/relay.ts', ['--devices', 'virtual', '--engage', 'nfc', '--backend', url, '--api-key-file', keyFile]);
    expect(r.code).toBe(0);
    expect(r.stderr).not.toContain('embedded mock backend');
    expect(reports(r.stdout)[0]?.outcome?.verdict).toBe('verified');
    const exited = new Promise<number | null>((resolve) => backend.on('exit', (code) => resolve(code)));
    backend.kill('SIGTERM');
    expect(await exited).toBe(0);
  }, 120_000);

  it('mock-backend refuses to start without an API key and with a bad fault flag', async () => {
    expect((await run('src/cli/mock-backend.ts', ['--port', '0'])).code).toBe(2);
    const bad = await run('src/cli/mock-backend.ts', ['--port', '0', '--api-key', 'k', '--close-at', 'nowhere']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/invalid fault/);
  });
});
