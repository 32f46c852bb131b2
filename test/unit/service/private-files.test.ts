/**
 * Private files readable by others are set back to 0600 at start and reported to staff (diagnostics and
 * the log), with what may have leaked.
 */
import { chmod, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { dispatchIntent, type Diagnostics } from '../../../src/common/kiosk-api.js';
import { FileSecretStore } from '../../../src/service/secret-store.js';
import { tightenPrivateFiles } from '../../../src/service/private-files.js';
import { hashPin } from '../../../src/service/staff-pin.js';
import { startServiceFixture, TEST_SCRYPT, type ServiceFixture } from './service-fixture.js';

let dir: string | undefined;
let fixture: ServiceFixture | undefined;
afterEach(async () => {
  await fixture?.stop();
  fixture = undefined;
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

describe('private files', () => {
  it('a group- or world-readable file is set to 0600 and reported; 0600 and missing files are fine; Windows has no modes', async () => {
    dir = await mkdtemp(join(tmpdir(), 'mdl-kiosk-private-'));
    const settings = join(dir, 'settings.json');
    const secrets = join(dir, 'secrets.json');
    await writeFile(settings, '{}', { mode: 0o644 });
    await chmod(settings, 0o644);
    await writeFile(secrets, '{}', { mode: 0o600 });
    const problems = await tightenPrivateFiles([settings, secrets, join(dir, 'missing.json')], 'linux');
    expect(problems).toEqual([
      `${settings} was readable by other users (mode 0644); set to 0600 — the staff PIN hash may have been read: change the PIN`,
    ]);
    expect((await stat(settings)).mode & 0o777).toBe(0o600);
    await chmod(secrets, 0o640);
    expect(await tightenPrivateFiles([secrets], 'linux')).toEqual([
      `${secrets} was readable by other users (mode 0640); set to 0600 — the API key may have been read: rotate it at the backend and save the new one`,
    ]);
    await chmod(secrets, 0o644);
    expect(await tightenPrivateFiles([secrets], 'win32')).toEqual([]);
  });

  it("the service checks settings.json and the secret store's file at start: diagnostics and the log say so", async () => {
    dir = await mkdtemp(join(tmpdir(), 'mdl-kiosk-private-service-'));
    const pinHash = await hashPin('246810', TEST_SCRYPT);
    await writeFile(join(dir, 'settings.json'), JSON.stringify({ version: 1, settings: {}, staff: { pinHash } }));
    await chmod(join(dir, 'settings.json'), 0o664);
    await writeFile(join(dir, 'secrets.json'), JSON.stringify({ version: 1, secrets: {} }));
    await chmod(join(dir, 'secrets.json'), 0o644);
    fixture = await startServiceFixture({ dataDir: dir, secrets: new FileSecretStore(dir) });
    const f = fixture;
    expect(await dispatchIntent(f.service, 'unlock', { pin: '246810' }, () => false)).toMatchObject({ ok: true });
    const diagnostics = (await dispatchIntent(f.service, 'getDiagnostics', {}, () => f.service.staffUnlocked())) as Diagnostics;
    expect(diagnostics.app?.permissionProblems).toEqual([
      expect.stringContaining(`${join(dir, 'settings.json')} was readable by other users (mode 0664)`) as string,
      expect.stringContaining(`${join(dir, 'secrets.json')} was readable by other users (mode 0644)`) as string,
    ]);
    expect(diagnostics.events.map((e) => e.event)).toContain('private_file_exposed');
    expect((await stat(join(dir, 'settings.json'))).mode & 0o777).toBe(0o600);
    expect((await stat(join(dir, 'secrets.json'))).mode & 0o777).toBe(0o600);
  });
});
