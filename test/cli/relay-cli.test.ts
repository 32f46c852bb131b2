/**
 * The headless relay CLI as a process: flags, progress on stderr, one JSON line per verification on
 * stdout, exit status 0 verified and met / 1 rejected / 2 error / 3 authentic but the request not met.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { runCli as runCliProcess, type CliRun } from '../support/cli-run.js';
import { FakeBackend, type FakeConnection } from '../support/fake-backend.js';

const QR = 'mdoc:owBjMS4wAYIB2BhYS6QBAiABIVgg';
const MODE = {
  role: 'central',
  service_uuid: '6c1e2f3a-9b8d-4e5f-a1b2-c3d4e5f60718',
  characteristics: {
    state: { uuid: '00000001-a123-48ce-896b-4c76973373e6', operations: ['notify', 'write_without_response'], permissions: ['writeable'] },
    c2s: { uuid: '00000002-a123-48ce-896b-4c76973373e6', operations: ['write_without_response'], permissions: ['writeable'] },
    s2c: { uuid: '00000003-a123-48ce-896b-4c76973373e6', operations: ['notify'], permissions: [] },
  },
};

function outcome(verified: boolean): Record<string, unknown> {
  return {
    response: { 'org.iso.18013.5.1': { age_over_21: verified } },
    doc_types: ['org.iso.18013.5.1.mDL'],
    issuer_authentication: verified ? 'Valid' : 'Invalid',
    device_authentication: 'Valid',
    errors: verified ? {} : { 'org.iso.18013.5.1': { issuer: 'signature invalid' } },
    warnings: {},
  };
}

type Run = CliRun;

const runCli = (args: string[], env: Record<string, string>, stdin?: string): Promise<Run> =>
  runCliProcess('src/cli/relay.ts', args, { env, ...(stdin === undefined ? {} : { stdin }) });

/** Backend script: QR → ble_exchange → (kiosk has no BLE, replies ble_connected error) → `finish`. */
function scriptQr(backend: FakeBackend, finish: (c: FakeConnection) => void): void {
  backend.onConnection((c) => {
    void (async () => {
      await c.expect('engage');
      const scan = await c.receive(30_000).catch(() => undefined);
      if (scan?.op !== 'qr_scanned') return;
      c.stepRequest('ble_exchange', { modes: [MODE] });
      const connected = await c.expect('ble_connected');
      if (connected.status !== 'error') return;
      finish(c);
    })();
  });
}

let backend: FakeBackend | undefined;
afterEach(async () => {
  await backend?.stop();
  backend = undefined;
});

describe('npm run relay', () => {
  it('exits 0 and prints the outcome when the credential is verified', async () => {
    backend = await FakeBackend.start();
    scriptQr(backend, (c) => c.send({ type: 'complete', outcome: outcome(true) }));
    const run = await runCli(['--backend', backend.baseUrl, '--qr', QR], { MDL_KIOSK_API_KEY: backend.apiKey });
    expect(run.code).toBe(0);
    const report = JSON.parse(run.stdout.trim()) as { result: string; outcome: { verdict: string } };
    expect(report.result).toBe('complete');
    expect(report.outcome.verdict).toBe('verified');
    expect(run.stderr).toContain('[relay] engaging');
    expect(run.stderr).not.toContain(backend.apiKey);
  });

  it('exits 3 when the credential is authentic but the age request is NOT met, and says so on the result line (issue 18: it exited 0)', async () => {
    backend = await FakeBackend.start();
    scriptQr(backend, (c) =>
      c.send({ type: 'complete', outcome: { ...outcome(true), response: { 'org.iso.18013.5.1': { age_over_21: false } } } }),
    );
    const run = await runCli(['--backend', backend.baseUrl, '--qr', QR, '--profile', 'age_over_21'], { MDL_KIOSK_API_KEY: backend.apiKey });
    expect(run.code).toBe(3);
    expect(run.stderr).toContain('[relay] result: verified; age 21 or older: NOT met');
    expect(run.stderr).not.toContain('[relay] result: verified\n');
    const report = JSON.parse(run.stdout.trim()) as {
      outcome: { verdict: string; answer: { kind: string; threshold: number; result: string } };
    };
    expect(report.outcome.verdict).toBe('verified');
    expect(report.outcome.answer).toMatchObject({ kind: 'age', threshold: 21, result: 'not_met' });
  });

  it('exits 3 when the credential is authentic but its answer cannot be determined (no age statement shared); exits 0 only when met', async () => {
    backend = await FakeBackend.start();
    let n = 0;
    scriptQr(backend, (c) =>
      c.send({
        type: 'complete',
        outcome: { ...outcome(true), response: { 'org.iso.18013.5.1': n++ === 0 ? { age_over_18: true } : { age_over_25: true } } },
      }),
    );
    const undetermined = await runCli(['--backend', backend.baseUrl, '--qr', `${QR}A`, '--profile', 'age_over_21'], {
      MDL_KIOSK_API_KEY: backend.apiKey,
    });
    expect(undetermined.code).toBe(3);
    expect(undetermined.stderr).toContain('[relay] result: verified; age 21 or older: could not be determined; not shared: age_over_21');
    expect((JSON.parse(undetermined.stdout.trim()) as { outcome: { answer: { result: string } } }).outcome.answer.result).toBe(
      'undetermined',
    );
    // The nearest statement (age_over_25 true) answers a 21+ question: met.
    const met = await runCli(['--backend', backend.baseUrl, '--qr', `${QR}B`, '--profile', 'age_over_21'], {
      MDL_KIOSK_API_KEY: backend.apiKey,
    });
    expect(met.code).toBe(0);
    expect(met.stderr).toContain('[relay] result: verified; age 21 or older: met');
  });

  it('--loop: a rejection outranks "not met" (exit 1), "not met" outranks verified (exit 3)', async () => {
    backend = await FakeBackend.start();
    const answers = [false, true, 'reject'] as const;
    let n = 0;
    scriptQr(backend, (c) => {
      const next = answers[n++];
      c.send({
        type: 'complete',
        outcome: next === 'reject' ? outcome(false) : { ...outcome(true), response: { 'org.iso.18013.5.1': { age_over_21: next } } },
      });
    });
    const two = await runCli(
      ['--backend', backend.baseUrl, '--qr-stdin', '--loop', '2'],
      { MDL_KIOSK_API_KEY: backend.apiKey },
      `${QR}C\n${QR}D\n`,
    );
    expect(two.code).toBe(3);
    const third = await runCli(['--backend', backend.baseUrl, '--qr', `${QR}E`], { MDL_KIOSK_API_KEY: backend.apiKey });
    expect(third.code).toBe(1);
    expect(third.stderr).toContain('[relay] result: not accepted; age 21 or older: could not be determined');
  });

  it('exits 1 when the credential is rejected', async () => {
    backend = await FakeBackend.start();
    scriptQr(backend, (c) => c.send({ type: 'complete', outcome: outcome(false) }));
    const run = await runCli(['--backend', backend.baseUrl, '--qr', QR], { MDL_KIOSK_API_KEY: backend.apiKey });
    expect(run.code).toBe(1);
    expect((JSON.parse(run.stdout.trim()) as { outcome: { verdict: string } }).outcome.verdict).toBe('rejected');
  });

  it('exits 2 on a backend error', async () => {
    backend = await FakeBackend.start();
    backend.onConnection((c) => {
      void (async () => {
        await c.expect('engage');
        const scan = await c.receive(30_000).catch(() => undefined);
        if (scan?.op === 'qr_scanned') c.send({ type: 'error', message: 'engagement refused' });
      })();
    });
    const run = await runCli(['--backend', backend.baseUrl, '--qr', QR], { MDL_KIOSK_API_KEY: backend.apiKey });
    expect(run.code).toBe(2);
    const report = JSON.parse(run.stdout.trim()) as { result: string; error: { code: string } };
    expect(report.result).toBe('backend_error');
    expect(report.error.code).toBe('backend_error');
  });

  it('--loop N with --qr-stdin runs N verifications and exits with the worst status', async () => {
    backend = await FakeBackend.start();
    let n = 0;
    scriptQr(backend, (c) => c.send({ type: 'complete', outcome: outcome(n++ === 0) }));
    const run = await runCli(
      ['--backend', backend.baseUrl, '--qr-stdin', '--loop', '2'],
      { MDL_KIOSK_API_KEY: backend.apiKey },
      `${QR}A\r\n${QR}B\n`,
    );
    const lines = run.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { outcome: { verdict: string } });
    expect(lines.map((l) => l.outcome.verdict)).toEqual(['verified', 'rejected']);
    expect(run.code).toBe(1);
  });

  it('exits 2 at once with a clear message when the API key is refused', async () => {
    backend = await FakeBackend.start();
    const run = await runCli(['--backend', backend.baseUrl, '--qr', QR], { MDL_KIOSK_API_KEY: 'wrong-key' });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/config_error/);
    expect(run.stderr).not.toContain('wrong-key');
  });

  it('a gateway answering 404 on every WebSocket upgrade (issue 27: 12,271 sessions in 12 s): a handful of requests, then staff are told why (exit 2)', async () => {
    backend = await FakeBackend.start();
    backend.handshakeStatuses.push(...new Array<number>(100_000).fill(404));
    const run = await runCli(['--backend', backend.baseUrl, '--qr-stdin', '--timeout', '12'], { MDL_KIOSK_API_KEY: backend.apiKey });
    expect(run.code).toBe(2);
    const posts = backend.http.filter((r) => r.method === 'POST').length;
    // Three sessions, three upgrades: after the third refusal in a row it is a configuration problem.
    expect(posts).toBe(3);
    expect(backend.handshakes).toHaveLength(3);
    expect(run.stderr).toMatch(
      /staff needed: the backend refuses the session connection \(HTTP 404\) — check the WebSocket route of the gateway/,
    );
  });

  it('refuses plain http to a non-loopback backend', async () => {
    const run = await runCli(['--backend', 'http://verifier.example.com', '--qr', QR], { MDL_KIOSK_API_KEY: 'k' });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/refusing plain http/);
  });

  it('fails with usage on an unknown flag and without any input', async () => {
    expect((await runCli(['--frobnicate'], {})).code).toBe(2);
    const run = await runCli(['--backend', 'https://verifier.example.com'], { MDL_KIOSK_API_KEY: 'k' });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/no input/);
  });
});
