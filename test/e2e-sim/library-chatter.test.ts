/**
 * What noble and bleno print (issue 12): their hci bindings `console.log` a warning when the adapter is
 * unsupported or unauthorized, which broke the relay CLI's contract of one JSON line per verification on
 * stdout. The relay runs here with `--ble noble` on this machine's own stack through the real libraries;
 * on a machine without Bluetooth LE (CI) that is exactly their warning path. The lines go to the log
 * (JSON on stderr) instead.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli-run.js';
import { FakeBackend } from '../support/fake-backend.js';
import { centralMode } from '../support/relay-fixtures.js';

const QR = 'mdoc:owBjMS4wAYIB2BhYS6QBAiABIVgg';

let backend: FakeBackend | undefined;
afterEach(async () => {
  await backend?.stop();
  backend = undefined;
});

describe('relay CLI with noble and bleno on this machine', () => {
  it('stdout holds exactly one JSON line per verification; the libraries’ warnings are log records on stderr', async () => {
    backend = await FakeBackend.start();
    backend.onConnection((c) => {
      void (async () => {
        await c.expect('engage');
        const scan = await c.receive(30_000).catch(() => undefined);
        if (scan?.op !== 'qr_scanned') return;
        c.stepRequest('ble_exchange', { modes: [centralMode()] });
        await c.expect('ble_connected');
        c.send({ type: 'error', message: 'no BLE' });
      })();
    });
    const run = await runCli('src/cli/relay.ts', ['--backend', backend.baseUrl, '--qr', QR, '--ble', 'noble', '--log-level', 'debug'], {
      env: { MDL_KIOSK_API_KEY: backend.apiKey },
      killAfterMs: 30_000,
    });
    const lines = run.stdout.split('\n').filter((l) => l !== '');
    expect(lines, run.stdout).toHaveLength(1);
    expect((JSON.parse(lines[0] as string) as { transport: string }).transport).toBe('qr');
    const records = run.stderr
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const library = records.filter((r) => r.event === 'ble_library_output');
    // Where the libraries found no usable adapter (no AF_BLUETOOTH, as on CI) they said so, and it was logged.
    if (/no_adapter|unsupported/.test(run.stderr)) {
      expect(library.map((r) => r.msg)).toEqual(
        expect.arrayContaining([expect.stringMatching(/^(noble|Bleno) warning: adapter does not support/)]),
      );
      expect(library.every((r) => r.component === 'ble' && (r.library === 'noble' || r.library === 'bleno'))).toBe(true);
    }
    expect(run.stderr).not.toMatch(/^(noble|Bleno) warning/m);
  });
});
