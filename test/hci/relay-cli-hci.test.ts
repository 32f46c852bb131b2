/**
 * `npm run relay -- --devices virtual --ble hci` as a process: the kiosk's noble and bleno adapters on
 * BlueZ's emulated controllers (tools/btvirt, started here as `npm run btvirt -- start` would) and the
 * virtual phone's wallet on the other two, against the embedded mock backend.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HCI_CONTROLLER_NAMES } from '../../src/qa/hci/hci-rig.js';
import { startEmulatedRadio, type EmulatedRadio } from '../../tools/btvirt/emulated-radio.js';
import { runCli } from '../support/cli-run.js';

const pkiDir = mkdtempSync(join(tmpdir(), 'mdl-qa-pki-'));
const env = { MDL_KIOSK_QA_PKI: pkiDir };
let radio: EmulatedRadio;

beforeAll(async () => {
  radio = await startEmulatedRadio({ controllers: Object.values(HCI_CONTROLLER_NAMES), dir: join(tmpdir(), `mdl-kiosk-btvirt-cli-${process.pid}`) });
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
    const central = await runCli('src/cli/relay.ts', ['--devices', 'virtual', '--ble', 'hci', '--hci-dir', radio.dir, '--loop', '2', '--kiosk-ble', 'central'], { env, stdin: '', killAfterMs: 60_000 });
    expect(central.code, central.stderr).toBe(0);
    expect(results(central.stdout)).toEqual(['complete/verified', 'complete/verified']);
    expect(central.stdout.split('\n').filter((l) => l !== '' && !l.startsWith('{'))).toEqual([]);
    const peripheral = await runCli('src/cli/relay.ts', ['--devices', 'virtual', '--ble', 'hci', '--hci-dir', radio.dir, '--phone', 'iphone', '--engage', 'nfc', '--kiosk-ble', 'peripheral'], {
      env,
      stdin: '',
      killAfterMs: 60_000,
    });
    expect(peripheral.code, peripheral.stderr).toBe(0);
    expect(results(peripheral.stdout)).toEqual(['complete/verified']);
  }, 120_000);

  it('without an emulated radio in --hci-dir: exit 2 naming the missing ttys and how to start them', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'no-btvirt-'));
    try {
      const r = await runCli('src/cli/relay.ts', ['--devices', 'virtual', '--ble', 'hci', '--hci-dir', dir], { env, stdin: '', killAfterMs: 30_000 });
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`--ble hci: no emulated controller at ${join(dir, 'kiosk-central')}`);
      expect(r.stderr).toContain(`npm run btvirt -- start --dir ${dir}`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
