/**
 * The kiosk behind a forward proxy (src/kiosk/backend-proxy.ts): the session API and the session WebSocket
 * both tunnel through a local CONNECT proxy to an HTTPS + WSS backend with a CA of its own; the TLS policy
 * (custom CA, SPKI pins) applies inside the tunnel; proxy credentials from a file or from HTTPS_PROXY are
 * sent to the proxy only and never logged; NO_PROXY and backend.proxy.noProxy reach the backend directly
 * (and say so in the log), unless useEnvironment is false, which ignores NO_PROXY too; an https:// proxy
 * with a private CA is trusted through backend.proxy.caFile. Every failure of the proxy's own — not
 * reachable, name not resolved, a refusal, its certificate, no answer — is named as the proxy's on both the
 * session API and the WebSocket, and a backend that is down behind a working proxy is named as the backend.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { rootCertificates } from 'node:tls';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { backendEndpoints } from '../../src/kiosk/backend-endpoints.js';
import {
  bypassesProxy,
  chooseBackendRoute,
  proxyFailureIsConfiguration,
  resolveBackendProxy,
  type BackendProxy,
} from '../../src/kiosk/backend-proxy.js';
import { RelayHandshakeError } from '../../src/kiosk/relay-link.js';
import { WsRelayConnector } from '../../src/kiosk/relay-socket.js';
import { SessionApiError, SessionClient } from '../../src/kiosk/session-client.js';
import { buildTlsTrust } from '../../src/kiosk/tls-trust.js';
import { ConfigError, parseConfig } from '../../src/platform/config.js';
import { startConnectProxy, type ConnectProxy } from '../support/connect-proxy.js';
import { unusedPort } from '../support/session-http.js';
import { FakeBackend } from '../support/fake-backend.js';
import { startHarness, type Harness } from '../support/harness.js';
import { armed, completeQrVerification } from '../support/relay-fixtures.js';
import { createTestCa, issueServerIdentity, type ServerIdentity, type TestCa } from '../support/tls-fixtures.js';

let dir: string;
let ca: TestCa;
let server: ServerIdentity;
let caFile: string;
let h: Harness | undefined;
let backend: FakeBackend | undefined;
let proxy: ConnectProxy | undefined;
/** Closed after each test: session clients' pools and the odd TCP servers playing a broken proxy or backend. */
const cleanups: (() => Promise<void>)[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'mdl-proxy-'));
  ca = await createTestCa();
  server = await issueServerIdentity(ca);
  caFile = join(dir, 'ca.pem');
  writeFileSync(caFile, ca.certPem);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
  await h?.stop();
  h = undefined;
  await backend?.stop();
  backend = undefined;
  await proxy?.stop();
  proxy = undefined;
});

const SLOW_RETRY = { session: { offlineBackoffMinMs: 20, offlineBackoffMaxMs: 60_000 } };

async function tlsBackend(): Promise<FakeBackend> {
  backend = await FakeBackend.start({ tls: { key: server.key, cert: server.cert } });
  return backend;
}

function backendTarget(b: FakeBackend): string {
  return new URL(b.baseUrl).host;
}

const PROXY_CREDENTIALS = 'kiosk-7:Pr0xy-Pa55w0rd!';

/** A proxy as backend-proxy.ts resolves it, with Basic credentials (so the tests can check they never leak). */
function proxyAt(url: string, credentials = PROXY_CREDENTIALS, ca?: readonly string[]): BackendProxy {
  return {
    url: new URL(url),
    authorization: `Basic ${Buffer.from(credentials).toString('base64')}`,
    source: 'backend.proxy.url',
    ...(ca ? { ca } : {}),
  };
}

/** Where the clients under test go: a FakeBackend, or an address where something else listens. */
interface Target {
  readonly baseUrl: string;
  readonly apiKey: string;
}

function sessionClient(b: Target, p: BackendProxy, timeoutMs = 3_000): SessionClient {
  const client = new SessionClient({
    endpoints: backendEndpoints(b.baseUrl, { allowInsecure: false }),
    apiKey: b.apiKey,
    timeoutMs,
    tls: buildTlsTrust({ caFile }),
    proxy: p,
  });
  cleanups.push(() => client.close());
  return client;
}

function wsConnector(b: Target, p: BackendProxy, connectTimeoutMs = 3_000): WsRelayConnector {
  return new WsRelayConnector({
    endpoints: backendEndpoints(b.baseUrl, { allowInsecure: false }),
    auth: 'header',
    connectTimeoutMs,
    closeTimeoutMs: 500,
    maxMessageBytes: 1_000_000,
    heartbeatMs: 0,
    pongMs: 2_500,
    tls: buildTlsTrust({ caFile }),
    proxy: p,
  });
}

async function sessionFailure(client: SessionClient): Promise<SessionApiError> {
  const error = await client.createSession().then(
    () => undefined,
    (e: unknown) => e,
  );
  if (error instanceof SessionApiError) return error;
  throw new Error(`expected a SessionApiError, got ${String(error)}`);
}

async function handshakeFailure(connector: WsRelayConnector, session: { id: string; secret: string }): Promise<RelayHandshakeError> {
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
  if (error instanceof RelayHandshakeError) return error;
  throw new Error(`expected a RelayHandshakeError, got ${String(error)}`);
}

/** Neither the proxy's password (plain or in its Basic header), the API key nor the client secret in any form of the error. */
function expectNoSecret(error: SessionApiError | RelayHandshakeError, ...secrets: string[]): void {
  const all = [...secrets, PROXY_CREDENTIALS.split(':')[1] ?? '', Buffer.from(PROXY_CREDENTIALS).toString('base64')];
  const forms = [
    error.message,
    String(error),
    error.stack ?? '',
    JSON.stringify({ kind: error.kind, status: error.status, stage: error.proxyStage, message: error.message }),
  ];
  for (const secret of all) for (const form of forms) expect(form).not.toContain(secret);
}

/** A TCP server on 127.0.0.1 that does `onSocket` with each connection: a proxy or backend that misbehaves. */
async function tcpServer(onSocket: (socket: Socket) => void): Promise<{ port: number; accepted: () => number }> {
  const sockets = new Set<Socket>();
  let accepted = 0;
  const server: Server = createServer((socket) => {
    accepted++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    onSocket(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  );
  const address = server.address();
  return { port: typeof address === 'object' && address !== null ? address.port : 0, accepted: () => accepted };
}

describe('the kiosk behind a forward proxy', () => {
  it('HTTPS_PROXY: POST /sessions and the session WebSocket tunnel through the proxy, and a whole verification completes', async () => {
    const b = await tlsBackend();
    proxy = await startConnectProxy();
    h = await startHarness({ backend: b, config: { backend: { tls: { caFile } } }, env: { HTTPS_PROXY: proxy.url } });
    const conn = await armed(h);
    await completeQrVerification(h, conn);
    // Every connection to the backend went through a tunnel to it: the HTTP pool's and the WebSocket's.
    expect(proxy.tunnels.length).toBeGreaterThanOrEqual(2);
    expect(new Set(proxy.tunnels.map((t) => t.target))).toEqual(new Set([backendTarget(b)]));
    expect(proxy.plainRequests).toEqual([]);
    expect(b.http.filter((r) => r.method === 'POST')).toHaveLength(1);
    expect(h.logs.records.find((r) => r.event === 'kiosk_configured')).toMatchObject({
      proxy: proxy.url,
      proxySource: 'environment',
      customCas: 1,
    });
  });

  it("the TLS policy holds inside the tunnel: the backend's private CA is refused without backend.tls.caFile, and a wrong pin is refused with it", async () => {
    const b = await tlsBackend();
    proxy = await startConnectProxy();
    h = await startHarness({ backend: b, config: SLOW_RETRY, env: { HTTPS_PROXY: proxy.url } });
    expect((await h.view((v) => v.phase === 'offline')).error?.code).toBe('backend_tls');
    expect(proxy.tunnels.length).toBeGreaterThan(0);
    expect(b.http).toHaveLength(0); // the API key never left the TLS handshake
    await h.stop();
    h = await startHarness({
      backend: b,
      config: { ...SLOW_RETRY, backend: { tls: { caFile, pinSha256: [Buffer.alloc(32, 7).toString('base64')] } } },
      env: { HTTPS_PROXY: proxy.url },
    });
    const pinned = await h.view((v) => v.phase === 'offline');
    expect(pinned.error?.code).toBe('backend_tls');
    expect(pinned.error?.detail).toMatch(/does not match backend\.tls\.pinSha256/);
    expect(b.http).toHaveLength(0);
  });

  it('backend.proxy.url with backend.proxy.credentialsFile: the proxy gets Basic credentials, the logs never', async () => {
    const b = await tlsBackend();
    proxy = await startConnectProxy({ credentials: { user: 'kiosk-17', password: 'Pr0xy-S3cret!' } });
    const credentials = join(dir, 'proxy-credentials');
    writeFileSync(credentials, 'kiosk-17:Pr0xy-S3cret!\n', { mode: 0o600 });
    h = await startHarness({
      backend: b,
      config: { backend: { tls: { caFile }, proxy: { url: proxy.url, credentialsFile: credentials } } },
    });
    await completeQrVerification(h, await armed(h));
    expect(proxy.tunnels.every((t) => t.accepted)).toBe(true);
    expect(h.logs.records.find((r) => r.event === 'kiosk_configured')).toMatchObject({
      proxy: proxy.url,
      proxySource: 'backend.proxy.url',
    });
    const logs = h.logs.text();
    for (const secret of ['Pr0xy-S3cret!', Buffer.from('kiosk-17:Pr0xy-S3cret!').toString('base64')]) expect(logs).not.toContain(secret);
  });

  it("credentials in HTTPS_PROXY are sent to the proxy; wrong ones leave the kiosk offline with the proxy's refusal, not the password", async () => {
    const b = await tlsBackend();
    proxy = await startConnectProxy({ credentials: { user: 'kiosk', password: 'right-pass' } });
    const base = proxy.url.replace('http://', '');
    h = await startHarness({
      backend: b,
      config: { backend: { tls: { caFile } } },
      env: { HTTPS_PROXY: `http://kiosk:right-pass@${base}` },
    });
    await completeQrVerification(h, await armed(h));
    expect(proxy.tunnels.every((t) => t.accepted)).toBe(true);
    await h.stop();
    await b.stop();
    const fresh = await tlsBackend();
    h = await startHarness({
      backend: fresh,
      config: { ...SLOW_RETRY, backend: { tls: { caFile } } },
      env: { https_proxy: `http://kiosk:wrong-pass@${base}` },
    });
    const offline = await h.view((v) => v.phase === 'offline');
    expect(offline.error?.detail).toBe(
      `POST /sessions: the proxy ${proxy.url} asked for credentials (HTTP 407): check the user and password of HTTPS_PROXY, or backend.proxy.credentialsFile`,
    );
    expect(fresh.http).toHaveLength(0);
    const text = `${h.logs.text()}${JSON.stringify(h.views)}`;
    expect(text).not.toContain('wrong-pass');
    expect(text).not.toContain('right-pass');
  });

  it("the session WebSocket through a proxy that refuses the tunnel fails with the proxy's answer, and never reaches the backend", async () => {
    const b = await tlsBackend();
    proxy = await startConnectProxy({ credentials: { user: 'kiosk', password: 'right-pass' } });
    const session = b.createSession();
    const error = await handshakeFailure(wsConnector(b, proxyAt(proxy.url, 'kiosk:wrong-pass')), session);
    expect(error.kind).toBe('proxy');
    expect(error.status).toBe(407);
    expect(error.message).toBe(`WebSocket: the proxy ${proxy.url} asked for credentials (HTTP 407): check backend.proxy.credentialsFile`);
    expect(proxy.tunnels).toHaveLength(1);
    expect(b.handshakes).toHaveLength(0);
    expectNoSecret(error, 'wrong-pass', Buffer.from('kiosk:wrong-pass').toString('base64'), session.secret);
  });

  it('NO_PROXY and backend.proxy.noProxy reach the backend directly', async () => {
    const b = await tlsBackend();
    proxy = await startConnectProxy();
    h = await startHarness({
      backend: b,
      config: { backend: { tls: { caFile } } },
      env: { HTTPS_PROXY: proxy.url, NO_PROXY: 'example.com, 127.0.0.1' },
    });
    await completeQrVerification(h, await armed(h));
    await h.stop();
    h = await startHarness({
      backend: b,
      config: { backend: { tls: { caFile }, proxy: { url: proxy.url, noProxy: [backendTarget(b)] } } },
    });
    await completeQrVerification(h, await armed(h));
    expect(proxy.tunnels).toEqual([]);
  });

  it('backend.proxy.useEnvironment: false ignores HTTPS_PROXY', async () => {
    const b = await tlsBackend();
    proxy = await startConnectProxy();
    h = await startHarness({
      backend: b,
      config: { backend: { tls: { caFile }, proxy: { useEnvironment: false } } },
      env: { HTTPS_PROXY: proxy.url },
    });
    await completeQrVerification(h, await armed(h));
    expect(proxy.tunnels).toEqual([]);
  });
});

describe("a proxy's own failures are named as the proxy's, on the session API and the WebSocket", () => {
  it('a proxy port that refuses connections: "the proxy … cannot be reached (ECONNREFUSED)", transient, and the staff line says so', async () => {
    const b = await tlsBackend();
    const port = await unusedPort();
    const p = proxyAt(`http://127.0.0.1:${port}`);
    const http = await sessionFailure(sessionClient(b, p));
    expect(http).toMatchObject({ kind: 'proxy', proxyStage: 'unreachable', status: undefined });
    expect(http.message).toBe(`POST /sessions: the proxy http://127.0.0.1:${port} cannot be reached (ECONNREFUSED)`);
    expect(http.transient).toBe(true);
    const session = b.createSession();
    const ws = await handshakeFailure(wsConnector(b, p), session);
    expect(ws).toMatchObject({ kind: 'proxy', proxyStage: 'unreachable', status: undefined });
    expect(ws.message).toBe(`WebSocket: the proxy http://127.0.0.1:${port} cannot be reached (ECONNREFUSED)`);
    expectNoSecret(http, b.apiKey);
    expectNoSecret(ws, session.secret);
    // What staff sees is the message: the offline line names the proxy, not the backend.
    h = await startHarness({ backend: b, config: SLOW_RETRY, env: { HTTPS_PROXY: `http://kiosk-7:Pr0xy-Pa55w0rd!@127.0.0.1:${port}` } });
    const offline = await h.view((v) => v.phase === 'offline');
    expect(offline.error?.detail).toBe(`POST /sessions: the proxy http://127.0.0.1:${port} cannot be reached (ECONNREFUSED)`);
    expect(offline.error?.code).not.toBe('backend_tls');
    expect(`${h.logs.text()}${JSON.stringify(h.views)}`).not.toContain('Pr0xy-Pa55w0rd!');
    expect(b.http).toHaveLength(0);
  });

  it('a proxy host name that does not resolve: "… its host name does not resolve (ENOTFOUND)"', async () => {
    const b = await tlsBackend();
    const p = proxyAt('http://kiosk-proxy.invalid:3128');
    const http = await sessionFailure(sessionClient(b, p));
    expect(http).toMatchObject({ kind: 'proxy', proxyStage: 'unresolved' });
    expect(http.message).toBe(
      'POST /sessions: the proxy http://kiosk-proxy.invalid:3128 cannot be reached: its host name does not resolve (ENOTFOUND)',
    );
    expect(http.transient).toBe(true);
    const session = b.createSession();
    const ws = await handshakeFailure(wsConnector(b, p), session);
    expect(ws).toMatchObject({ kind: 'proxy', proxyStage: 'unresolved' });
    expect(ws.message).toBe(
      'WebSocket: the proxy http://kiosk-proxy.invalid:3128 cannot be reached: its host name does not resolve (ENOTFOUND)',
    );
    expectNoSecret(http, b.apiKey);
    expectNoSecret(ws, session.secret);
  });

  it('a proxy refusing the tunnel: 407 and 403 keep their status, name the proxy and are configuration (not transient)', async () => {
    const b = await tlsBackend();
    proxy = await startConnectProxy({ credentials: { user: 'kiosk-7', password: 'the-right-one' } });
    const wrong = proxyAt(proxy.url);
    const http407 = await sessionFailure(sessionClient(b, wrong));
    expect(http407).toMatchObject({ kind: 'proxy', proxyStage: 'refused', status: 407 });
    expect(http407.message).toBe(
      `POST /sessions: the proxy ${proxy.url} asked for credentials (HTTP 407): check backend.proxy.credentialsFile`,
    );
    expect(http407.transient).toBe(false);
    const session = b.createSession();
    const ws407 = await handshakeFailure(wsConnector(b, wrong), session);
    expect(ws407).toMatchObject({ kind: 'proxy', proxyStage: 'refused', status: 407 });
    expect(ws407.message).toBe(`WebSocket: the proxy ${proxy.url} asked for credentials (HTTP 407): check backend.proxy.credentialsFile`);
    expectNoSecret(http407, b.apiKey);
    expectNoSecret(ws407, session.secret);
    await proxy.stop();

    proxy = await startConnectProxy({ refuse: 403 });
    const p = proxyAt(proxy.url);
    const http403 = await sessionFailure(sessionClient(b, p));
    expect(http403).toMatchObject({ kind: 'proxy', proxyStage: 'refused', status: 403 });
    expect(http403.message).toBe(
      `POST /sessions: the proxy ${proxy.url} does not allow this backend (HTTP 403): ask for the backend's host and port to be allowed`,
    );
    expect(http403.transient).toBe(false);
    const ws403 = await handshakeFailure(wsConnector(b, p), session);
    expect(ws403).toMatchObject({ kind: 'proxy', proxyStage: 'refused', status: 403 });
    expect(ws403.message).toBe(
      `WebSocket: the proxy ${proxy.url} does not allow this backend (HTTP 403): ask for the backend's host and port to be allowed`,
    );
    expect(proxy.tunnels.map((t) => t.target)).toEqual([backendTarget(b), backendTarget(b)]);
    expect(b.http).toHaveLength(0);
    expect(b.handshakes).toHaveLength(0);
  });

  it("an https:// proxy whose certificate is not trusted: named as the proxy's certificate, never the backend's, with backend.proxy.caFile as the fix", async () => {
    const b = await tlsBackend();
    const proxyCa = await createTestCa('Kiosk Test Proxy CA');
    proxy = await startConnectProxy({ tls: await issueServerIdentity(proxyCa) });
    // The backend's CA is trusted (backend.tls.caFile); the proxy's is not: only the proxy can be at fault.
    const p = proxyAt(proxy.url);
    const http = await sessionFailure(sessionClient(b, p));
    expect(http).toMatchObject({ kind: 'proxy', proxyStage: 'tls', status: undefined });
    expect(http.message).toBe(
      `POST /sessions: the proxy ${proxy.url} has a certificate not issued by a CA this kiosk trusts (SELF_SIGNED_CERT_IN_CHAIN): add the proxy's CA to backend.proxy.caFile`,
    );
    expect(http.transient).toBe(false);
    const session = b.createSession();
    const ws = await handshakeFailure(wsConnector(b, p), session);
    expect(ws).toMatchObject({ kind: 'proxy', proxyStage: 'tls' });
    expect(ws.message).toBe(
      `WebSocket: the proxy ${proxy.url} has a certificate not issued by a CA this kiosk trusts (SELF_SIGNED_CERT_IN_CHAIN): add the proxy's CA to backend.proxy.caFile`,
    );
    for (const e of [http, ws]) expect(e.message).not.toMatch(/backend's certificate|backend\.tls/);
    expectNoSecret(http, b.apiKey);
    expectNoSecret(ws, session.secret);
    expect(proxy.tunnels).toEqual([]); // no CONNECT was sent over a TLS connection the kiosk did not trust
  });

  it('a proxy that never answers the CONNECT: "did not open the tunnel within …" on both paths', async () => {
    const b = await tlsBackend();
    const silent = await tcpServer(() => undefined);
    const p = proxyAt(`http://127.0.0.1:${silent.port}`);
    const http = await sessionFailure(sessionClient(b, p, 300));
    expect(http).toMatchObject({ kind: 'proxy', proxyStage: 'timeout' });
    expect(http.message).toBe(`POST /sessions: the proxy http://127.0.0.1:${silent.port} did not open the tunnel within 300 ms`);
    expect(http.transient).toBe(true);
    const ws = await handshakeFailure(wsConnector(b, p, 300), b.createSession());
    expect(ws).toMatchObject({ kind: 'proxy', proxyStage: 'timeout' });
    expect(ws.message).toBe(`WebSocket: the proxy http://127.0.0.1:${silent.port} did not open the tunnel within 300 ms`);
    expect(silent.accepted()).toBe(2);
  });

  it('a proxy that closes the connection before answering the CONNECT', async () => {
    const b = await tlsBackend();
    const closing = await tcpServer((socket) => socket.once('data', () => socket.end()));
    const p = proxyAt(`http://127.0.0.1:${closing.port}`);
    const http = await sessionFailure(sessionClient(b, p));
    expect(http).toMatchObject({ kind: 'proxy', proxyStage: 'closed' });
    // undici reads the close as its socket error; https-proxy-agent as an end without a code.
    expect(http.message).toBe(
      `POST /sessions: the proxy http://127.0.0.1:${closing.port} closed the connection before opening the tunnel (UND_ERR_SOCKET)`,
    );
    expect(http.transient).toBe(true);
    const ws = await handshakeFailure(wsConnector(b, p), b.createSession());
    expect(ws).toMatchObject({ kind: 'proxy', proxyStage: 'closed' });
    expect(ws.message).toBe(`WebSocket: the proxy http://127.0.0.1:${closing.port} closed the connection before opening the tunnel`);
  });

  it("a backend down behind a working proxy: the proxy's 502 says the proxy cannot reach the backend; a reset inside the open tunnel is the backend's", async () => {
    const b = await tlsBackend();
    proxy = await startConnectProxy();
    const p = proxyAt(proxy.url);
    const session = b.createSession();
    const gone: Target = { baseUrl: b.baseUrl, apiKey: b.apiKey };
    await b.stop();
    backend = undefined;
    // Nothing listens on the backend's port now: the proxy cannot connect and answers 502.
    const http502 = await sessionFailure(sessionClient(gone, p));
    expect(http502).toMatchObject({ kind: 'proxy', proxyStage: 'refused', status: 502 });
    expect(http502.message).toBe(`POST /sessions: the proxy ${proxy.url} cannot reach the backend (HTTP 502 from the proxy)`);
    expect(http502.transient).toBe(true);
    const ws502 = await handshakeFailure(wsConnector(gone, p), session);
    expect(ws502).toMatchObject({ kind: 'proxy', proxyStage: 'refused', status: 502 });
    expect(ws502.message).toBe(`WebSocket: the proxy ${proxy.url} cannot reach the backend (HTTP 502 from the proxy)`);

    // A backend that accepts, then resets on the kiosk's first bytes (its TLS hello): the proxy opened the tunnel (200).
    const resetting = await tcpServer((socket) => socket.once('data', () => socket.resetAndDestroy()));
    const behind: Target = { baseUrl: `https://127.0.0.1:${resetting.port}/v1`, apiKey: b.apiKey };
    const http = await sessionFailure(sessionClient(behind, p));
    expect(http.kind).toBe('network');
    expect(http.message).toBe("POST /sessions: ECONNRESET from the backend, through the proxy's open tunnel");
    const ws = await handshakeFailure(wsConnector(behind, p), session);
    expect(ws.kind).toBe('network');
    expect(ws.message).toBe(
      "WebSocket: Client network socket disconnected before secure TLS connection was established (from the backend, through the proxy's open tunnel)",
    );
    expect(proxy.tunnels.filter((t) => t.target === `127.0.0.1:${resetting.port}`)).toHaveLength(2);
    expect(resetting.accepted()).toBe(2);
  });
});

describe('an https:// proxy with a private CA: backend.proxy.caFile', () => {
  it("a whole verification through an https:// proxy trusted by backend.proxy.caFile, on both paths; the backend's certificate stays under backend.tls", async () => {
    const b = await tlsBackend();
    const proxyCa = await createTestCa('Kiosk Test Proxy CA');
    proxy = await startConnectProxy({
      tls: await issueServerIdentity(proxyCa),
      credentials: { user: 'kiosk-7', password: 'Pr0xy-Pa55w0rd!' },
    });
    const proxyCaFile = join(dir, 'proxy-ca.pem');
    writeFileSync(proxyCaFile, proxyCa.certPem);
    const credentials = join(dir, 'https-proxy-credentials');
    writeFileSync(credentials, `${PROXY_CREDENTIALS}\n`, { mode: 0o600 });
    h = await startHarness({
      backend: b,
      config: { backend: { tls: { caFile }, proxy: { url: proxy.url, caFile: proxyCaFile, credentialsFile: credentials } } },
    });
    await completeQrVerification(h, await armed(h));
    expect(proxy.tunnels.length).toBeGreaterThanOrEqual(2);
    expect(proxy.tunnels.every((t) => t.accepted && t.target === backendTarget(b))).toBe(true);
    expect(b.handshakes.length).toBeGreaterThanOrEqual(1);
    expect(h.logs.text()).not.toContain('Pr0xy-Pa55w0rd!');
    await h.stop();
    // The proxy's CA does not vouch for the backend: without backend.tls.caFile the backend is refused, and
    // the staff line blames the backend's certificate (the proxy's own TLS was fine).
    h = await startHarness({
      backend: b,
      config: { ...SLOW_RETRY, backend: { proxy: { url: proxy.url, caFile: proxyCaFile, credentialsFile: credentials } } },
    });
    const offline = await h.view((v) => v.phase === 'offline');
    expect(offline.error?.code).toBe('backend_tls');
    expect(offline.error?.detail).toMatch(/^POST \/sessions: the backend's certificate is not issued by a CA this kiosk trusts/);
  });
});

describe('backend.proxy.caFile vouches for the proxy only', () => {
  it("a proxy CA list that holds the backend's CA does not make the backend trusted, on either path", async () => {
    const b = await tlsBackend();
    // The proxy's certificate comes from the backend's CA here, so the one list trusts both: the proxy's
    // TLS passes, and the backend's must still be refused for want of backend.tls.caFile.
    proxy = await startConnectProxy({ tls: await issueServerIdentity(ca) });
    const p = proxyAt(proxy.url, PROXY_CREDENTIALS, [...rootCertificates, ca.certPem]);
    const untrusting = { endpoints: backendEndpoints(b.baseUrl, { allowInsecure: false }), proxy: p };
    const client = new SessionClient({ ...untrusting, apiKey: b.apiKey, timeoutMs: 3_000 });
    cleanups.push(() => client.close());
    const http = await sessionFailure(client);
    expect(http.kind).toBe('tls');
    expect(http.message).toBe(
      "POST /sessions: the backend's certificate is not issued by a CA this kiosk trusts (SELF_SIGNED_CERT_IN_CHAIN): add the CA (or the TLS inspection proxy's CA) to backend.tls.caFile",
    );
    const connector = new WsRelayConnector({
      ...untrusting,
      auth: 'header',
      connectTimeoutMs: 3_000,
      closeTimeoutMs: 500,
      maxMessageBytes: 1_000_000,
      heartbeatMs: 0,
      pongMs: 2_500,
    });
    const ws = await handshakeFailure(connector, b.createSession());
    expect(ws.kind).toBe('tls');
    expect(ws.message).toBe(
      "WebSocket: the backend's certificate is not issued by a CA this kiosk trusts (SELF_SIGNED_CERT_IN_CHAIN): add the CA (or the TLS inspection proxy's CA) to backend.tls.caFile",
    );
    expect(proxy.tunnels.filter((t) => t.accepted)).toHaveLength(2);
    expect(b.http).toHaveLength(0);
    expect(b.handshakes).toHaveLength(0);
  });
});

describe('NO_PROXY and useEnvironment', () => {
  it('backend.proxy.useEnvironment: false ignores NO_PROXY from the environment too: the backend is still reached through backend.proxy.url', async () => {
    const b = await tlsBackend();
    proxy = await startConnectProxy();
    h = await startHarness({
      backend: b,
      config: { backend: { tls: { caFile }, proxy: { url: proxy.url, useEnvironment: false } } },
      env: { NO_PROXY: '127.0.0.1', no_proxy: '*' },
    });
    await completeQrVerification(h, await armed(h));
    // Both the session API and the WebSocket went through the proxy.
    expect(proxy.tunnels.length).toBeGreaterThanOrEqual(2);
    expect(new Set(proxy.tunnels.map((t) => t.target))).toEqual(new Set([backendTarget(b)]));
    expect(b.handshakes.length).toBeGreaterThanOrEqual(1);
    expect(h.logs.events()).not.toContain('backend_proxy_bypassed');
  });

  it('NO_PROXY sending the backend direct is logged once: backend_proxy_bypassed names the entry and the variable, never credentials', async () => {
    const b = await tlsBackend();
    proxy = await startConnectProxy();
    const base = proxy.url.replace('http://', '');
    h = await startHarness({
      backend: b,
      config: { backend: { tls: { caFile } } },
      env: { HTTPS_PROXY: `http://kiosk-7:Pr0xy-Pa55w0rd!@${base}`, NO_PROXY: 'example.com, 127.0.0.1' },
    });
    await completeQrVerification(h, await armed(h));
    expect(proxy.tunnels).toEqual([]);
    const bypassed = h.logs.records.filter((r) => r.event === 'backend_proxy_bypassed');
    expect(bypassed).toHaveLength(1);
    expect(bypassed[0]).toMatchObject({
      backend: new URL(b.baseUrl).origin,
      proxy: proxy.url,
      proxySource: 'environment',
      noProxyEntry: '127.0.0.1',
      noProxyFrom: 'NO_PROXY',
    });
    expect(h.logs.text()).not.toContain('Pr0xy-Pa55w0rd!');
    expect(h.logs.text()).not.toContain(Buffer.from(PROXY_CREDENTIALS).toString('base64'));
    await h.stop();
    h = await startHarness({
      backend: b,
      config: { backend: { tls: { caFile }, proxy: { url: proxy.url, noProxy: [`127.0.0.1:${b.port}`] } } },
    });
    await armed(h);
    expect(h.logs.records.filter((r) => r.event === 'backend_proxy_bypassed')).toEqual([
      expect.objectContaining({
        proxy: proxy.url,
        proxySource: 'backend.proxy.url',
        noProxyEntry: `127.0.0.1:${b.port}`,
        noProxyFrom: 'backend.proxy.noProxy',
      }),
    ]);
    expect(proxy.tunnels).toEqual([]);
  });
});

describe('proxy settings', () => {
  const backendUrl = new URL('https://verifier.example.com/api/sessions');
  const config = (proxy: Record<string, unknown> = {}): ReturnType<typeof parseConfig>['backend'] =>
    parseConfig({ backend: { proxy } }).backend;

  it('NO_PROXY entries: *, host names with their subdomains, a leading dot, IP addresses, ports', () => {
    expect(bypassesProxy(backendUrl, ['*'])).toBe(true);
    expect(bypassesProxy(backendUrl, ['example.com'])).toBe(true);
    expect(bypassesProxy(backendUrl, ['.example.com'])).toBe(true);
    expect(bypassesProxy(backendUrl, ['*.example.com'])).toBe(true);
    expect(bypassesProxy(backendUrl, ['verifier.example.com:443'])).toBe(true);
    expect(bypassesProxy(backendUrl, ['verifier.example.com:8443'])).toBe(false);
    expect(bypassesProxy(backendUrl, ['ample.com', 'other.example.com'])).toBe(false);
    expect(bypassesProxy(new URL('https://10.1.2.3:9443/'), ['10.1.2.3'])).toBe(true);
    expect(bypassesProxy(new URL('https://10.1.2.3:9443/'), ['10.1.2.3:9443'])).toBe(true);
    expect(bypassesProxy(new URL('https://10.1.2.30/'), ['10.1.2.3'])).toBe(false);
    expect(bypassesProxy(new URL('https://[::1]:8443/'), ['::1'])).toBe(true);
    expect(bypassesProxy(new URL('https://[::1]:8443/'), ['[::1]:8443'])).toBe(true);
  });

  it("the config's proxy wins over the environment; plain-http backends use HTTP_PROXY; credentials leave the URL", () => {
    const env = { HTTPS_PROXY: 'http://user:p%40ss@env-proxy:3128', HTTP_PROXY: 'http://plain-proxy:8080' };
    const fromEnv = resolveBackendProxy(config(), backendUrl, env);
    expect(fromEnv?.url.href).toBe('http://env-proxy:3128/');
    expect(fromEnv?.authorization).toBe(`Basic ${Buffer.from('user:p@ss').toString('base64')}`);
    expect(fromEnv?.source).toBe('environment');
    expect(resolveBackendProxy(config({ url: 'http://config-proxy:3128' }), backendUrl, env)?.url.host).toBe('config-proxy:3128');
    expect(resolveBackendProxy(config(), new URL('http://lab.example:8080/api'), env)?.url.host).toBe('plain-proxy:8080');
    expect(resolveBackendProxy(config(), backendUrl, {})).toBeUndefined();
    expect(resolveBackendProxy(config(), backendUrl, { https_proxy: 'proxy.lan:3128' })?.url.href).toBe('http://proxy.lan:3128/');
  });

  it('refuses a proxy URL with credentials, a bad credentials file, an unreadable HTTPS_PROXY — naming the key, never the secret', () => {
    expect(() => parseConfig({ backend: { proxy: { url: 'http://u:secret@proxy:3128' } } })).toThrow(
      /backend\.proxy\.url: must not carry a user name or password/,
    );
    expect(() => parseConfig({ backend: { proxy: { url: 'socks5://proxy:1080' } } })).toThrow(/http:\/\/ or https:\/\/ proxy/);
    const bad = join(dir, 'bad-credentials');
    writeFileSync(bad, 'no-colon-here-secret\n');
    expect(() => resolveBackendProxy(config({ credentialsFile: bad }), backendUrl, {})).toThrow(ConfigError);
    expect(() => resolveBackendProxy(config({ credentialsFile: bad }), backendUrl, {})).not.toThrow(/no-colon-here-secret/);
    expect(() => resolveBackendProxy(config({ credentialsFile: join(dir, 'missing') }), backendUrl, {})).toThrow(
      /backend\.proxy\.credentialsFile: cannot read/,
    );
    expect(() => resolveBackendProxy(config(), backendUrl, { HTTPS_PROXY: 'http://user:pa ss@[bad' })).toThrow(
      /^HTTPS_PROXY is not a proxy address/,
    );
    expect(() => resolveBackendProxy(config(), backendUrl, { HTTPS_PROXY: 'http://user:pa ss@[bad' })).not.toThrow(/pa ss/);
  });

  it('useEnvironment: false ignores NO_PROXY and no_proxy (only backend.proxy.noProxy applies); true honours them', () => {
    const url = 'http://config-proxy:3128';
    expect(resolveBackendProxy(config({ url, useEnvironment: false }), backendUrl, { NO_PROXY: '*' })?.url.host).toBe('config-proxy:3128');
    expect(resolveBackendProxy(config({ url, useEnvironment: false }), backendUrl, { no_proxy: 'example.com' })?.url.host).toBe(
      'config-proxy:3128',
    );
    expect(resolveBackendProxy(config({ url, useEnvironment: false, noProxy: ['example.com'] }), backendUrl, {})).toBeUndefined();
    expect(resolveBackendProxy(config({ url }), backendUrl, { NO_PROXY: '*' })).toBeUndefined();
    expect(chooseBackendRoute(config({ url }), backendUrl, { no_proxy: 'other.test .example.com' }).bypass).toEqual({
      proxy: 'http://config-proxy:3128',
      proxySource: 'backend.proxy.url',
      entry: '.example.com',
      list: 'no_proxy',
    });
    // No proxy at all: nothing was bypassed.
    expect(chooseBackendRoute(config(), backendUrl, { NO_PROXY: '*' })).toEqual({ proxy: undefined, bypass: undefined });
  });

  it('backend.proxy.caFile: trusted for an https:// proxy besides the bundled roots; unreadable → ConfigError naming the key; refused with an http:// url', () => {
    const proxyCa = join(dir, 'settings-proxy-ca.pem');
    writeFileSync(proxyCa, ca.certPem);
    const https = resolveBackendProxy(config({ url: 'https://proxy.example:3129', caFile: proxyCa }), backendUrl, {});
    expect(https?.ca).toContain(ca.certPem);
    expect(https?.ca?.length).toBeGreaterThan(1);
    // From the environment, an http:// proxy has no certificate to check: the key does nothing there.
    expect(resolveBackendProxy(config({ caFile: proxyCa }), backendUrl, { HTTPS_PROXY: 'http://proxy.example:3128' })?.ca).toBeUndefined();
    expect(() =>
      resolveBackendProxy(config({ url: 'https://proxy.example:3129', caFile: join(dir, 'missing.pem') }), backendUrl, {}),
    ).toThrow(/^backend\.proxy\.caFile: cannot read/);
    expect(() => parseConfig({ backend: { proxy: { url: 'http://proxy.example:3128', caFile: proxyCa } } })).toThrow(
      /caFile applies to an https:\/\/ proxy only/,
    );
  });

  it("proxyFailureIsConfiguration: the proxy's certificate and its 4xx refusals (but 408, 429) need a change; the rest is transient", () => {
    expect(proxyFailureIsConfiguration({ proxyStage: 'refused', status: 407 })).toBe(true);
    expect(proxyFailureIsConfiguration({ proxyStage: 'refused', status: 403 })).toBe(true);
    expect(proxyFailureIsConfiguration({ proxyStage: 'tls' })).toBe(true);
    expect(proxyFailureIsConfiguration({ proxyStage: 'refused', status: 429 })).toBe(false);
    expect(proxyFailureIsConfiguration({ proxyStage: 'refused', status: 502 })).toBe(false);
    for (const proxyStage of ['unreachable', 'unresolved', 'closed', 'timeout'] as const)
      expect(proxyFailureIsConfiguration({ proxyStage })).toBe(false);
    expect(new SessionApiError('proxy', 'x', 407, undefined, 'refused').transient).toBe(false);
    expect(new SessionApiError('proxy', 'x', undefined, undefined, 'unreachable').transient).toBe(true);
  });
});
