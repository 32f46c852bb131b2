/**
 * The session API client (spec §4.1, §5): `POST /sessions` and `GET /sessions/{id}` with
 * `Authorization: Bearer <API_KEY>`, typed failures, no secret in any error, no redirect followed.
 */
import type { ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { backendEndpoints } from '../../src/kiosk/backend-endpoints.js';
import { SessionApiError, SessionClient, type SessionApiErrorKind } from '../../src/kiosk/session-client.js';
import { ScriptedHttpServer, json, unusedPort, type Responder } from '../support/session-http.js';

const API_KEY = 'sk_test_9f8e7d6c5b4a39281706';

let servers: ScriptedHttpServer[] = [];
afterEach(async () => {
  await Promise.all(servers.map((s) => s.stop()));
  servers = [];
});

async function serve(responder: Responder): Promise<ScriptedHttpServer> {
  const server = await ScriptedHttpServer.start(responder);
  servers.push(server);
  return server;
}

function clientFor(
  baseUrl: string,
  options: { timeoutMs?: number; apiKey?: string; createBody?: Record<string, unknown>; now?: () => number } = {},
): SessionClient {
  return new SessionClient({
    endpoints: backendEndpoints(baseUrl, { allowInsecure: false }),
    apiKey: options.apiKey ?? API_KEY,
    timeoutMs: options.timeoutMs ?? 3_000,
    ...(options.createBody ? { createBody: options.createBody } : {}),
    ...(options.now ? { now: options.now } : {}),
  });
}

async function failure(promise: Promise<unknown>): Promise<SessionApiError> {
  try {
    await promise;
  } catch (e) {
    if (e instanceof SessionApiError) return e;
    throw new Error(`expected a SessionApiError, got ${e instanceof Error ? `${e.name}: ${e.message}` : String(e)}`);
  }
  throw new Error('expected the request to fail, it succeeded');
}

function expectNoSecret(error: SessionApiError, ...secrets: string[]): void {
  for (const secret of secrets) {
    expect(error.message).not.toContain(secret);
    expect(String(error)).not.toContain(secret);
    expect(error.stack ?? '').not.toContain(secret);
    expect(JSON.stringify({ kind: error.kind, status: error.status, message: error.message })).not.toContain(secret);
  }
}

const sessionBody = { id: 'sess_42', client_secret: 'cs_42_abcdef', iframe_url: 'https://example.invalid/iframe/sess_42' };

describe('POST /sessions', () => {
  it('sends the API key as a bearer token, JSON body, to {base_url}/sessions', async () => {
    const server = await serve(json(200, sessionBody));
    const session = await clientFor(server.url('/api/v1/')).createSession();
    expect(session).toMatchObject({ id: 'sess_42', clientSecret: 'cs_42_abcdef' });
    expect(server.requests).toHaveLength(1);
    const request = server.requests[0];
    expect(request?.method).toBe('POST');
    expect(request?.path).toBe('/api/v1/sessions');
    expect(request?.headers.authorization).toBe(`Bearer ${API_KEY}`);
    expect(request?.headers['content-type']).toMatch(/^application\/json/);
    expect(JSON.parse(request?.body ?? 'null')).toEqual({});
  });

  it('sends the configured creation body', async () => {
    const server = await serve(json(200, sessionBody));
    await clientFor(server.url('/v1'), { createBody: { purpose: 'age_check', site: 7 } }).createSession();
    expect(JSON.parse(server.requests[0]?.body ?? 'null')).toEqual({ purpose: 'age_check', site: 7 });
  });

  it('stamps the session with the clock reading taken before the request (lifetime counts from POST, spec §8)', async () => {
    let t = 1_000_000;
    const server = await serve((request, res) => {
      t += 4_000; // the clock moves while the request is in flight
      json(200, sessionBody)(request, res);
    });
    const session = await clientFor(server.url('/v1'), { now: () => t }).createSession();
    expect(session.createdAt).toBe(1_000_000);
  });

  it('ignores unknown response fields (browser SDK fields, spec §2.1)', async () => {
    const server = await serve(json(201, { ...sessionBody, sdk: { theme: 'dark' }, expires_at: 123, iframe_url: undefined }));
    const session = await clientFor(server.url('/v1')).createSession();
    expect(session.id).toBe('sess_42');
    expect(session.clientSecret).toBe('cs_42_abcdef');
  });

  it.each([
    ['not JSON', (_r: unknown, res: ServerResponse) => res.end('<html>hello</html>')],
    ['a JSON array', json(200, [sessionBody])],
    ['no client_secret', json(200, { id: 'sess_42' })],
    ['a numeric id', json(200, { id: 42, client_secret: 'cs' })],
    ['an empty client_secret', json(200, { id: 'sess_42', client_secret: '' })],
    ['JSON null', json(200, null)],
  ] as const)('a 2xx answer with %s → bad_response', async (_what, responder) => {
    const server = await serve(responder);
    const error = await failure(clientFor(server.url('/v1')).createSession());
    expect(error.kind).toBe('bad_response');
    expect(error.transient).toBe(false);
  });
});

describe('GET /sessions/{id}', () => {
  it('sends the API key and the URL-encoded id; returns the result with unknown fields tolerated', async () => {
    const result = {
      status: 'success',
      response: { 'org.iso.18013.5.1': { age_over_21: true } },
      errors: {},
      warnings: {},
      presentation: { transport: 'nfc' },
      something_new: [1, 2, 3],
    };
    const server = await serve(json(200, result));
    const got = await clientFor(server.url('/v1')).getResult('a/b c?');
    expect(got.status).toBe('success');
    expect(got.response).toEqual(result.response);
    expect(got.errors).toEqual({});
    const request = server.requests[0];
    expect(request?.method).toBe('GET');
    expect(request?.path).toBe('/v1/sessions/a%2Fb%20c%3F');
    expect(request?.headers.authorization).toBe(`Bearer ${API_KEY}`);
    expect(request?.body).toBe('');
  });

  it.each([
    ['no status', json(200, { response: {}, errors: {}, warnings: {} })],
    ['errors as an array', json(200, { status: 'success', response: {}, errors: [], warnings: {} })],
    ['not JSON', (_r: unknown, res: ServerResponse) => res.end('ok')],
  ] as const)('a 2xx answer with %s → bad_response', async (_what, responder) => {
    const server = await serve(responder);
    const error = await failure(clientFor(server.url('/v1')).getResult('s1'));
    expect(error.kind).toBe('bad_response');
  });
});

describe('typed HTTP failures', () => {
  const statuses: [number, SessionApiErrorKind, boolean][] = [
    [401, 'unauthorized', false],
    [403, 'forbidden', false],
    [404, 'not_found', false],
    [409, 'conflict', true],
    [429, 'rate_limited', true],
    [500, 'server', true],
    [502, 'server', true],
    [503, 'server', true],
    [400, 'client', false],
    [422, 'client', false],
  ];

  it.each(statuses)('HTTP %d → %s (transient: %s), for POST and GET', async (status, kind, transient) => {
    const server = await serve(json(status, { error: 'nope' }));
    const client = clientFor(server.url('/v1'));
    for (const call of [() => client.createSession(), () => client.getResult('s1')]) {
      const error = await failure(call());
      expect(error.kind).toBe(kind);
      expect(error.status).toBe(status);
      expect(error.transient).toBe(transient);
      expect(error.message).toContain(String(status));
    }
  });

  it('429 with Retry-After in seconds → retryAfterMs', async () => {
    const server = await serve(json(429, { error: 'slow down' }, { 'retry-after': '7' }));
    const error = await failure(clientFor(server.url('/v1')).createSession());
    expect(error.kind).toBe('rate_limited');
    expect(error.retryAfterMs).toBe(7_000);
  });

  it('409 with Retry-After in seconds → conflict with retryAfterMs (the keeper waits for it)', async () => {
    const server = await serve(json(409, { error: 'busy' }, { 'retry-after': '3' }));
    const error = await failure(clientFor(server.url('/v1')).createSession());
    expect(error.kind).toBe('conflict');
    expect(error.status).toBe(409);
    expect(error.retryAfterMs).toBe(3_000);
  });

  it('503 with Retry-After as an HTTP date → retryAfterMs', async () => {
    const at = new Date(Date.now() + 60_000).toUTCString();
    const server = await serve(json(503, { error: 'maintenance' }, { 'retry-after': at }));
    const error = await failure(clientFor(server.url('/v1')).createSession());
    expect(error.kind).toBe('server');
    expect(error.retryAfterMs).toBeGreaterThan(0);
    expect(error.retryAfterMs).toBeLessThanOrEqual(60_000);
  });

  it('429 without or with an unreadable Retry-After → no retryAfterMs', async () => {
    const server = await serve(json(429, {}));
    expect((await failure(clientFor(server.url('/v1')).createSession())).retryAfterMs).toBeUndefined();
    server.responder = json(429, {}, { 'retry-after': 'soon' });
    expect((await failure(clientFor(server.url('/v1')).createSession())).retryAfterMs).toBeUndefined();
  });

  it('connection refused → network (transient)', async () => {
    const port = await unusedPort();
    const client = clientFor(`http://127.0.0.1:${port}/v1`);
    for (const call of [() => client.createSession(), () => client.getResult('s1')]) {
      const error = await failure(call());
      expect(error.kind).toBe('network');
      expect(error.transient).toBe(true);
      expectNoSecret(error, API_KEY);
    }
  });

  it('a server that never answers → timeout after timeoutMs', async () => {
    const server = await serve(() => {
      // Never answers; the socket is destroyed when the server stops.
    });
    const client = clientFor(server.url('/v1'), { timeoutMs: 150 });
    for (const call of [() => client.createSession(), () => client.getResult('s1')]) {
      const error = await failure(call());
      expect(error.kind).toBe('timeout');
      expect(error.transient).toBe(true);
      expectNoSecret(error, API_KEY);
    }
  });

  it('a server that sends headers and then stalls the body → timeout', async () => {
    const server = await serve((_request, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '500' });
      res.write('{"id":"sess_42",');
    });
    const error = await failure(clientFor(server.url('/v1'), { timeoutMs: 200 }).createSession());
    expect(error.kind).toBe('timeout');
  });

  it('a caller abort → aborted', async () => {
    const server = await serve(() => {
      // never answers
    });
    const controller = new AbortController();
    const pending = clientFor(server.url('/v1'), { timeoutMs: 10_000 }).createSession(controller.signal);
    await server.nextRequest();
    controller.abort();
    const error = await failure(pending);
    expect(error.kind).toBe('aborted');
  });

  it('redirects are not followed (the bearer token must not travel to another address)', async () => {
    const elsewhere = await serve(json(200, sessionBody));
    const server = await serve((_request, res) => {
      res.writeHead(307, { location: elsewhere.url('/v1/sessions') });
      res.end();
    });
    const client = clientFor(server.url('/v1'));
    const error = await failure(client.createSession());
    expect(error).toBeInstanceOf(SessionApiError);
    server.responder = (_request, res) => {
      res.writeHead(302, { location: elsewhere.url('/v1/sessions/s1') });
      res.end();
    };
    await failure(client.getResult('s1'));
    expect(server.requests).toHaveLength(2);
    expect(elsewhere.requests).toHaveLength(0);
  });
});

describe('no API key in any error', () => {
  it('error messages never contain the API key, even when the server echoes it', async () => {
    const echo: Responder = (request, res) => {
      const status = Number(/status=(\d+)/.exec(request.path)?.[1] ?? '401');
      res.writeHead(status, { 'content-type': 'application/json', 'x-debug': request.headers.authorization ?? '' });
      res.end(JSON.stringify({ error: `key ${request.headers.authorization ?? ''} rejected`, status }));
    };
    const server = await serve(echo);
    for (const status of [401, 403, 404, 409, 429, 500, 503, 400]) {
      const client = clientFor(server.url(`/v1`));
      server.responder = (request, res) => echo({ ...request, path: `${request.path}?status=${status}` }, res);
      expectNoSecret(await failure(client.createSession()), API_KEY);
      expectNoSecret(await failure(client.getResult('s1')), API_KEY);
    }
    server.responder = (request, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(`not json, your key is ${request.headers.authorization ?? ''}`);
    };
    expectNoSecret(await failure(clientFor(server.url('/v1')).createSession()), API_KEY);
  });

  it('an API key that is not a valid header value is not echoed in the error', async () => {
    // e.g. a key pasted with a line break into the environment
    const badKey = 'sk_live_first_half\nsk_live_second_half';
    const server = await serve(json(200, sessionBody));
    const error = await failure(clientFor(server.url('/v1'), { apiKey: badKey }).createSession());
    expectNoSecret(error, 'sk_live_first_half', 'sk_live_second_half');
    expect(server.requests).toHaveLength(0);
  });
});
