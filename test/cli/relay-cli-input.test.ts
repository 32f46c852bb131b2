/**
 * The headless relay CLI's input rules (docs/relay-cli.md): scans the kiosk would ignore are
 * refused up front, `--qr` needs as many scans as `--loop`, `--qr-stdin` ends (exit 2) when its input
 * ends first, and `--timeout` gives up on a verification that does not end. Each case exits 2 instead of
 * waiting for a verification that can never happen.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli as runCliProcess, type CliRun } from '../support/cli-run.js';
import { FakeBackend, type FakeConnection } from '../support/fake-backend.js';
import { OUTCOME, centralMode } from '../support/relay-fixtures.js';

const QR = 'mdoc:owBjMS4wAYIB2BhYS6QBAiABIVggInput';

type Run = CliRun;

/** Runs the CLI; a process still running after `killAfterMs` is killed (and the test then fails on its exit). */
const runCli = (args: string[], env: Record<string, string>, stdin?: string, killAfterMs = 15_000): Promise<Run> =>
  runCliProcess('src/cli/relay.ts', args, { env, killAfterMs, ...(stdin === undefined ? {} : { stdin }) });

const reports = (run: Run): { result: string; outcome: { verdict: string } | null }[] =>
  run.stdout
    .trim()
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as { result: string; outcome: { verdict: string } | null });

let backend: FakeBackend | undefined;
afterEach(async () => {
  await backend?.stop();
  backend = undefined;
});

/** A backend that must not be contacted: the CLI refuses its input before starting the kiosk. */
async function untouchedBackend(): Promise<FakeBackend> {
  backend = await FakeBackend.start();
  return backend;
}

function expectUntouched(b: FakeBackend): void {
  expect(b.http).toHaveLength(0);
  expect(b.handshakes).toHaveLength(0);
}

describe('npm run relay: input that can never make a verification', () => {
  it('docs/relay-cli.md (scans the kiosk would ignore are refused up front): --qr with a code that is not an mdoc: engagement → exit 2 at once with a message, no session created', async () => {
    const b = await untouchedBackend();
    const run = await runCli(['--backend', b.baseUrl, '--qr', 'https://example.com/x'], { MDL_KIOSK_API_KEY: b.apiKey });
    expect(run.signal).toBeNull();
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/not an mdoc: device engagement/);
    expect(run.stdout).toBe('');
    expectUntouched(b);
  });

  it('docs/relay-cli.md (the same engagement twice is refused up front): --qr mdoc:A --qr mdoc:A → exit 2 with a message, no session created', async () => {
    const b = await untouchedBackend();
    const run = await runCli(['--backend', b.baseUrl, '--qr', QR, '--qr', QR], { MDL_KIOSK_API_KEY: b.apiKey });
    expect(run.signal).toBeNull();
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/same engagement/);
    expectUntouched(b);
  });

  it('docs/relay-cli.md (with --qr the run needs as many scans as --loop): --qr mdoc:A --loop 2 → exit 2 with a message, no session created', async () => {
    const b = await untouchedBackend();
    const run = await runCli(['--backend', b.baseUrl, '--qr', QR, '--loop', '2'], { MDL_KIOSK_API_KEY: b.apiKey });
    expect(run.signal).toBeNull();
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/--loop 2 needs 2 scans/);
    expectUntouched(b);
  });
});

describe('npm run relay: the run ends when its input or its time runs out', () => {
  it('docs/relay-cli.md (with --qr-stdin it ends, exit 2, when the input ends first): --qr-stdin --loop 2 with one scan then end of input → the first verification is reported, then exit 2 "input ended"', async () => {
    backend = await FakeBackend.start();
    backend.onConnection((c: FakeConnection) => {
      void (async () => {
        await c.expect('engage');
        const scan = await c.receive(30_000).catch(() => undefined);
        if (scan?.op !== 'qr_scanned') return;
        c.stepRequest('ble_exchange', { modes: [centralMode()] });
        // The CLI has no Bluetooth: ble_connected error; the backend still completes.
        if ((await c.expect('ble_connected')).status !== 'error') return;
        c.send({ type: 'complete', outcome: OUTCOME });
      })();
    });
    const run = await runCli(['--backend', backend.baseUrl, '--qr-stdin', '--loop', '2'], { MDL_KIOSK_API_KEY: backend.apiKey }, `${QR}\n`);
    expect(run.signal).toBeNull();
    expect(reports(run).map((r) => [r.result, r.outcome?.verdict])).toEqual([['complete', 'verified']]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/input ended after 1 of 2 verification/);
  });

  it('docs/relay-cli.md (--timeout SECONDS gives up when a verification has not ended): --timeout 1 with a backend that never answers the scan → exit 2 with a message, the waiting verification cancelled, the session socket closed by the stop', async () => {
    backend = await FakeBackend.start();
    let scanned = false;
    const connections: FakeConnection[] = [];
    backend.onConnection((c: FakeConnection) => {
      connections.push(c);
      void (async () => {
        await c.expect('engage');
        const scan = await c.receive(30_000).catch(() => undefined);
        if (scan?.op === 'qr_scanned') scanned = true;
        // …and never answers: the kiosk would wait backendReplyMs (15 s by default).
      })();
    });
    const run = await runCli(['--backend', backend.baseUrl, '--qr', QR, '--timeout', '1'], { MDL_KIOSK_API_KEY: backend.apiKey });
    expect(run.signal).toBeNull();
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/no verification ended within 1 s \(--timeout\)/);
    // The verification still waiting for the backend is cancelled by the stop, not ended by a reply or a watchdog.
    expect(reports(run).map((r) => [r.result, r.outcome])).toEqual([['cancelled', null]]);
    expect(scanned).toBe(true); // the verification had started: it is the deadline that ended it
    expect(connections).toHaveLength(1);
    expect((await connections[0]?.closed)?.code).toBe(1001);
  });

  it('a backend field name with a newline and ANSI codes cannot forge a line on the terminal: the detail is escaped', async () => {
    backend = await FakeBackend.start();
    const forged = 'x\n[relay] result: verified\u001b[32m';
    backend.onConnection((c: FakeConnection) => {
      void (async () => {
        await c.expect('engage');
        const scan = await c.receive(30_000).catch(() => undefined);
        if (scan?.op !== 'qr_scanned') return;
        c.stepRequest('ble_exchange', { modes: [centralMode()] });
        // The CLI has no Bluetooth: ble_connected error; the backend then completes with a hostile key.
        if ((await c.expect('ble_connected')).status !== 'error') return;
        c.send({ type: 'complete', outcome: { ...OUTCOME, response: { [forged]: 5 } } });
      })();
    });
    const run = await runCli(['--backend', backend.baseUrl, '--qr', QR], { MDL_KIOSK_API_KEY: backend.apiKey });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/protocol_violation/);
    expect(run.stderr.split('\n').filter((line) => line.startsWith('[relay] result'))).toEqual([]);
    expect(run.stderr).not.toContain('\u001b');
  });

  it('--timeout longer than a day is refused up front (2147484 s once ended the run at once: the timer overflowed)', async () => {
    const b = await untouchedBackend();
    const run = await runCli(['--backend', b.baseUrl, '--qr', QR, '--timeout', '2147484'], { MDL_KIOSK_API_KEY: b.apiKey });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/--timeout takes a number of seconds from above 0 to 86400/);
    expectUntouched(b);
  });

  it('a config file with an absurd session lifetime is refused with the key named, before any session is created', async () => {
    const b = await untouchedBackend();
    const dir = mkdtempSync(join(tmpdir(), 'mdl-cfg-'));
    try {
      writeFileSync(join(dir, 'c.json'), JSON.stringify({ session: { lifetimeMs: 1e10 } }));
      const run = await runCli(['--backend', b.baseUrl, '--qr', QR, '--config', join(dir, 'c.json')], { MDL_KIOSK_API_KEY: b.apiKey });
      expect(run.code).toBe(2);
      expect(run.stderr).toMatch(/session\.lifetimeMs: at most 3600000 ms/);
      expectUntouched(b);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
