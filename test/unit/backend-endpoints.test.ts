/**
 * Endpoint derivation (spec §4.1, §4.2): `{base_url}/sessions`, `{base_url}/sessions/{id}` and
 * `{ws_base_url}/sessions/{id}/mdoc-proximity/ws`, `ws_base_url` being the same host with the ws scheme.
 * TLS is required except on loopback or when explicitly allowed (docs/privacy.md).
 */
import { describe, expect, it } from 'vitest';
import { InsecureBackendError, backendEndpoints } from '../../src/kiosk/backend-endpoints.js';
import { isLoopbackHost } from '../../src/platform/loopback-host.js';

const secure = { allowInsecure: false };

describe('backendEndpoints: derived URLs', () => {
  it.each([
    ['https://verify.example.com/api/v2', 'wss://verify.example.com/api/v2/sessions/s1/mdoc-proximity/ws'],
    ['https://verify.example.com/api/v2/', 'wss://verify.example.com/api/v2/sessions/s1/mdoc-proximity/ws'],
    ['https://verify.example.com/api/v2//', 'wss://verify.example.com/api/v2/sessions/s1/mdoc-proximity/ws'],
    ['https://verify.example.com', 'wss://verify.example.com/sessions/s1/mdoc-proximity/ws'],
    ['https://verify.example.com/', 'wss://verify.example.com/sessions/s1/mdoc-proximity/ws'],
    ['https://verify.example.com:8443/base', 'wss://verify.example.com:8443/base/sessions/s1/mdoc-proximity/ws'],
    ['http://127.0.0.1:8080/v1', 'ws://127.0.0.1:8080/v1/sessions/s1/mdoc-proximity/ws'],
    ['http://localhost:3000/', 'ws://localhost:3000/sessions/s1/mdoc-proximity/ws'],
  ])('%s → %s', (base, expected) => {
    const endpoints = backendEndpoints(base, secure);
    expect(endpoints.relaySocketUrl('s1').href).toBe(expected);
  });

  it('https → wss and http → ws', () => {
    expect(backendEndpoints('https://h.example/v1', secure).relaySocketUrl('x').protocol).toBe('wss:');
    expect(backendEndpoints('http://127.0.0.1/v1', secure).relaySocketUrl('x').protocol).toBe('ws:');
    expect(backendEndpoints('http://lab.example/v1', { allowInsecure: true }).relaySocketUrl('x').protocol).toBe('ws:');
  });

  it('HTTP endpoints keep the scheme and the path prefix', () => {
    for (const base of ['https://h.example/api/v2', 'https://h.example/api/v2/']) {
      const endpoints = backendEndpoints(base, secure);
      expect(endpoints.sessionsUrl().href).toBe('https://h.example/api/v2/sessions');
      expect(endpoints.sessionUrl('sess_9').href).toBe('https://h.example/api/v2/sessions/sess_9');
      expect(endpoints.origin).toBe('https://h.example');
    }
  });

  it('the socket URL carries no credentials and no query', () => {
    const url = backendEndpoints('https://h.example/v1', secure).relaySocketUrl('s1');
    expect(url.search).toBe('');
    expect(url.username).toBe('');
    expect(url.password).toBe('');
    expect(url.hash).toBe('');
  });

  it('session ids are percent-encoded as one path segment', () => {
    const endpoints = backendEndpoints('https://h.example/v1/', secure);
    const ws = endpoints.relaySocketUrl('a/b c?');
    expect(ws.pathname).toBe('/v1/sessions/a%2Fb%20c%3F/mdoc-proximity/ws');
    expect(ws.search).toBe('');
    expect(ws.href).toBe('wss://h.example/v1/sessions/a%2Fb%20c%3F/mdoc-proximity/ws');
    expect(endpoints.sessionUrl('a/b c?').pathname).toBe('/v1/sessions/a%2Fb%20c%3F');
    expect(endpoints.sessionUrl('50%#x').href).toBe('https://h.example/v1/sessions/50%25%23x');
    expect(endpoints.sessionUrl('ünï').pathname).toBe('/v1/sessions/%C3%BCn%C3%AF');
    // Decoding the segment gives the id back.
    const segment = ws.pathname.split('/')[3] ?? '';
    expect(decodeURIComponent(segment)).toBe('a/b c?');
  });

  it('every call derives a fresh URL (mutating one does not affect the next)', () => {
    const endpoints = backendEndpoints('https://h.example/v1', secure);
    const first = endpoints.relaySocketUrl('s1');
    first.searchParams.set('token', 'secret');
    expect(endpoints.relaySocketUrl('s1').search).toBe('');
  });
});

describe('backendEndpoints: transport security', () => {
  it.each([
    'http://verify.example.com/v1',
    'http://10.0.0.5:8080/v1',
    'http://192.168.1.20/v1',
    'http://128.0.0.1/v1',
    'http://127.0.0.1.nip.io/v1',
    'http://localhost.example.com/v1',
    'http://kiosk.localhost:8080/v1',
    'http://[2001:db8::1]/v1',
  ])('refuses plain http to a non-loopback host: %s', (base) => {
    expect(() => backendEndpoints(base, secure)).toThrow(InsecureBackendError);
  });

  it('explains how to proceed when refusing plain http', () => {
    expect(() => backendEndpoints('http://verify.example.com/v1', secure)).toThrow(/https|allowInsecure/);
  });

  it.each(['http://verify.example.com/v1', 'http://10.0.0.5:8080/v1', 'http://[2001:db8::1]/v1'])(
    'allows plain http to %s with allowInsecure',
    (base) => {
      expect(backendEndpoints(base, { allowInsecure: true }).sessionsUrl().protocol).toBe('http:');
    },
  );

  it.each([
    'http://localhost/v1',
    'http://localhost:9000/v1',
    'http://LOCALHOST:9000/v1',
    'http://127.0.0.1:9000/v1',
    'http://127.0.0.1/v1',
    'http://127.1.2.3/v1',
    'http://127.255.255.254/v1',
    'http://[::1]:9000/v1',
  ])('allows plain http to loopback without allowInsecure: %s', (base) => {
    const endpoints = backendEndpoints(base, secure);
    expect(endpoints.sessionsUrl().protocol).toBe('http:');
    expect(endpoints.relaySocketUrl('s').protocol).toBe('ws:');
  });

  it.each([
    ['localhost', true],
    ['127.0.0.1', true],
    ['127.9.8.7', true],
    ['[::1]', true],
    ['::1', true],
    ['10.0.0.1', false],
    ['0.0.0.0', false],
    ['example.com', false],
    ['127.0.0.1.example.com', false],
    ['[::2]', false],
    // Loopback by RFC 6761 only if the resolver says so; the system resolver may ask DNS, which answers anything.
    ['kiosk.localhost', false],
    ['evil.example.localhost', false],
    ['localhost.example.com', false],
  ])('isLoopbackHost(%s) = %s', (host, expected) => {
    expect(isLoopbackHost(host)).toBe(expected);
  });

  it.each([
    ['https://user:pass@verify.example.com/v1', 'user and password'],
    ['https://user@verify.example.com/v1', 'user only'],
    ['http://admin:hunter2@127.0.0.1:8080/v1', 'credentials on loopback'],
  ])('refuses a base URL with credentials: %s (%s)', (base) => {
    expect(() => backendEndpoints(base, { allowInsecure: true })).toThrow(InsecureBackendError);
  });

  it('does not echo credentials in the error', () => {
    let caught: unknown;
    try {
      backendEndpoints('https://user:hunter2@verify.example.com/v1', secure);
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(InsecureBackendError);
    expect((caught as Error).message).not.toContain('hunter2');
  });

  it.each(['https://verify.example.com/v1?tenant=a', 'https://verify.example.com/v1?token=abc', 'https://verify.example.com/v1#frag'])(
    'refuses a base URL with a query or fragment: %s',
    (base) => {
      expect(() => backendEndpoints(base, secure)).toThrow(InsecureBackendError);
    },
  );

  it.each(['not a url', '', 'ftp://verify.example.com/v1', 'ws://127.0.0.1/v1', 'file:///etc/passwd'])(
    'refuses something that is not an http(s) URL: %j',
    (base) => {
      expect(() => backendEndpoints(base, { allowInsecure: true })).toThrow(InsecureBackendError);
    },
  );
});
