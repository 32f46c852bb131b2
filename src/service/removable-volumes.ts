/**
 * Where staff can put a support bundle besides the kiosk's own disk: the removable volumes mounted now (a
 * USB stick). A port with one adapter per OS, each reading only the places that OS mounts removable media:
 *
 * - Linux (udisks2): `/media/<user>/<label>`, `/media/<label>` and `/run/media/<user>/<label>`.
 * - macOS: `/Volumes/<label>`, except the boot volume (a link to `/`).
 * - Windows: the drive letters other than the system drive (`%SystemDrive%`, usually C:).
 *
 * On Linux and macOS an entry counts only when it is a mount point (another device than its folder), so an
 * empty folder left behind by an unmount is not offered. The roots and that check are injectable: the tests
 * stand a temp dir in for the mount root. The screen picks a volume by its `id`; the service looks it up in
 * a fresh listing, so nothing but a listed volume's root can be written to.
 */
import { lstat, readdir, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { currentPlatform, osCapabilities } from '../platform/os.js';

export interface RemovableVolume {
  /** What the screen sends back to choose it (the mount path). */
  readonly id: string;
  /** Its name as the OS shows it (the folder's or the drive's). */
  readonly label: string;
  /** Where the bundle goes. */
  readonly path: string;
}

export interface RemovableVolumes {
  list(): Promise<RemovableVolume[]>;
}

/** At most this many volumes are listed (a kiosk has a slot or two). */
export const MAX_VOLUMES = 20;

/** A mount point is on another device than the folder it sits in. */
export async function isMountPoint(path: string): Promise<boolean> {
  const [self, parent] = await Promise.all([stat(path).catch(() => undefined), stat(dirname(path)).catch(() => undefined)]);
  return self !== undefined && parent !== undefined && self.isDirectory() && self.dev !== parent.dev;
}

async function directories(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  return entries.filter((e) => e.isDirectory() && !e.name.startsWith('.')).map((e) => join(dir, e.name));
}

export interface MountRootsOptions {
  /** Default: {@link isMountPoint}. */
  readonly isMount?: (path: string) => Promise<boolean>;
}

async function volumesUnder(candidates: readonly string[], isMount: (path: string) => Promise<boolean>): Promise<RemovableVolume[]> {
  const out: RemovableVolume[] = [];
  for (const path of candidates) {
    if (out.length >= MAX_VOLUMES) break;
    if (out.some((v) => v.path === path)) continue;
    if (await isMount(path)) out.push({ id: path, label: basename(path), path });
  }
  return out;
}

/** Linux: `<root>/<user>/<label>` and `<root>/<label>` under each root (default `/media`, `/run/media`). */
export function linuxRemovableVolumes(
  roots: readonly string[] = ['/media', '/run/media'],
  options: MountRootsOptions = {},
): RemovableVolumes {
  const isMount = options.isMount ?? isMountPoint;
  return {
    list: async () => {
      const candidates: string[] = [];
      for (const root of roots) {
        for (const dir of await directories(root)) {
          // `/media/<label>` (mounted straight under the root) or `/media/<user>/…` (udisks2's per-user folder).
          if (await isMount(dir)) candidates.push(dir);
          else candidates.push(...(await directories(dir)));
        }
      }
      return volumesUnder(candidates, isMount);
    },
  };
}

/** macOS: `/Volumes/<label>`, the boot volume (a symbolic link to `/`) left out. */
export function macRemovableVolumes(root = '/Volumes', options: MountRootsOptions = {}): RemovableVolumes {
  const isMount = options.isMount ?? isMountPoint;
  return {
    list: async () => {
      const entries = await readdir(root).catch(() => []);
      const candidates: string[] = [];
      for (const name of entries) {
        if (name.startsWith('.')) continue;
        const path = join(root, name);
        const info = await lstat(path).catch(() => undefined);
        if (info?.isDirectory() === true) candidates.push(path);
      }
      return volumesUnder(candidates, isMount);
    },
  };
}

/** Windows: drive letters D: to Z: and A:/B: that exist, the system drive left out. */
export function windowsRemovableVolumes(
  systemDrive = process.env.SystemDrive ?? 'C:',
  exists: (root: string) => Promise<boolean> = async (root) => (await stat(root).catch(() => undefined))?.isDirectory() === true,
): RemovableVolumes {
  const system = systemDrive.slice(0, 1).toUpperCase();
  return {
    list: async () => {
      const out: RemovableVolume[] = [];
      for (const letter of 'ABCDEFGHIJKLMNOPQRSTUVWXYZ') {
        if (letter === system || out.length >= MAX_VOLUMES) continue;
        const root = `${letter}:\\`;
        if (await exists(root)) out.push({ id: root, label: `${letter}:`, path: root });
      }
      return out;
    },
  };
}

/** The adapter for this OS; none elsewhere. */
export function removableVolumesFor(platform: NodeJS.Platform = currentPlatform()): RemovableVolumes {
  switch (osCapabilities(platform).removableDrives) {
    case 'media-mounts':
      return linuxRemovableVolumes();
    case 'volumes-folder':
      return macRemovableVolumes();
    case 'drive-letters':
      return windowsRemovableVolumes();
    case 'none':
      return { list: () => Promise.resolve([]) };
  }
}
