/**
 * Kiosk configuration: documented defaults, precedence (defaults → file → environment → overrides →
 * managed file), validation with messages that name the offending setting, the timeout consistency rules,
 * the API key file, and the desktop application's `app` section.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError, defaultBleRoles, jsonSyntaxText, loadConfig, mergeConfig, parseConfig } from '../../src/platform/config.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'mdl-kiosk-config-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function file(name: string, content: string): string {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (e) {
    if (e instanceof ConfigError) return e;
    throw new Error(`expected a ConfigError, got ${e instanceof Error ? `${e.name}: ${e.message}` : String(e)}`);
  }
  throw new Error('expected a ConfigError, the configuration was accepted');
}

describe('defaults', () => {
  it('an empty configuration gets the documented defaults', () => {
    const config = parseConfig({});
    expect(config.backend).toEqual({
      wsAuth: 'header',
      allowInsecure: false,
      createSessionBody: {},
      maxMessageBytes: 16 * 1024 * 1024,
      proxy: { useEnvironment: true },
      tls: {},
    });
    expect(config.session).toEqual({
      lifetimeMs: 600_000,
      renewBeforeExpiryMs: 240_000,
      minRemainingToStartMs: 180_000,
      conflictRetries: 5,
      conflictBackoffMs: 250,
      offlineBackoffMinMs: 1_000,
      offlineBackoffMaxMs: 30_000,
      maxRequestsPerMinute: 20,
      prewarm: 'always',
      businessHours: '07:00-20:00',
      keepWarmAfterUseMs: 600_000,
    });
    expect(config.timeouts.httpMs).toBe(5_000);
    expect(config.timeouts.connectMs).toBe(5_000);
    expect(config.timeouts.verificationMs).toBe(150_000);
    expect(config.profile).toBe('age_over_21');
    expect(config.profiles).toEqual({});
    expect(config.qr).toEqual({ requireMdocPrefix: true, scanFreshMs: 10_000 });
    expect(config.log.level).toBe('info');
  });

  it('the session lifetime default is the 10 minutes of spec §8 and the HTTP timeout about 5 s', () => {
    const config = parseConfig({});
    expect(config.session.lifetimeMs).toBe(10 * 60 * 1000);
    expect(config.timeouts.httpMs).toBe(5_000);
  });

  it('a silent backend is found within seconds by default (docs/protocol.md §10.2): ping every 5 s, pong within 2.5 s, first reply within 4 s; bounded', () => {
    const { timeouts } = parseConfig({});
    expect({ heartbeatMs: timeouts.heartbeatMs, pongMs: timeouts.pongMs, firstReplyMs: timeouts.firstReplyMs }).toEqual({
      heartbeatMs: 5_000,
      pongMs: 2_500,
      firstReplyMs: 4_000,
    });
    expect(timeouts.heartbeatMs + timeouts.pongMs).toBeLessThanOrEqual(7_500);
    expect(() => parseConfig({ timeouts: { pongMs: 0 } })).toThrow(/pongMs/);
    expect(() => parseConfig({ timeouts: { pongMs: 60_001 } })).toThrow(/pongMs/);
    expect(() => parseConfig({ timeouts: { firstReplyMs: 60_001 } })).toThrow(/firstReplyMs/);
    expect(parseConfig({ timeouts: { firstReplyMs: 1_000 } }).timeouts.firstReplyMs).toBe(1_000);
  });

  it('every timeout is a positive number, so no wait is unbounded', () => {
    for (const [name, value] of Object.entries(parseConfig({}).timeouts)) {
      expect(value, name).toBeGreaterThan(0);
      expect(Number.isFinite(value), name).toBe(true);
    }
  });

  it('a partial section keeps the defaults of its other keys', () => {
    const config = parseConfig({ timeouts: { httpMs: 2_000 }, backend: { wsAuth: 'query' } });
    expect(config.timeouts.httpMs).toBe(2_000);
    expect(config.timeouts.connectMs).toBe(5_000);
    expect(config.backend.wsAuth).toBe('query');
    expect(config.backend.allowInsecure).toBe(false);
  });
});

describe('Bluetooth roles per OS', () => {
  const realPlatform = process.platform;
  const pretend = (platform: NodeJS.Platform): void => {
    Object.defineProperty(process, 'platform', { value: platform, configurable: true });
  };
  afterEach(() => pretend(realPlatform));

  it('both roles by default, except on Windows: central there (bleno has no peripheral on the built-in radio)', () => {
    expect(defaultBleRoles('linux')).toBe('both');
    expect(defaultBleRoles('darwin')).toBe('both');
    expect(defaultBleRoles('win32')).toBe('central');
    pretend('win32');
    expect(parseConfig({}).ble.roles).toBe('central');
    expect(parseConfig({ ble: { roles: 'both' } }).ble.roles).toBe('both'); // an explicit choice stays
    pretend('darwin');
    expect(parseConfig({}).ble.roles).toBe('both');
  });

  it('ble.usbDongle is VID:PID in hex; unset by default', () => {
    expect(parseConfig({}).ble.usbDongle).toBeUndefined();
    expect(parseConfig({ ble: { usbDongle: '0A12:0001' } }).ble.usbDongle).toEqual({ vid: 0x0a12, pid: 0x0001 });
  });
});

describe('sources and precedence', () => {
  it('reads a JSON config file', () => {
    const path = file('kiosk.json', JSON.stringify({ backend: { baseUrl: 'https://file.example/v1' }, timeouts: { httpMs: 4_000 } }));
    const config = loadConfig({ file: path, env: {} });
    expect(config.backend.baseUrl).toBe('https://file.example/v1');
    expect(config.timeouts.httpMs).toBe(4_000);
  });

  it('finds the file through MDL_KIOSK_CONFIG', () => {
    const path = file('kiosk.json', JSON.stringify({ profile: 'identity' }));
    expect(loadConfig({ env: { MDL_KIOSK_CONFIG: path } }).profile).toBe('identity');
  });

  it('an explicit file wins over MDL_KIOSK_CONFIG', () => {
    const a = file('a.json', JSON.stringify({ profile: 'identity' }));
    const b = file('b.json', JSON.stringify({ profile: 'full' }));
    expect(loadConfig({ file: a, env: { MDL_KIOSK_CONFIG: b } }).profile).toBe('identity');
  });

  it('the environment wins over the file; the file still supplies what the environment does not', () => {
    const path = file(
      'kiosk.json',
      JSON.stringify({ backend: { baseUrl: 'https://file.example/v1', apiKey: 'file-key', wsAuth: 'query' }, profile: 'identity' }),
    );
    const config = loadConfig({
      file: path,
      env: { MDL_KIOSK_BACKEND_URL: 'https://env.example/v1', MDL_KIOSK_API_KEY: 'env-key', MDL_KIOSK_PROFILE: 'full' },
    });
    expect(config.backend.baseUrl).toBe('https://env.example/v1');
    expect(config.backend.apiKey).toBe('env-key');
    expect(config.profile).toBe('full');
    expect(config.backend.wsAuth).toBe('query');
  });

  it('overrides (CLI flags) win over the environment and the file', () => {
    const path = file('kiosk.json', JSON.stringify({ backend: { baseUrl: 'https://file.example/v1' }, profile: 'identity' }));
    const config = loadConfig({
      file: path,
      env: { MDL_KIOSK_BACKEND_URL: 'https://env.example/v1', MDL_KIOSK_PROFILE: 'full' },
      overrides: { backend: { baseUrl: 'https://cli.example/v1' }, profile: 'age_over_18' },
    });
    expect(config.backend.baseUrl).toBe('https://cli.example/v1');
    expect(config.profile).toBe('age_over_18');
  });

  it('unset environment variables do not erase file values', () => {
    const path = file('kiosk.json', JSON.stringify({ backend: { baseUrl: 'https://file.example/v1', apiKey: 'file-key' } }));
    const config = loadConfig({ file: path, env: {} });
    expect(config.backend.baseUrl).toBe('https://file.example/v1');
    expect(config.backend.apiKey).toBe('file-key');
  });

  it('mergeConfig merges objects deeply and replaces arrays and scalars', () => {
    expect(mergeConfig({ a: { b: 1, c: [1, 2] }, d: 'x', e: { f: 1 } }, { a: { c: [3] }, d: 'y', e: undefined, g: { h: true } })).toEqual({
      a: { b: 1, c: [3] },
      d: 'y',
      e: { f: 1 },
      g: { h: true },
    });
  });

  it('a missing config file is a clear error naming the file', () => {
    const missing = join(dir, 'nope.json');
    expect(configError(() => loadConfig({ file: missing, env: {} })).message).toContain(missing);
  });

  it('a config file with keys the kiosk does not know names every one of them (a misspelt key must not look applied)', () => {
    const path = file(
      'typo.json',
      JSON.stringify({
        backend: { baseUrl: 'https://verify.example', apiKey: 'k', timeoutMS: 5 },
        profil: 'identity',
        ble: { roles: 'central', procces: 'inline' },
      }),
    );
    const message = configError(() => loadConfig({ file: path, env: {} })).message;
    expect(message).toContain(path);
    expect(message).toContain('unknown keys backend.timeoutMS, profil, ble.procces');
    // Known keys that hold records (profiles) are one key each: their insides are not "unknown".
    expect(() =>
      loadConfig({ file: file('ok.json', JSON.stringify({ backend: { baseUrl: 'https://verify.example', apiKey: 'k' } })), env: {} }),
    ).not.toThrow();
  });

  it('a config file that is not JSON, or not an object, is refused', () => {
    expect(configError(() => loadConfig({ file: file('bad.json', '{ "profile": '), env: {} })).message).toMatch(/not valid JSON/);
    expect(configError(() => loadConfig({ file: file('arr.json', '[1,2]'), env: {} })).message).toMatch(/JSON object/);
  });

  it('a JSON syntax error does not quote the file (it may hold an API key)', () => {
    const error = configError(() => loadConfig({ file: file('bad.json', '{"backend": {"apiKey": sk_live_SECRET_55}}'), env: {} }));
    expect(error.message).toMatch(/not valid JSON: Unexpected token/);
    expect(error.message).not.toContain('SECRET_55');
    expect(jsonSyntaxText(new SyntaxError('Unterminated string in JSON at position 18'))).toBe(
      'Unterminated string in JSON at position 18',
    );
  });

  it('the managed layer wins over every other source, the command line included', () => {
    const path = file(
      'kiosk.json',
      JSON.stringify({ backend: { baseUrl: 'https://file.example/v1' }, profile: 'identity', app: { updates: { channel: 'beta' } } }),
    );
    const config = loadConfig({
      file: path,
      env: { MDL_KIOSK_BACKEND_URL: 'https://env.example/v1', MDL_KIOSK_PROFILE: 'full' },
      persisted: { profile: 'age_over_18' },
      overrides: { backend: { baseUrl: 'https://cli.example/v1' }, profile: 'age_over_18' },
      managed: { backend: { baseUrl: 'https://fleet.example/v1' }, app: { updates: { channel: 'pilot' } } },
    });
    expect(config.backend.baseUrl).toBe('https://fleet.example/v1');
    expect(config.app.updates.channel).toBe('pilot');
    // What the managed file leaves unset still comes from below.
    expect(config.profile).toBe('age_over_18');
  });

  it('a managed API key file replaces an API key given lower down (and the reverse)', () => {
    const keyFile = file('fleet-key', 'fleet_key_1\n');
    expect(loadConfig({ env: { MDL_KIOSK_API_KEY: 'env-key' }, managed: { backend: { apiKeyFile: keyFile } } }).backend.apiKey).toBe(
      'fleet_key_1',
    );
    expect(loadConfig({ env: { MDL_KIOSK_API_KEY_FILE: keyFile }, managed: { backend: { apiKey: 'managed-key' } } }).backend.apiKey).toBe(
      'managed-key',
    );
  });
});

describe('the app section (desktop application)', () => {
  it('has the documented defaults', () => {
    expect(parseConfig({}).app).toEqual({
      kioskMode: true,
      startAtLogin: false,
      restartBy: 'self',
      devTools: false,
      hardwareAcceleration: true,
      allowBasicTextSecrets: false,
      updates: { enabled: false, channel: 'latest', checkEveryMinutes: 240 },
      logs: { retentionDays: 14, maxFileMegabytes: 10 },
      health: { everySeconds: 30 },
    });
  });

  it('accepts a full, valid section', () => {
    const app = {
      kioskMode: false,
      startAtLogin: true,
      restartBy: 'supervisor',
      devTools: true,
      hardwareAcceleration: false,
      allowBasicTextSecrets: true,
      updates: {
        enabled: true,
        url: 'https://updates.example.com/mdl-kiosk/',
        channel: 'pilot-2',
        checkEveryMinutes: 15,
        maintenanceWindow: '23:30-01:15',
      },
      logs: { retentionDays: 365, maxFileMegabytes: 100 },
      health: { everySeconds: 3_600, metricsFile: '/var/lib/node_exporter/textfile_collector/mdl_kiosk.prom' },
    };
    expect(parseConfig({ app }).app).toEqual(app);
  });

  it('allows plain http for an update feed on this machine only', () => {
    for (const url of ['http://127.0.0.1:8080/feed/', 'http://localhost/feed', 'http://[::1]:9000/']) {
      expect(parseConfig({ app: { updates: { url } } }).app.updates.url, url).toBe(url);
    }
  });

  it.each([
    [{ updates: { url: 'http://updates.example.com/' } }, 'app.updates.url', /https:\/\//],
    [{ updates: { url: 'ftp://updates.example.com/' } }, 'app.updates.url', /https:\/\//],
    [{ updates: { url: 'updates.example.com' } }, 'app.updates.url', /absolute URL/],
    [{ updates: { url: 'https://user:pw@updates.example.com/' } }, 'app.updates.url', /user name or password/],
    [{ updates: { channel: 'Beta' } }, 'app.updates.channel', /lower-case/],
    [{ updates: { channel: '1st' } }, 'app.updates.channel', /starting with a letter/],
    [{ updates: { channel: `a${'b'.repeat(32)}` } }, 'app.updates.channel', /at most 32/],
    [{ updates: { maintenanceWindow: '2:00-4:00' } }, 'app.updates.maintenanceWindow', /HH:MM-HH:MM/],
    [{ updates: { maintenanceWindow: '24:00-01:00' } }, 'app.updates.maintenanceWindow', /HH:MM-HH:MM/],
    [{ updates: { maintenanceWindow: '02:00-02:60' } }, 'app.updates.maintenanceWindow', /HH:MM-HH:MM/],
    [{ updates: { maintenanceWindow: '02:00-02:00' } }, 'app.updates.maintenanceWindow', /same minute/],
    [{ updates: { checkEveryMinutes: 14 } }, 'app.updates.checkEveryMinutes', /must be at least 15$/],
    [{ updates: { checkEveryMinutes: 1_441 } }, 'app.updates.checkEveryMinutes', /must be at most 1440$/],
    [{ updates: { checkEveryMinutes: 60.5 } }, 'app.updates.checkEveryMinutes', /must be a whole number/],
    [{ updates: { enabled: 'yes' } }, 'app.updates.enabled', /must be true or false/],
    [{ logs: { retentionDays: 0 } }, 'app.logs.retentionDays', /must be at least 1$/],
    [{ logs: { retentionDays: 366 } }, 'app.logs.retentionDays', /must be at most 365$/],
    [{ logs: { maxFileMegabytes: 0 } }, 'app.logs.maxFileMegabytes', /must be at least 1$/],
    [{ logs: { maxFileMegabytes: 101 } }, 'app.logs.maxFileMegabytes', /must be at most 100$/],
    [{ health: { everySeconds: 4 } }, 'app.health.everySeconds', /must be at least 5$/],
    [{ health: { everySeconds: 3_601 } }, 'app.health.everySeconds', /must be at most 3600$/],
    [{ kioskMode: 'on' }, 'app.kioskMode', /must be true or false/],
    [{ allowBasicTextSecrets: 1 }, 'app.allowBasicTextSecrets', /must be true or false/],
  ])('%j → message names %s', (app, key, why) => {
    const error = configError(() => parseConfig({ app }));
    expect(error.message).toContain(`${key}: `);
    expect(error.message).toMatch(why);
  });
});

describe('API key file', () => {
  it('reads the first line of backend.apiKeyFile, trimmed', () => {
    const keyFile = file('key', '  sk_from_file_123  \r\nsecond line ignored\n');
    const config = loadConfig({ overrides: { backend: { apiKeyFile: keyFile } }, env: {} });
    expect(config.backend.apiKey).toBe('sk_from_file_123');
  });

  it('reads MDL_KIOSK_API_KEY_FILE from the environment', () => {
    const keyFile = file('key', 'sk_env_file_456\n');
    expect(loadConfig({ env: { MDL_KIOSK_API_KEY_FILE: keyFile } }).backend.apiKey).toBe('sk_env_file_456');
  });

  it('an API key given directly at the same level wins over a key file', () => {
    const keyFile = file('key', 'sk_from_file\n');
    const config = loadConfig({ env: { MDL_KIOSK_API_KEY: 'sk_direct', MDL_KIOSK_API_KEY_FILE: keyFile } });
    expect(config.backend.apiKey).toBe('sk_direct');
  });

  it('an API key file given in the environment wins over an apiKey in the config file (env > file)', () => {
    const keyFile = file('key', 'sk_env_file\n');
    const path = file('kiosk.json', JSON.stringify({ backend: { apiKey: 'sk_stale_in_file' } }));
    const config = loadConfig({ file: path, env: { MDL_KIOSK_API_KEY_FILE: keyFile } });
    expect(config.backend.apiKey).toBe('sk_env_file');
  });

  it('an empty key file is refused with a clear message', () => {
    const keyFile = file('key', '\n');
    const error = configError(() => loadConfig({ env: { MDL_KIOSK_API_KEY_FILE: keyFile } }));
    expect(error.message).toContain(keyFile);
    expect(error.message).toMatch(/empty/);
  });

  it('an unreadable key file is refused with a message naming it', () => {
    const keyFile = join(dir, 'missing-key');
    const error = configError(() => loadConfig({ env: { MDL_KIOSK_API_KEY_FILE: keyFile } }));
    expect(error.message).toContain(keyFile);
    expect(error.message).toMatch(/API key file/);
  });
});

describe('invalid values are rejected with clear messages', () => {
  it.each([
    [{ backend: { baseUrl: 'not a url' } }, 'backend.baseUrl'],
    [{ backend: { wsAuth: 'cookie' } }, 'backend.wsAuth'],
    [{ backend: { allowInsecure: 'yes' } }, 'backend.allowInsecure'],
    [{ backend: { apiKey: '' } }, 'backend.apiKey'],
    [{ backend: { maxMessageBytes: 0 } }, 'backend.maxMessageBytes'],
    [{ timeouts: { httpMs: -1 } }, 'timeouts.httpMs'],
    [{ timeouts: { connectMs: 0 } }, 'timeouts.connectMs'],
    [{ timeouts: { apduMs: 1.5 } }, 'timeouts.apduMs'],
    [{ timeouts: { bleSetupMs: '30s' } }, 'timeouts.bleSetupMs'],
    [{ session: { conflictRetries: 21 } }, 'session.conflictRetries'],
    [{ session: { conflictRetries: -1 } }, 'session.conflictRetries'],
    [{ session: { offlineBackoffMinMs: 0 } }, 'session.offlineBackoffMinMs'],
    [{ log: { level: 'verbose' } }, 'log.level'],
    [{ ble: { roles: 'all' } }, 'ble.roles'],
    [{ ble: { usbDongle: '0a12-0001' } }, 'ble.usbDongle'],
    [{ ble: { usbDongle: 'USB\\VID_0A12&PID_0001' } }, 'ble.usbDongle'],
    [{ profile: '' }, 'profile'],
    [{ profiles: { empty: { namespaces: { 'org.iso.18013.5.1': [] } } } }, 'profiles.empty.namespaces'],
    [{ profiles: { bad: { namespaces: { 'org.iso.18013.5.1': 'age_over_18' } } } }, 'profiles.bad.namespaces'],
  ])('%j → message names %s', (input, path) => {
    const error = configError(() => parseConfig(input));
    expect(error.message).toContain(path);
    expect(error.message).toMatch(/^invalid configuration: /);
  });

  it('a profile asking for nothing says so', () => {
    const error = configError(() => parseConfig({ profiles: { empty: { namespaces: { 'org.iso.18013.5.1': [] } } } }));
    expect(error.message).toMatch(/at least one element/);
  });

  it('reports every problem at once', () => {
    const error = configError(() => parseConfig({ backend: { wsAuth: 'x' }, timeouts: { httpMs: 0 }, log: { level: 'loud' } }));
    expect(error.message).toContain('backend.wsAuth');
    expect(error.message).toContain('timeouts.httpMs');
    expect(error.message).toContain('log.level');
  });

  it('does not echo the API key when another value is invalid', () => {
    const error = configError(() => parseConfig({ backend: { apiKey: 'sk_secret_777', baseUrl: 'nope' } }));
    expect(error.message).not.toContain('sk_secret_777');
  });

  it('loadConfig validates the merged result', () => {
    const error = configError(() => loadConfig({ env: { MDL_KIOSK_BACKEND_URL: 'definitely not a url' } }));
    expect(error.message).toContain('backend.baseUrl');
  });
});

describe('timeout consistency rules', () => {
  const consistent = {
    session: { lifetimeMs: 4_000, renewBeforeExpiryMs: 2_500, minRemainingToStartMs: 2_000 },
    timeouts: { verificationMs: 2_000 },
  };

  it('a short but consistent lifetime is accepted', () => {
    const config = parseConfig(consistent);
    expect(config.session.lifetimeMs).toBe(4_000);
  });

  it('minRemainingToStartMs must cover a whole verification (verificationMs)', () => {
    const error = configError(() => parseConfig(mergeConfig(consistent, { timeouts: { verificationMs: 2_001 } })));
    expect(error.message).toContain('session.minRemainingToStartMs');
    expect(error.message).toContain('verificationMs');
  });

  it('renewBeforeExpiryMs must exceed minRemainingToStartMs', () => {
    const equal = configError(() => parseConfig(mergeConfig(consistent, { session: { renewBeforeExpiryMs: 2_000 } })));
    expect(equal.message).toContain('session.renewBeforeExpiryMs');
    expect(equal.message).toContain('minRemainingToStartMs');
  });

  it('renewBeforeExpiryMs must be below the lifetime', () => {
    const error = configError(() => parseConfig(mergeConfig(consistent, { session: { renewBeforeExpiryMs: 4_000 } })));
    expect(error.message).toContain('session.renewBeforeExpiryMs');
    expect(error.message).toContain('lifetimeMs');
  });

  it('the defaults satisfy every rule', () => {
    const { session, timeouts } = parseConfig({});
    expect(session.minRemainingToStartMs).toBeGreaterThanOrEqual(timeouts.verificationMs);
    expect(session.renewBeforeExpiryMs).toBeGreaterThan(session.minRemainingToStartMs);
    expect(session.renewBeforeExpiryMs).toBeLessThan(session.lifetimeMs);
  });

  it('changing only verificationMs past the default margin is refused', () => {
    const error = configError(() => parseConfig({ timeouts: { verificationMs: 200_000 } }));
    expect(error.message).toContain('session.minRemainingToStartMs');
  });
});

describe('every duration is bounded', () => {
  // Node's timers take at most 2^31 − 1 ms and fire at once beyond it: a lifetime of 1e10 ms renewed the
  // pre-warmed session in a loop (about 100 POST /sessions a second).
  it('lifetimeMs: 1e10 is refused with a message naming the key and the bound', () => {
    expect(() => parseConfig({ session: { lifetimeMs: 1e10 } })).toThrow(/session\.lifetimeMs: at most 3600000 ms \(1 h\)/);
  });

  it('each timeout, back-off and display time refuses more than a day, and 2^31 ms', () => {
    const defaults = parseConfig({});
    const sections = {
      timeouts: defaults.timeouts,
      session: defaults.session,
      pcsc: defaults.pcsc,
      qr: defaults.qr,
      staff: defaults.staff,
    } as const;
    for (const [section, values] of Object.entries(sections)) {
      for (const [key, value] of Object.entries(values)) {
        if (!key.endsWith('Ms') || typeof value !== 'number') continue;
        for (const tooLong of [86_400_001, 2 ** 31]) {
          expect(() => parseConfig({ [section]: { [key]: tooLong } }), `${section}.${key} = ${tooLong}`).toThrow(
            new RegExp(`${section}\\.${key}: at most`),
          );
        }
      }
    }
  });
});

describe('the pre-warm policy', () => {
  it('takes always, business_hours or on_demand, and business hours as HH:MM-HH:MM, naming the key otherwise', () => {
    expect(parseConfig({ session: { prewarm: 'business_hours', businessHours: '22:00-02:00' } }).session).toMatchObject({
      prewarm: 'business_hours',
      businessHours: '22:00-02:00',
    });
    expect(() => parseConfig({ session: { prewarm: 'sometimes' } })).toThrow(/session\.prewarm/);
    expect(() => parseConfig({ session: { businessHours: '9-5' } })).toThrow(/session\.businessHours: must be HH:MM-HH:MM/);
  });
});
