/**
 * The QA commands over BlueZ's emulated controllers (tools/btvirt, started here as `npm run btvirt -- start`
 * would), as processes: `npm run relay -- --devices virtual --ble hci` (the kiosk's noble and bleno adapters
 * and the virtual phone's wallet in one process, the embedded mock backend), and three processes — mock
 * backend, `npm run virtual-wallet -- --hci-dir`, and the kiosk on its production Bluetooth path
 * (`--ble noble`: the libraries' default bindings, which take the UART controller of
 * BLUETOOTH_HCI_SOCKET_UART_PORT).
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { HCI_CONTROLLER_NAMES } from '../../src/qa/hci/hci-rig.js';
import { startEmulatedRadio, type EmulatedRadio } from '../../tools/btvirt/emulated-radio.js';
import { runCli } from '../support/cli-run.js';

const pkiDir = mkdtempSync(join(tmpdir(), 'mdl-qa-pki-'));
const env = { MDL_KIOSK_QA_PKI: pkiDir };
const keyFile = join(pkiDir, 'key.txt');
writeFileSync(keyFile, 'cli-key\n');
const children: ChildProcessWithoutNullStreams[] = [];

afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

/** A QA command as a process, its stdout collected for `printed`. */
function start(script: string, args: string[]): { child: ChildProcessWithoutNullStreams; printed: (pattern: RegExp) => Promise<string> } {
  const child = spawn(process.execPath, ['--import', 'tsx', script, ...args], {
    env: { ...process.env, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  children.push(child);
  let text = '';
  child.stdout.on('data', (d: Buffer) => (text += d.toString()));
  const printed = (pattern: RegExp): Promise<string> =>
    new Promise((resolve, reject) => {
      const deadline = Date.now() + 30_000;
      const check = (): void => {
        const match = pattern.exec(text);
        if (match) resolve(match[1] ?? '');
        else if (Date.now() > deadline) reject(new Error(`no ${String(pattern)} in: ${text}`));
        else setTimeout(check, 20);
      };
      check();
    });
  return { child, printed };
}
let radio: EmulatedRadio;

beforeAll(async () => {
  radio = await startEmulatedRadio({
    controllers: Object.values(HCI_CONTROLLER_NAMES),
    dir: join(tmpdir(), `mdl-kiosk-btvirt-cli-${process.pid}`),
  });
}, 30_000);

afterAll(async () => {
  await radio.stop();
  rmSync(pkiDir, { recursive: true, force: true });
});

const results = (out: string): string[] =>
  out
    .trim()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => {
      const r = JSON.parse(l) as { result: string; outcome: { verdict: string } | null };
      return `${r.result}/${r.outcome?.verdict ?? '-'}`;
    });

describe('npm run relay -- --devices virtual --ble hci', () => {
  it('QR → kiosk central (android) twice, then NFC → kiosk peripheral (iphone): verified, exit 0; the libraries print nothing on stdout', async () => {
    const central = await runCli(
      'src/cli/relay.ts',
      ['--devices', 'virtual', '--ble', 'hci', '--hci-dir', radio.dir, '--loop', '2', '--kiosk-ble', 'central'],
      { env, stdin: '', killAfterMs: 60_000 },
    );
    expect(central.code, central.stderr).toBe(0);
    expect(results(central.stdout)).toEqual(['complete/verified', 'complete/verified']);
    expect(central.stdout.split('\n').filter((l) => l !== '' && !l.startsWith('{'))).toEqual([]);
    const peripheral = await runCli(
      'src/cli/relay.ts',
      ['--devices', 'virtual', '--ble', 'hci', '--hci-dir', radio.dir, '--phone', 'iphone', '--engage', 'nfc', '--kiosk-ble', 'peripheral'],
      {
        env,
        stdin: '',
        killAfterMs: 60_000,
      },
    );
    expect(peripheral.code, peripheral.stderr).toBe(0);
    expect(results(peripheral.stdout)).toEqual(['complete/verified']);
  }, 120_000);

  it('without an emulated radio in --hci-dir: exit 2 naming the missing ttys and how to start them', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'no-btvirt-'));
    try {
      const r = await runCli('src/cli/relay.ts', ['--devices', 'virtual', '--ble', 'hci', '--hci-dir', dir], {
        env,
        stdin: '',
        killAfterMs: 30_000,
      });
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`--ble hci: no emulated controller at ${join(dir, 'kiosk-central')}`);
      expect(r.stderr).toContain(`npm run btvirt -- start --dir ${dir}`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.each([
    ['android', 'central', 'kiosk-central'],
    ['iphone', 'peripheral', 'kiosk-peripheral'],
  ] as const)(
    'three processes: %s phone in virtual-wallet --hci-dir, relay --ble noble --kiosk-ble %s on BLUETOOTH_HCI_SOCKET_UART_PORT: verified',
    async (phone, role, tty) => {
      const backend = start('src/cli/mock-backend.ts', ['--port', '0', '--api-key', 'cli-key', '--protocol-log', 'off']);
      const url = await backend.printed(/^(http:\/\/127\.0\.0\.1:\d+)\s*$/m);
      const wallet = start('src/cli/virtual-wallet.ts', ['--hci-dir', radio.dir, '--profile', phone]);
      await wallet.printed(/(ready): /);
      wallet.child.stdin.write('qr\n');
      const qr = await wallet.printed(/qr: (mdoc:\S+)/);
      const relay = await runCli(
        'src/cli/relay.ts',
        ['--ble', 'noble', '--kiosk-ble', role, '--qr', qr, '--backend', url, '--api-key-file', keyFile],
        {
          env: { ...env, BLUETOOTH_HCI_SOCKET_UART_PORT: join(radio.dir, tty) },
          stdin: '',
          killAfterMs: 60_000,
        },
      );
      expect(relay.code, relay.stderr).toBe(0);
      expect(results(relay.stdout)).toEqual(['complete/verified']);
      expect(await wallet.printed(/presentation ended: (\w+)/)).toBe('shared');
      wallet.child.stdin.end('quit\n');
    },
    90_000,
  );
});
