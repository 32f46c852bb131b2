/**
 * Three processes, as QA runs them: `npm run mock-backend`, `npm run virtual-wallet -- --radio-link 0`
 * (the phone and its radio) and `npm run relay -- --ble noble --radio-link …` (the kiosk's noble and bleno
 * reach the phone's radio over the loopback link). The phone shows a QR code; the kiosk verifies it.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli-run.js';

const dir = mkdtempSync(join(tmpdir(), 'mdl-radio-link-cli-'));
const env = { ...process.env, MDL_KIOSK_QA_PKI: join(dir, 'qa-pki') };
const keyFile = join(dir, 'key.txt');
writeFileSync(keyFile, 'cli-key\n');
const children: ChildProcessWithoutNullStreams[] = [];

afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const outputs = new Map<ChildProcessWithoutNullStreams, { text: string }>();

function start(script: string, args: string[]): ChildProcessWithoutNullStreams {
  const child = spawn(process.execPath, ['--import', 'tsx', script, ...args], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  children.push(child);
  const output = { text: '' };
  outputs.set(child, output);
  child.stdout.on('data', (d: Buffer) => (output.text += d.toString()));
  return child;
}

/** The first match of `pattern` in everything the process has printed on stdout (waiting for it). */
function printed(child: ChildProcessWithoutNullStreams, pattern: RegExp, ms = 30_000): Promise<RegExpExecArray> {
  const output = outputs.get(child) ?? { text: '' };
  return new Promise((resolve, reject) => {
    const check = (): boolean => {
      const match = pattern.exec(output.text);
      if (!match) return false;
      clearTimeout(timer);
      child.stdout.off('data', onData);
      resolve(match);
      return true;
    };
    const onData = (): void => void setImmediate(check);
    const timer = setTimeout(() => {
      child.stdout.off('data', onData);
      reject(new Error(`no ${String(pattern)} in: ${output.text}`));
    }, ms);
    if (!check()) child.stdout.on('data', onData);
  });
}

describe('the phone in its own process over the radio link', () => {
  it.each(['android', 'iphone'] as const)(
    '%s: QR shown by virtual-wallet, verified by relay --ble noble --radio-link (exit 0)',
    async (phone) => {
      const backend = start('src/cli/mock-backend.ts', ['--port', '0', '--api-key', 'cli-key', '--protocol-log', 'off']);
      const url = (await printed(backend, /^(http:\/\/127\.0\.0\.1:\d+)\s*$/m))[1] ?? '';
      const wallet = start('src/cli/virtual-wallet.ts', ['--radio-link', '0', '--profile', phone]);
      const port = (await printed(wallet, /radio link on 127\.0\.0\.1:(\d+)/))[1] ?? '';
      const qr = printed(wallet, /qr: (mdoc:\S+)/);
      wallet.stdin.write('qr\n');
      const text = (await qr)[1] ?? '';
      const relay = await runCli(
        'src/cli/relay.ts',
        ['--ble', 'noble', '--radio-link', `127.0.0.1:${port}`, '--qr', text, '--backend', url, '--api-key-file', keyFile],
        { env, stdin: '' },
      );
      expect(relay.code, relay.stderr).toBe(0);
      const report = JSON.parse(relay.stdout.trim().split('\n')[0] ?? '{}') as { result?: string; outcome?: { verdict?: string } };
      expect(report).toMatchObject({ result: 'complete', outcome: { verdict: 'verified' } });
      const ended = printed(wallet, /presentation ended: (\w+)/);
      expect((await ended)[1]).toBe('shared');
      wallet.stdin.end('quit\n');
    },
    90_000,
  );

  it('the radio process (ble.process separate, the default) prints native-style text: logged, never on stdout, which keeps one JSON line', async () => {
    const backend = start('src/cli/mock-backend.ts', ['--port', '0', '--api-key', 'cli-key', '--protocol-log', 'off']);
    const url = (await printed(backend, /^(http:\/\/127\.0\.0\.1:\d+)\s*$/m))[1] ?? '';
    const wallet = start('src/cli/virtual-wallet.ts', ['--radio-link', '0', '--profile', 'android']);
    const port = (await printed(wallet, /radio link on 127\.0\.0\.1:(\d+)/))[1] ?? '';
    const qr = printed(wallet, /qr: (mdoc:\S+)/);
    wallet.stdin.write('qr\n');
    const text = (await qr)[1] ?? '';
    const relay = await runCli(
      'src/cli/relay.ts',
      [
        '--ble',
        'noble',
        '--kiosk-ble',
        'central',
        '--radio-link',
        `127.0.0.1:${port}`,
        '--qr',
        text,
        '--backend',
        url,
        '--api-key-file',
        keyFile,
        '--log-level',
        'warn',
      ],
      { env: { ...env, MDL_KIOSK_QA_RADIO_STRAY_OUTPUT: '1' }, stdin: '' },
    );
    expect(relay.code, relay.stderr).toBe(0);
    const lines = relay.stdout.split('\n').filter((l) => l !== '');
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0] ?? '{}')).toMatchObject({ result: 'complete', outcome: { verdict: 'verified' } });
    // The child's printf went to the log (stderr, JSON), escaped; the phone-address-like text never to stdout.
    expect(relay.stdout).not.toContain('BLEManager');
    expect(relay.stderr).toMatch(/"event":"ble_library_output".*"library":"radio-process".*"stream":"stdout"/);
    wallet.stdin.end('quit\n');
  }, 90_000);
});
