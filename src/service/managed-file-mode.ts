/**
 * Whether the managed configuration file is open to more users than it should be. The file may hold the
 * staff PIN's scrypt hash (`staff.pinHash`) and the proxy's credentials: readable by every account of the
 * computer, a hash of a 6-digit PIN falls to an offline search (docs/installer-guide.md §5.4); writable by
 * others, anyone could set the kiosk's policy. The guide installs it 0640 root:kiosk. POSIX modes only: on
 * Windows the folder's ACL decides, which this does not read.
 */
import { statSync, type Stats } from 'node:fs';
import { osCapabilities } from '../platform/os.js';

/** A warning for staff and the log when the file's mode lets other users read or change it; else undefined. */
export function managedFileExposure(path: string, platform: NodeJS.Platform, stat: (path: string) => Stats = statSync): string | undefined {
  if (!osCapabilities(platform).posixFileModes) return undefined;
  let mode: number;
  try {
    mode = stat(path).mode & 0o777;
  } catch {
    // Missing or unreadable: readManagedConfig says so (or there is nothing managed).
    return undefined;
  }
  const octal = `0${mode.toString(8).padStart(3, '0')}`;
  if ((mode & 0o022) !== 0) {
    return `the managed configuration file ${path} can be changed by other users (mode ${octal}): install it 0640, owned by root, group the kiosk account's (installer guide §5.2)`;
  }
  if ((mode & 0o004) !== 0) {
    return `the managed configuration file ${path} is readable by every user of this computer (mode ${octal}), staff PIN hash included: install it 0640, owned by root, group the kiosk account's (installer guide §5.2)`;
  }
  return undefined;
}
