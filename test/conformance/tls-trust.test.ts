/**
 * TLS trust for the backend (src/kiosk/tls-trust.ts), against a local HTTPS + WSS backend with a CA of its
 * own: refused without the CA (named for staff, retried slowly), accepted with `backend.tls.caFile`,
 * refused on a pin mismatch and accepted with the right pin (leaf or CA key), a certificate for another
 * host name named as such. Both the session API (HTTP) and the relay socket (WebSocket) apply the policy.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../../src/platform/config.js';
import { buildTlsTrust, describeTlsFailure, PIN_MISMATCH_CODE, readCaBundle } from '../../src/kiosk/tls-trust.js';
import { FakeBackend } from '../support/fake-backend.js';
import { startHarness, type Harness } from '../support/harness.js';
import { armed, completeQrVerification } from '../support/relay-fixtures.js';
import { createTestCa, issueServerIdentity, type ServerIdentity, type TestCa } from '../support/tls-fixtures.js';

let dir: string;
let ca: TestCa;
let other: TestCa;
let server: ServerIdentity;
let caFile: string;
let otherCaFile: string;
let h: Harness | undefined;
let backend: FakeBackend | undefined;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'mdl-tls-'));
  ca = await createTestCa();
  other = await createTestCa('Unrelated CA');
  server = await issueServerIdentity(ca);
  caFile = join(dir, 'ca.pem');
  writeFileSync(caFile, ca.certPem);
  otherCaFile = join(dir, 'other.pem');
  writeFileSync(otherCaFile, other.certPem);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(async () => {
  await h?.stop();
  h = undefined;
  await backend?.stop();
  backend = undefined;
});

const SLOW_RETRY = { session: { offlineBackoffMinMs: 20, offlineBackoffMaxMs: 60_000 } };

async function tlsBackend(identity: ServerIdentity = server, host?: string): Promise<FakeBackend> {
  backend = await FakeBackend.start({ tls: { key: identity.key, cert: identity.cert }, ...(host ? { host } : {}) });
  return backend;
}

describe('backend TLS trust', () => {
  it('a backend whose CA the kiosk does not trust: offline with backend_tls naming the problem and backend.tls.caFile, retried at the slowest pace, nothing sent', async () => {
    const b = await tlsBackend();
    h = await startHarness({ backend: b, config: SLOW_RETRY });
    const view = await h.view((v) => v.phase === 'offline');
    expect(view.error?.code).toBe('backend_tls');
    expect(view.error?.detail).toMatch(/not issued by a CA this kiosk trusts/);
    expect(view.error?.detail).toMatch(/backend\.tls\.caFile/);
    const warning = h.logs.records.find((r) => r.event === 'backend_tls');
    // Not from the fastest back-off (a certificate does not fix itself): the slowest pace, [cap/2, cap] jittered.
    expect(warning?.retryInMs).toBeGreaterThanOrEqual(30_000);
    expect(warning?.retryInMs).toBeLessThanOrEqual(60_000);
    expect(b.http).toHaveLength(0); // the request never left the TLS handshake: no API key was sent
  });

  it('the same backend with its CA in backend.tls.caFile: sessions and the relay socket work, a whole verification completes', async () => {
    const b = await tlsBackend();
    h = await startHarness({ backend: b, config: { backend: { tls: { caFile } } } });
    const conn = await armed(h);
    expect(b.http.filter((r) => r.method === 'POST')).toHaveLength(1);
    await completeQrVerification(h, conn);
    expect(h.logs.records.find((r) => r.event === 'kiosk_configured')).toMatchObject({ customCas: 1, pins: 0 });
  });

  it('an unrelated CA in the bundle does not make the backend trusted', async () => {
    const b = await tlsBackend();
    h = await startHarness({ backend: b, config: { ...SLOW_RETRY, backend: { tls: { caFile: otherCaFile } } } });
    expect((await h.view((v) => v.phase === 'offline')).error?.code).toBe('backend_tls');
  });

  it('a pin that matches neither the leaf nor the CA key: refused with the pin named, even with the CA trusted', async () => {
    const b = await tlsBackend();
    h = await startHarness({
      backend: b,
      config: { ...SLOW_RETRY, backend: { tls: { caFile, pinSha256: [Buffer.alloc(32, 7).toString('base64')] } } },
    });
    const view = await h.view((v) => v.phase === 'offline');
    expect(view.error?.code).toBe('backend_tls');
    expect(view.error?.detail).toMatch(/does not match backend\.tls\.pinSha256/);
    expect(b.http).toHaveLength(0);
  });

  it.each([
    ['the leaf key', () => server.leafPin],
    ['the CA key', () => server.caPin],
  ])('a pin of %s (among others) is accepted', async (_which, pin) => {
    const b = await tlsBackend();
    h = await startHarness({
      backend: b,
      config: { backend: { tls: { caFile, pinSha256: [Buffer.alloc(32, 1).toString('base64'), pin()] } } },
    });
    await completeQrVerification(h, await armed(h));
  });

  it('a certificate for another host name is named as such (check backend.baseUrl)', async () => {
    const wrongHost = await issueServerIdentity(ca, { dns: ['verifier.example.com'] });
    const b = await tlsBackend(wrongHost);
    h = await startHarness({ backend: b, config: { ...SLOW_RETRY, backend: { tls: { caFile } } } });
    const view = await h.view((v) => v.phase === 'offline');
    expect(view.error?.detail).toMatch(/for another host name.*backend\.baseUrl/);
  });

  it('the relay socket applies the same policy: a WebSocket to an untrusted server fails with a TLS error, not a network error', async () => {
    const b = await tlsBackend();
    const trust = buildTlsTrust({ pinSha256: [Buffer.alloc(32, 3).toString('base64')], caFile });
    const { WsRelayConnector } = await import('../../src/kiosk/relay-socket.js');
    const { backendEndpoints } = await import('../../src/kiosk/backend-endpoints.js');
    const session = b.createSession();
    const connector = new WsRelayConnector({
      endpoints: backendEndpoints(b.baseUrl, { allowInsecure: false }),
      auth: 'header',
      connectTimeoutMs: 3_000,
      closeTimeoutMs: 500,
      maxMessageBytes: 1_000_000,
      heartbeatMs: 0,
      pongMs: 2_500,
      tls: trust,
    });
    const error = await connector
      .connect(
        { id: session.id, clientSecret: session.secret, createdAt: Date.now() },
        { onFrame: () => undefined, onClose: () => undefined },
        new AbortController().signal,
      )
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toMatchObject({ kind: 'tls' });
    expect((error as Error).message).toMatch(/pinSha256/);
    expect(b.handshakes).toHaveLength(0);
  });
});

describe('TLS configuration is checked up front', () => {
  it('a CA file that is missing, empty of certificates or corrupt is a configuration error naming backend.tls.caFile', () => {
    expect(() => readCaBundle(join(dir, 'missing.pem'))).toThrow(/backend\.tls\.caFile: cannot read/);
    const empty = join(dir, 'empty.pem');
    writeFileSync(empty, 'not a certificate\n');
    expect(() => readCaBundle(empty)).toThrow(/backend\.tls\.caFile: .* holds no PEM certificate/);
    const corrupt = join(dir, 'corrupt.pem');
    writeFileSync(corrupt, '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n');
    expect(() => readCaBundle(corrupt)).toThrow(ConfigError);
  });

  it('a kiosk configured with an unreadable CA file shows config_error naming the key', async () => {
    backend = await FakeBackend.start();
    const error = await startHarness({ backend, config: { backend: { tls: { caFile: join(dir, 'missing.pem') } } } }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(/backend\.tls\.caFile/);
  });

  it('pins must be 44-character base64 SHA-256 values; at most 10', () => {
    expect(() => parseConfig({ backend: { tls: { pinSha256: ['abc'] } } })).toThrow(
      /backend\.tls\.pinSha256\.0: a pin is the base64 SHA-256/,
    );
    expect(() => parseConfig({ backend: { tls: { pinSha256: Array.from({ length: 11 }, () => server.leafPin) } } })).toThrow(
      /backend\.tls\.pinSha256/,
    );
    expect(parseConfig({ backend: { tls: { pinSha256: [server.leafPin] } } }).backend.tls.pinSha256).toEqual([server.leafPin]);
  });

  it('every TLS failure code has a staff sentence; other codes are not TLS', () => {
    for (const code of [
      'SELF_SIGNED_CERT_IN_CHAIN',
      'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
      'ERR_TLS_CERT_ALTNAME_INVALID',
      'CERT_HAS_EXPIRED',
      'CERT_NOT_YET_VALID',
      PIN_MISMATCH_CODE,
      'ERR_SSL_WRONG_VERSION_NUMBER',
    ]) {
      expect(describeTlsFailure(code), code).toContain(code);
    }
    expect(describeTlsFailure('ECONNREFUSED')).toBeUndefined();
    expect(describeTlsFailure('')).toBeUndefined();
  });
});
