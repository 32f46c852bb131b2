/** What the kiosk does differently per OS is answered by one record (src/platform/os.ts); every answer per OS here. */
import { describe, expect, it } from 'vitest';
import { currentPlatform, osCapabilities } from '../../src/platform/os.js';

describe('the OS capabilities', () => {
  it('answer each question per OS', () => {
    expect(osCapabilities('linux')).toEqual({
      name: 'linux',
      posixFileModes: true,
      builtInBlePeripheral: true,
      bleRolesShareRawHci: true,
      nobleBinding: 'hci',
      blenoBinding: 'hci',
      removableDrives: 'media-mounts',
      scardCodes: 'other',
      loopbackPeerUser: true,
      updateWritesInstallDir: false,
    });
    expect(osCapabilities('darwin')).toEqual({
      name: 'darwin',
      posixFileModes: true,
      builtInBlePeripheral: true,
      bleRolesShareRawHci: false,
      nobleBinding: 'mac',
      blenoBinding: 'mac',
      removableDrives: 'volumes-folder',
      scardCodes: 'other',
      loopbackPeerUser: false,
      updateWritesInstallDir: false,
    });
    expect(osCapabilities('win32')).toEqual({
      name: 'win32',
      posixFileModes: false,
      builtInBlePeripheral: false,
      bleRolesShareRawHci: false,
      nobleBinding: 'win',
      blenoBinding: 'hci',
      removableDrives: 'drive-letters',
      scardCodes: 'windows',
      loopbackPeerUser: false,
      updateWritesInstallDir: true,
    });
    // Another Unix: raw HCI as noble and bleno pick it, POSIX modes, nothing known of its drives.
    expect(osCapabilities('freebsd')).toMatchObject({
      posixFileModes: true,
      nobleBinding: 'hci',
      blenoBinding: 'hci',
      removableDrives: 'none',
      bleRolesShareRawHci: false,
    });
  });

  it('default to this OS', () => {
    expect(currentPlatform()).toBe(process.platform);
    expect(osCapabilities()).toEqual(osCapabilities(process.platform));
  });
});
