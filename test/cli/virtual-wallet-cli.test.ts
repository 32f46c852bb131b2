/**
 * `npm run virtual-wallet` as a process, against a fake vpcd (test/support/fake-vpcd.ts): stdin commands,
 * one line per event on stdout, exit status 0 after quit or a signal, 2 on usage errors.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeVpcd, toHex, unusedPort } from '../support/fake-vpcd.js';

const pkiDir = mkdtempSync(join(tmpdir(), 'mdl-qa-pki-'));
const env = { ...process.env, MDL_KIOSK_QA_PKI: pkiDir };
const SELECT_NDEF = '00A4040007D276000085010100';

interface Wallet {
  readonly child: ChildProcessWithoutNullStreams;
  readonly exited: Promise<number | null>;
  stdout: string;
  stderr: string;
  send(line: string): void;
  /** Resolves once stdout matches. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<void>;
}

const children: ChildProcessWithoutNullStreams[] = [];
let vpcd: FakeVpcd;

beforeEach(async () => {
  vpcd = await FakeVpcd.start();
});
afterEach(async () => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await vpcd.close();
});
afterAll(() => rmSync(pkiDir, { recursive: true, force: true }));

function startWallet(args: string[]): Wallet {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/virtual-wallet.ts', ...args], {
    env,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  children.push(child);
  const wallet: Wallet = {
    child,
    stdout: '',
    stderr: '',
    exited: new Promise((resolve) => child.on('exit', (code) => resolve(code))),
    send: (line) => child.stdin.write(`${line}\n`),
    waitFor: (pattern, timeoutMs = 30_000) =>
      new Promise<void>((resolve, reject) => {
        const check = (): void => {
          if (!pattern.test(wallet.stdout)) return;
          clearTimeout(timer);
          child.stdout.off('data', check);
          resolve();
        };
        const timer = setTimeout(() => {
          child.stdout.off('data', check);
          reject(new Error(`stdout never matched ${String(pattern)}:\n${wallet.stdout}\n${wallet.stderr}`));
        }, timeoutMs);
        child.stdout.on('data', check);
        check();
      }),
  };
  child.stdout.on('data', (d: Buffer) => (wallet.stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (wallet.stderr += d.toString()));
  return wallet;
}

describe('npm run virtual-wallet', () => {
  it('tap → the card is on the reader: ATR, SELECT NDEF 9000; remove → gone; quit → exit 0', async () => {
    const wallet = startWallet(['--vpcd', vpcd.address, '--profile', 'android']);
    await wallet.waitFor(/ready: android phone/);
    expect(wallet.stderr).toContain('needs the phone and the kiosk on one radio');
    wallet.send('tap');
    const card = await vpcd.nextCard(30_000);
    expect(toHex(await card.getAtr())).toBe('3B80800101');
    expect(toHex(await card.transmit(SELECT_NDEF))).toBe('9000');
    await wallet.waitFor(/APDU #1 00A40400 \(13 bytes\) → 9000/);
    wallet.send('status');
    await wallet.waitFor(/status: on the reader .*1 APDU\(s\)/);
    wallet.send('remove');
    await card.closed;
    await wallet.waitFor(/card removed \(taken away\) after 1 APDU/);
    wallet.send('quit');
    expect(await wallet.exited).toBe(0);
    // Headers only: the AID (command data) never shows.
    expect(wallet.stdout).not.toContain('D2760000850101');
  }, 60_000);

  it('--tap taps at start; SIGTERM takes the phone away and exits 0', async () => {
    const wallet = startWallet(['--vpcd', vpcd.address, '--phone', 'iphone', '--tap']);
    const card = await vpcd.nextCard(30_000);
    expect(toHex(await card.transmit(SELECT_NDEF))).toBe('9000');
    await wallet.waitFor(/APDU #1/);
    wallet.child.kill('SIGTERM');
    await card.closed;
    expect(await wallet.exited).toBe(0);
    expect(wallet.stdout).toContain('terminated: taking the phone away');
  }, 60_000);

  it("--profile samsung-wallet: the card answers with Samsung's captured CC (read-only: static handover)", async () => {
    const wallet = startWallet(['--vpcd', vpcd.address, '--profile', 'samsung-wallet', '--tap']);
    const card = await vpcd.nextCard(30_000);
    expect(toHex(await card.transmit(SELECT_NDEF))).toBe('9000');
    expect(toHex(await card.transmit('00A4000C02E103'))).toBe('9000');
    expect(toHex(await card.transmit('00B000000F'))).toBe('000F207FFF7FFF0406E1047FFF00FF9000');
    await wallet.waitFor(/APDU #3/);
    wallet.send('quit');
    expect(await wallet.exited).toBe(0);
  }, 60_000);

  it('--help lists every profile; an unknown --profile exits 2 naming them', async () => {
    const help = startWallet(['--help']);
    expect(await help.exited).toBe(0);
    for (const name of ['android', 'iphone', 'apple-wallet', 'google-wallet', 'samsung-wallet', 'multipaz'])
      expect(help.stdout).toMatch(new RegExp(`^ +${name} +\\S`, 'm'));
    const wrong = startWallet(['--vpcd', vpcd.address, '--profile', 'nokia']);
    expect(await wrong.exited).toBe(2);
    expect(wrong.stderr).toContain('--profile takes android | iphone | apple-wallet | google-wallet | samsung-wallet | multipaz');
  }, 60_000);

  it('a bad --vpcd value: exit 2 with a clear message', async () => {
    const wallet = startWallet(['--vpcd', '127.0.0.1:99999']);
    expect(await wallet.exited).toBe(2);
    expect(wallet.stderr).toContain('virtual-wallet: --vpcd: invalid vpcd address "127.0.0.1:99999": port 99999 is not in 1..65535');
  }, 30_000);

  it('--tap with nothing listening: exit 2 saying no vpcd reader is there', async () => {
    const port = await unusedPort();
    const wallet = startWallet(['--vpcd', `127.0.0.1:${port}`, '--tap']);
    expect(await wallet.exited).toBe(2);
    expect(wallet.stderr).toContain(`no vpcd reader listening on 127.0.0.1:${port} — is pcscd with vsmartcard-vpcd running?`);
  }, 60_000);
});
