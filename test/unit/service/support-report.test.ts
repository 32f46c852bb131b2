/**
 * The support bundle's view of the environment's proxy and of the route to the backend: a proxy by scheme,
 * host and port only — never a user, a password or a value that does not parse (it may hold one) — and
 * the route backend-proxy.ts takes, with a configuration problem named by its variable.
 */
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/platform/config.js';
import { backendRoute, dataFolderFacts, proxyEnvironment } from '../../../src/service/support-report.js';

const PASSWORD = 's3cr%40t-pw';

describe('support report: proxies', () => {
  it('shows each proxy variable by host and port, says whether credentials are set, and never quotes what does not parse', () => {
    const shown = proxyEnvironment({
      HTTPS_PROXY: `http://user:${PASSWORD}@proxy.corp.example:3128/`,
      http_proxy: 'proxy.corp.example:8080',
      HTTP_PROXY: `http://[bad ${PASSWORD}`,
      NO_PROXY: 'localhost,.corp.example',
      PATH: '/usr/bin',
    });
    expect(shown).toEqual({
      HTTPS_PROXY: { proxy: 'http://proxy.corp.example:3128', credentials: 'set (not included)' },
      http_proxy: { proxy: 'http://proxy.corp.example:8080', credentials: 'none' },
      HTTP_PROXY: { problem: 'not a proxy address (http://host:port); the value is not included' },
      NO_PROXY: 'localhost,.corp.example',
    });
    expect(JSON.stringify(shown)).not.toContain('s3cr');
    expect(JSON.stringify(shown)).not.toContain('user');
  });

  it('names the route: through which proxy and from where, direct by which no-proxy entry, or the variable that is wrong', () => {
    const config = parseConfig({ backend: { baseUrl: 'https://verifier.example/api' } });
    expect(backendRoute(config, { HTTPS_PROXY: `http://user:${PASSWORD}@proxy.corp.example:3128` })).toEqual({
      via: 'proxy',
      proxy: 'http://proxy.corp.example:3128',
      source: 'environment',
      credentials: 'from the proxy variable (not included)',
    });
    expect(backendRoute(config, { HTTPS_PROXY: 'http://proxy.corp.example:3128', NO_PROXY: 'verifier.example' })).toEqual({
      via: 'direct',
      bypassedProxy: 'http://proxy.corp.example:3128',
      because: 'NO_PROXY entry verifier.example',
    });
    expect(backendRoute(config, {})).toEqual({ via: 'direct' });
    const wrong = backendRoute(config, { HTTPS_PROXY: `ftp://user:${PASSWORD}@proxy.corp.example` });
    expect(wrong).toEqual({ via: 'unknown', problem: 'HTTPS_PROXY: only http:// and https:// proxies are supported' });
    expect(backendRoute(parseConfig({}), {})).toEqual({ via: 'none', why: 'no backend.baseUrl is configured' });
  });
});

describe('support report: the data folder', () => {
  // A first run, or a bundle made with a new --data-dir: the folder does not exist until the probe makes it.
  // Its room was asked first and read "free space unknown (ENOENT: it does not exist)" next to "writable".
  it('gives the free space of a folder the kiosk had not created yet, as well as that it can be written', async () => {
    const parent = await mkdtemp(join(tmpdir(), 'mdl-support-folder-'));
    try {
      const dir = join(parent, 'not-yet', 'mdl-kiosk');
      const facts = await dataFolderFacts(dir);
      expect((await stat(dir)).isDirectory()).toBe(true);
      expect(facts).toMatchObject({ path: dir, writable: true });
      expect(facts).not.toHaveProperty('statfsProblem');
      expect(typeof facts.freeBytes).toBe('number');
      expect(facts.freeBytes as number).toBeGreaterThan(0);
    } finally {
      await rm(parent, { recursive: true, force: true });
    }
  });
});
