/**
 * Removable volumes for the support bundle: each OS adapter lists only where that OS mounts removable media
 * (a temp dir stands in for the mount root, with the mount-point check stubbed: a temp dir is one device),
 * and the service writes a bundle only onto a volume its own fresh listing names — staff-only, and a path
 * the screen makes up is refused.
 */
import { mkdir, mkdtemp, rm, stat, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { dispatchIntent } from '../../../src/common/kiosk-api.js';
import {
  isMountPoint,
  linuxRemovableVolumes,
  macRemovableVolumes,
  windowsRemovableVolumes,
  type RemovableVolumes,
} from '../../../src/service/removable-volumes.js';
import { hashPin } from '../../../src/service/staff-pin.js';
import { startServiceFixture, TEST_SCRYPT, type ServiceFixture } from './service-fixture.js';

const dirs: string[] = [];
let fixture: ServiceFixture | undefined;
afterEach(async () => {
  await fixture?.stop();
  fixture = undefined;
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'mdl-kiosk-volumes-'));
  dirs.push(dir);
  return dir;
}

describe('removable volumes', () => {
  it('Linux: /media/<user>/<label>, /media/<label> and /run/media/<user>/<label>; only mount points', async () => {
    const root = await tempDir();
    const media = join(root, 'media');
    const runMedia = join(root, 'run-media');
    const mounted = new Set([join(media, 'kiosk', 'USB-STICK'), join(media, 'SDCARD'), join(runMedia, 'kiosk', 'BACKUP')]);
    for (const dir of [...mounted, join(media, 'kiosk', 'left-behind'), join(media, 'kiosk', '.hidden')])
      await mkdir(dir, { recursive: true });
    const volumes = await linuxRemovableVolumes([media, runMedia], { isMount: (p) => Promise.resolve(mounted.has(p)) }).list();
    expect(volumes.map((v) => v.label).sort()).toEqual(['BACKUP', 'SDCARD', 'USB-STICK']);
    expect(volumes.every((v) => v.id === v.path && mounted.has(v.path))).toBe(true);
    // The real check: folders of one temp dir are one device, so none is a mount point.
    expect(await linuxRemovableVolumes([media, runMedia]).list()).toEqual([]);
    expect(await isMountPoint(join(media, 'SDCARD'))).toBe(false);
    expect(await linuxRemovableVolumes([join(root, 'absent')]).list()).toEqual([]);
  });

  it('macOS: /Volumes/<label>, not the boot volume (a link to /)', async () => {
    const root = await tempDir();
    await mkdir(join(root, 'USB STICK'));
    await symlink('/', join(root, 'Macintosh HD'));
    const volumes = await macRemovableVolumes(root, { isMount: () => Promise.resolve(true) }).list();
    expect(volumes).toEqual([{ id: join(root, 'USB STICK'), label: 'USB STICK', path: join(root, 'USB STICK') }]);
  });

  it('Windows: the drive letters that exist, not the system drive', async () => {
    const present = new Set(['C:\\', 'D:\\', 'E:\\']);
    const volumes = await windowsRemovableVolumes('C:', (r) => Promise.resolve(present.has(r))).list();
    expect(volumes.map((v) => v.label)).toEqual(['D:', 'E:']);
    expect((await windowsRemovableVolumes('d:', (r) => Promise.resolve(present.has(r))).list()).map((v) => v.label)).toEqual(['C:', 'E:']);
  });

  it('the service lists them for staff and writes the bundle onto the chosen one only', async () => {
    const root = await tempDir();
    const stick = join(root, 'kiosk', 'USB-STICK');
    await mkdir(stick, { recursive: true });
    let mounted = true;
    const removableVolumes: RemovableVolumes = linuxRemovableVolumes([root], { isMount: (p) => Promise.resolve(mounted && p === stick) });
    const pin = '246810';
    fixture = await startServiceFixture({
      overrides: { staff: { pinHash: await hashPin(pin, TEST_SCRYPT) } },
      service: { removableVolumes },
    });
    const f = fixture;
    const call = (intent: string, args: unknown): Promise<unknown> =>
      dispatchIntent(f.service, intent, args, () => f.service.staffUnlocked());
    await expect(call('listSupportVolumes', {})).rejects.toMatchObject({ code: 'staff_required' });
    await expect(call('writeSupportBundle', { volume: stick })).rejects.toMatchObject({ code: 'staff_required' });
    expect(await call('unlock', { pin })).toMatchObject({ ok: true });
    expect(await call('listSupportVolumes', {})).toEqual({ volumes: [{ id: stick, label: 'USB-STICK' }] });
    const written = (await call('writeSupportBundle', { volume: stick })) as { path: string; bytes: number };
    expect(written.path.startsWith(join(stick, 'mdl-kiosk-support-'))).toBe(true);
    expect((await stat(written.path)).size).toBe(written.bytes);
    // A path the screen makes up, or a stick taken out: refused, nothing written.
    await expect(call('writeSupportBundle', { volume: root })).rejects.toThrow(/not mounted/);
    await expect(call('writeSupportBundle', { volume: '/etc' })).rejects.toThrow(/not mounted/);
    mounted = false;
    await expect(call('writeSupportBundle', { volume: stick })).rejects.toThrow(/not mounted/);
    await expect(call('writeSupportBundle', { volume: '' })).rejects.toThrow();
  });

  it('a download ticket (browser host) is for staff, good once, and stands for a bundle in the support folder', async () => {
    const pin = '246810';
    fixture = await startServiceFixture({ overrides: { staff: { pinHash: await hashPin(pin, TEST_SCRYPT) } } });
    const f = fixture;
    const call = (intent: string, args: unknown): Promise<unknown> =>
      dispatchIntent(f.service, intent, args, () => f.service.staffUnlocked());
    await expect(call('prepareSupportDownload', {})).rejects.toMatchObject({ code: 'staff_required' });
    expect(await call('unlock', { pin })).toMatchObject({ ok: true });
    const prepared = (await call('prepareSupportDownload', {})) as { ticket: string; name: string; bytes: number };
    expect(prepared.ticket).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(prepared.name).toMatch(/^mdl-kiosk-support-.*\.tar\.gz$/);
    expect(f.service.takeSupportDownload('x'.repeat(43))).toBeUndefined();
    const taken = f.service.takeSupportDownload(prepared.ticket);
    expect(taken?.path.startsWith(join(f.dataDir, 'support'))).toBe(true);
    expect((await stat(taken?.path ?? '')).size).toBe(prepared.bytes);
    expect(f.service.takeSupportDownload(prepared.ticket)).toBeUndefined();
  });
});
