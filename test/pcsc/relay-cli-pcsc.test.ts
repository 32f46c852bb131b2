/**
 * `npm run relay -- --nfc pcsc` as a process, against a private pcscd: the virtual customer lays the
 * phone on the vpcd reader (`--vpcd`), the kiosk reads it through the PC/SC adapter (`--reader`).
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPrivatePcscd, type PrivatePcscd } from '../../tools/pcscd/pcscd-daemon.js';
import { runCli, type CliRun } from '../support/cli-run.js';

const pkiDir = mkdtempSync(join(tmpdir(), 'mdl-qa-pki-'));
let pcscd: PrivatePcscd;
const children: ChildProcess[] = [];

beforeAll(async () => {
  pcscd = await startPrivatePcscd({ readers: 2 });
}, 30_000);

afterAll(async () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  await pcscd.stop();
  rmSync(pkiDir, { recursive: true, force: true });
});

const relay = (args: string[]): Promise<CliRun> =>
  runCli('src/cli/relay.ts', args, {
    env: { MDL_KIOSK_QA_PKI: pkiDir, PCSCLITE_CSOCK_NAME: pcscd.socketPath },
    stdin: '',
    killAfterMs: 90_000,
    onSpawn: (child) => children.push(child),
  });

describe('npm run relay -- --nfc pcsc', () => {
  it('runs two NFC verifications through pcscd on the reader named by --reader, exit 0', async () => {
    const reader = pcscd.readers[1];
    if (!reader) throw new Error('no second reader');
    const run = await relay([
      '--devices',
      'virtual',
      '--nfc',
      'pcsc',
      '--reader',
      reader.name,
      '--vpcd',
      `127.0.0.1:${reader.port}`,
      '--engage',
      'nfc',
      '--loop',
      '2',
    ]);
    expect(run.stderr).toContain(`PC/SC: using ${reader.name}`);
    expect(run.code, run.stderr).toBe(0);
    const lines = run.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { result: string; transport: string; outcome: { verdict: string } | null });
    expect(lines).toHaveLength(2);
    for (const line of lines) {
      expect(line.result).toBe('complete');
      expect(line.transport).toBe('nfc');
      expect(line.outcome?.verdict).toBe('verified');
    }
  });

  it('refuses --devices virtual --nfc pcsc without --vpcd, and --reader without --nfc pcsc (exit 2)', async () => {
    const noVpcd = await relay(['--devices', 'virtual', '--nfc', 'pcsc']);
    expect(noVpcd.code).toBe(2);
    expect(noVpcd.stderr).toContain('needs --vpcd');
    const stray = await relay(['--devices', 'virtual', '--reader', 'X']);
    expect(stray.code).toBe(2);
    expect(stray.stderr).toContain('--reader goes with --nfc pcsc');
  });
});
