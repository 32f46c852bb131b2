/**
 * The managed machine configuration file: where it lives on each OS, that a missing file is an empty
 * layer, and that a file that cannot be used is never silently skipped — the problem names the file and
 * the key (unknown keys too), without quoting what the file holds.
 */
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { KioskConfigShape, mergeConfig } from '../../../src/platform/config.js';
import { hashPin } from '../../../src/service/staff-pin.js';
import {
  layerKeys,
  managedAllowsBasicTextSecrets,
  managedConfigPath,
  managedKeys,
  MAX_MANAGED_CONFIG_BYTES,
  readManagedConfig,
} from '../../../src/service/managed-config.js';

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function policy(content: string | Buffer): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'mdl-kiosk-managed-'));
  dirs.push(dir);
  const path = join(dir, 'config.json');
  await writeFile(path, content);
  return path;
}

describe('managedConfigPath', () => {
  it('is the machine-wide, read-only place of each OS', () => {
    expect(managedConfigPath('linux', {})).toBe('/etc/mdl-kiosk/config.json');
    expect(managedConfigPath('darwin', {})).toBe('/Library/Application Support/mdl-kiosk/config.json');
    expect(managedConfigPath('win32', { ProgramData: 'D:\\Data' })).toBe('D:\\Data\\mdl-kiosk\\config.json');
    expect(managedConfigPath('win32', { PROGRAMDATA: 'E:\\PD' })).toBe('E:\\PD\\mdl-kiosk\\config.json');
    expect(managedConfigPath('win32', {})).toBe('C:\\ProgramData\\mdl-kiosk\\config.json');
    // A relative or empty value is not a machine folder: the documented default.
    expect(managedConfigPath('win32', { ProgramData: 'relative\\dir' })).toBe('C:\\ProgramData\\mdl-kiosk\\config.json');
    expect(managedConfigPath('freebsd', {})).toBe('/etc/mdl-kiosk/config.json');
  });
});

describe('readManagedConfig', () => {
  it('a missing file is an empty layer without a problem', () => {
    const path = join(tmpdir(), 'mdl-kiosk-no-such-dir', 'config.json');
    expect(readManagedConfig(path)).toEqual({ path, layer: {} });
  });

  it('a valid file is its layer, with every key it sets listed', async () => {
    const layer = {
      backend: { baseUrl: 'https://fleet.example/v1', apiKeyFile: '/etc/mdl-kiosk/api-key' },
      profile: 'identity',
      profiles: { staff_check: { namespaces: { 'org.iso.18013.5.1': ['family_name'] } } },
      staff: { pinHash: 'scrypt$16384$8$1$c2FsdHNhbHRzYWx0c2FsdA==$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2g=' },
      app: { allowBasicTextSecrets: true, updates: { enabled: true, url: 'https://updates.example/', channel: 'pilot' } },
    };
    const path = await policy(`\uFEFF${JSON.stringify(layer)}`);
    const managed = readManagedConfig(path);
    expect(managed).toEqual({ path, layer });
    expect(managedKeys(managed)).toEqual([
      'backend.baseUrl',
      'backend.apiKeyFile',
      'profile',
      // A record is one key: its inner names are data, not settings.
      'profiles',
      'staff.pinHash',
      'app.allowBasicTextSecrets',
      'app.updates.enabled',
      'app.updates.url',
      'app.updates.channel',
    ]);
    expect(managedAllowsBasicTextSecrets(managed)).toBe(true);
  });

  it('allowBasicTextSecrets is true only when the managed file says exactly true', async () => {
    expect(managedAllowsBasicTextSecrets(undefined)).toBe(false);
    expect(managedAllowsBasicTextSecrets(readManagedConfig(await policy('{}')))).toBe(false);
    expect(managedAllowsBasicTextSecrets(readManagedConfig(await policy('{"app":{"allowBasicTextSecrets":false}}')))).toBe(false);
    // A bad file's layer is empty: nothing is allowed by it.
    expect(managedAllowsBasicTextSecrets(readManagedConfig(await policy('{"app":{"allowBasicTextSecrets":"yes"}}')))).toBe(false);
  });

  it('a bad value: the problem names the file and the key, and the layer is not used', async () => {
    const path = await policy(
      JSON.stringify({ app: { updates: { url: 'http://updates.example/', maintenanceWindow: '2-4' } }, profile: 'identity' }),
    );
    const managed = readManagedConfig(path);
    expect(managed.layer).toEqual({});
    expect(managed.problem).toContain(path);
    expect(managed.problem).toContain('app.updates.url: must be an https://');
    expect(managed.problem).toContain('app.updates.maintenanceWindow: must be HH:MM-HH:MM');
  });

  it('an unknown key is a problem (a mistyped policy must not look applied)', async () => {
    const path = await policy(JSON.stringify({ backnd: { baseUrl: 'https://x.example' }, app: { updates: { chanel: 'pilot' } } }));
    const managed = readManagedConfig(path);
    expect(managed.layer).toEqual({});
    expect(managed.problem).toBe(`the managed configuration file ${path}: backnd: unknown key; app.updates.chanel: unknown key`);
    expect(layerKeys({ backend: { nope: 1 } }).unknown).toEqual(['backend.nope']);
  });

  it('every problem at once (issue 30): unknown keys and bad values together, past the third, so one restart shows all to fix', async () => {
    const path = await policy(
      JSON.stringify({
        backnd: { baseUrl: 'https://x.example' },
        app: { updates: { chanel: 'pilot', url: 'http://updates.example/', checkEveryMinutes: 5 }, kioskMode: 'on' },
        profile: '',
        staff: { maxAttempts: 0, lockoutMs: -1 },
        log: { level: 'loud' },
      }),
    );
    const managed = readManagedConfig(path);
    expect(managed.layer).toEqual({});
    const problems = managed.problem?.replace(`the managed configuration file ${path}: `, '').split('; ');
    // Unknown keys first, then the values in the schema's order.
    expect(problems?.slice(0, 2)).toEqual(['backnd: unknown key', 'app.updates.chanel: unknown key']);
    expect(problems?.slice(2).sort()).toEqual([
      'app.kioskMode: must be true or false',
      'app.updates.checkEveryMinutes: must be at least 15',
      'app.updates.url: must be an https:// address (plain http only to a loopback host such as 127.0.0.1, for a local mirror)',
      'log.level: must be one of "fatal", "error", "warn", "info", "debug", "trace" or "silent"',
      'profile: must not be empty',
      'staff.lockoutMs: must be greater than 0',
      'staff.maxAttempts: must be at least 1',
    ]);
  });

  it("zod's own wording never reaches the installer: each kind of problem in plain words", async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ profile: '' }, 'profile: must not be empty'],
      [{ backend: { apiKeyFile: '' } }, 'backend.apiKeyFile: must not be empty'],
      [{ app: { updates: { checkEveryMinutes: 60.5 } } }, 'app.updates.checkEveryMinutes: must be a whole number'],
      [{ app: { updates: { checkEveryMinutes: 2_000 } } }, 'app.updates.checkEveryMinutes: must be at most 1440'],
      [{ app: { updates: { enabled: 'yes' } } }, 'app.updates.enabled: must be true or false'],
      [{ staff: 'x' }, 'staff: must be an object ({…})'],
      [{ ble: { roles: [] } }, 'ble.roles: must be one of "both", "central", "peripheral" or "none"'],
      [{ timeouts: { httpMs: 'x' } }, 'timeouts.httpMs: must be a number'],
      [{ backend: { baseUrl: 5 } }, 'backend.baseUrl: must be text'],
    ];
    for (const [layer, expected] of cases) {
      const managed = readManagedConfig(await policy(JSON.stringify(layer)));
      expect(managed.problem, JSON.stringify(layer)).toMatch(new RegExp(`: ${expected.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`));
      expect(managed.problem).not.toMatch(/Too (small|big)|Invalid (input|option)|expected (string|number|int|boolean)|>=|<=/);
    }
  });

  it('a file of nothing but mistakes: as many as the screen shows, then how many more', async () => {
    const layer = Object.fromEntries(Array.from({ length: 80 }, (_, i) => [`mistake${String(i).padStart(2, '0')}`, i]));
    const path = await policy(JSON.stringify(layer));
    const problem = readManagedConfig(path).problem ?? '';
    expect(problem.length).toBeLessThanOrEqual(1_000);
    const named = problem.match(/mistake\d\d: unknown key/g) ?? [];
    expect(named.length).toBeGreaterThan(3);
    expect(problem).toMatch(new RegExp(`; and ${80 - named.length} more$`));
  });

  it('values are checked alone; rules across sections wait for the merged configuration', async () => {
    // Alone, a long verification exceeds the default session margin; with the site's config file it may not.
    const managed = readManagedConfig(await policy(JSON.stringify({ timeouts: { verificationMs: 200_000 } })));
    expect(managed.problem).toBeUndefined();
    expect(managed.layer).toEqual({ timeouts: { verificationMs: 200_000 } });
  });

  it('not JSON, not an object: named, without quoting the file (it may hold a key)', async () => {
    const notJson = await policy('{"backend": {"apiKey": sk_live_TOPSECRET}}');
    const bad = readManagedConfig(notJson);
    expect(bad.problem).toMatch(
      new RegExp(`^the managed configuration file ${notJson.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is not valid JSON`),
    );
    expect(bad.problem).not.toContain('TOPSECRET');
    expect(bad.layer).toEqual({});
    expect(readManagedConfig(await policy('[1, 2]')).problem).toMatch(/must hold a JSON object/);
    expect(readManagedConfig(await policy('')).problem).toMatch(/not valid JSON/);
  });

  it('a file over 1 MiB is refused without being parsed', async () => {
    const path = await policy(Buffer.alloc(MAX_MANAGED_CONFIG_BYTES + 1, 0x20));
    expect(readManagedConfig(path).problem).toBe(`the managed configuration file ${path} is larger than ${MAX_MANAGED_CONFIG_BYTES} bytes`);
    const exactly = await policy(`{}${' '.repeat(MAX_MANAGED_CONFIG_BYTES - 2)}`);
    expect(readManagedConfig(exactly)).toEqual({ path: exactly, layer: {} });
  });

  it('a directory or an unreadable file is a problem, not a missing file', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'mdl-kiosk-managed-'));
    dirs.push(dir);
    const asDir = join(dir, 'config.json');
    await mkdir(asDir);
    expect(readManagedConfig(asDir).problem).toMatch(/is not a regular file|EISDIR/);
    if (process.getuid?.() !== 0 && process.platform !== 'win32') {
      const locked = await policy('{}');
      await chmod(locked, 0o000);
      expect(readManagedConfig(locked).problem).toBe(`cannot read the managed configuration file ${locked}: EACCES`);
    }
  });
});

describe('every managed key with a malformed value is reported, naming the key', () => {
  type Json = Record<string, unknown>;
  /** Unwraps defaults and optionals down to the schema that describes the value itself. */
  const inner = (schema: z.ZodType): z.ZodType => {
    let current = schema;
    while (
      current instanceof z.ZodDefault ||
      current instanceof z.ZodPrefault ||
      current instanceof z.ZodOptional ||
      current instanceof z.ZodNullable
    ) {
      current = current.unwrap() as z.ZodType;
    }
    return current;
  };
  /** Every leaf key of the configuration schema (a record or a scalar is one key). */
  const leaves = (schema: z.ZodType, prefix = ''): string[] => {
    const object = inner(schema);
    if (!(object instanceof z.ZodObject)) return [prefix];
    return Object.entries(object.shape as Record<string, z.ZodType>).flatMap(([key, child]) =>
      leaves(child, prefix === '' ? key : `${prefix}.${key}`),
    );
  };
  const layerWith = (path: string, value: unknown): Json => {
    const keys = path.split('.');
    const root: Json = {};
    let node = root;
    for (const key of keys.slice(0, -1)) node = node[key] = {};
    node[keys.at(-1) ?? ''] = value;
    return root;
  };
  // Wrong for every key: a key takes a string, a number, a boolean, an array or an object — never all.
  const CANDIDATES: unknown[] = [{ unexpected: true }, [], 'not-a-valid-value', -1, true];

  const paths = leaves(KioskConfigShape);
  it('covers the whole schema', () => {
    expect(paths.length).toBeGreaterThan(60);
    expect(paths).toContain('staff.pinHash');
  });

  it.each(paths)('%s', async (path) => {
    // The first candidate the schema refuses for this key (the schema is the judge of what is malformed).
    const bad = CANDIDATES.find((value) => !KioskConfigShape.safeParse(mergeConfig({}, layerWith(path, value))).success);
    expect(bad, `${path} accepts every candidate: it is not validated`).toBeDefined();
    const managed = readManagedConfig(await policy(JSON.stringify(layerWith(path, bad))));
    // Named by its path (a record's key may name the entry inside it: profiles.<name>…).
    expect(managed.problem).toMatch(new RegExp(`: ${path.replace(/\./g, '\\.')}(\\.[^:;]+)?: `));
    expect(managed.layer).toEqual({});
  });

  it('the installer guide\'s placeholder staff.pinHash (and other unusable hashes) are config errors, not "no staff PIN"', async () => {
    for (const [hash, why] of [
      ['scrypt$32768$8$1$<salt>$<hash>', /base64.*placeholder/],
      ['plain:1234', /not in the form scrypt\$N\$r\$p\$salt\$hash/],
      ['scrypt$1000$8$1$c2FsdHNhbHQ=$aGFzaGhhc2hoYXNoaGFzaA==', /unusable N/],
      ['scrypt$32768$8$1$c2FsdA==$aGFzaA==', /16-byte salt and a 32-byte hash, this one has 4 and 4/],
    ] as const) {
      const managed = readManagedConfig(await policy(JSON.stringify({ staff: { pinHash: hash } })));
      expect(managed.problem).toMatch(new RegExp(`staff\\.pinHash: .*${why.source}`));
      expect(managed.problem).toContain('--set-pin');
    }
    const good = readManagedConfig(await policy(JSON.stringify({ staff: { pinHash: await hashPin('482915', { N: 1024, r: 8, p: 1 }) } })));
    expect(good.problem).toBeUndefined();
  });
});
