import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readEarlyConfig } from '../../../src/main/app-settings.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'mdl-kiosk-early-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('readEarlyConfig', () => {
  it('defaults: kiosk mode, no backend', () => {
    const early = readEarlyConfig({ env: {} });
    expect(early.app.kioskMode).toBe(true);
    expect(early.app.logs).toEqual({ retentionDays: 14, maxFileMegabytes: 10 });
    expect(early.backendConfigured).toBe(false);
  });

  it('file < environment < command line < managed', async () => {
    const file = join(dir, 'config.json');
    await writeFile(file, JSON.stringify({ app: { kioskMode: false, logs: { retentionDays: 3 } } }));
    expect(readEarlyConfig({ env: {}, file }).app).toMatchObject({ kioskMode: false, logs: { retentionDays: 3 } });
    expect(readEarlyConfig({ env: {}, file, managed: { app: { kioskMode: true } } }).app.kioskMode).toBe(true);
    expect(readEarlyConfig({ env: {}, file, overrides: { app: { kioskMode: true } } }).app.kioskMode).toBe(true);
    expect(readEarlyConfig({ env: { MDL_KIOSK_BACKEND_URL: 'https://verifier.example/' }, file }).backendConfigured).toBe(true);
    expect(readEarlyConfig({ env: {}, managed: { backend: { baseUrl: 'https://verifier.example/' } } }).backendConfigured).toBe(true);
  });

  it('a broken configuration elsewhere still yields its valid app section', async () => {
    const file = join(dir, 'config.json');
    await writeFile(file, JSON.stringify({ timeouts: { resultDisplayMs: 'soon' }, app: { startAtLogin: true } }));
    expect(readEarlyConfig({ env: {}, file }).app.startAtLogin).toBe(true);
  });

  it('an invalid app section or an unreadable file: the defaults', async () => {
    const file = join(dir, 'config.json');
    await writeFile(file, JSON.stringify({ app: { kioskMode: 'sometimes' } }));
    expect(readEarlyConfig({ env: {}, file }).app.kioskMode).toBe(true);
    expect(readEarlyConfig({ env: {}, file: join(dir, 'missing.json') }).app.kioskMode).toBe(true);
  });
});
