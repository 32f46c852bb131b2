/**
 * What the kiosk does differently per operating system, answered in one place. The rest of src/ asks a
 * question of this record ("does the built-in radio give a peripheral role?", "where do removable drives
 * appear?", "which PC/SC error codes does this OS use?") and never reads `process.platform` itself: lint
 * refuses it outside this file (eslint.config.js, `kiosk/os-in-one-place`). Tests hand a platform name to
 * the function that takes one, or build the record for another OS with `osCapabilities(name)`.
 */

export interface OsCapabilities {
  /** The platform name (`linux`, `darwin`, `win32`, …), for logs, the support bundle and native-build tags. */
  readonly name: NodeJS.Platform;
  /** Files carry POSIX permission bits (0600, 0700). Windows keeps access in ACLs, which the installer sets. */
  readonly posixFileModes: boolean;
  /**
   * The built-in Bluetooth adapter can take the peripheral role. Not on Windows: bleno's index takes the raw
   * HCI binding there, which drives only a USB dongle through libusb (@stoprocent/bleno
   * lib/resolve-bindings.js:18-27, bluetooth-hci-socket index.js:20-30).
   */
  readonly builtInBlePeripheral: boolean;
  /**
   * Both Bluetooth libraries drive one adapter through raw HCI (Linux), so noble must be told to leave the
   * phone's ATT requests to bleno (`NOBLE_MULTI_ROLE`, docs/ble-libraries.md §3).
   */
  readonly bleRolesShareRawHci: boolean;
  /** The binding noble's `lib/resolve-bindings.js` picks here when the environment asks for none. */
  readonly nobleBinding: 'hci' | 'mac' | 'win';
  /** The binding bleno's `lib/resolve-bindings.js` picks here when the environment asks for none. */
  readonly blenoBinding: 'hci' | 'mac';
  /** Where removable drives appear: `/media` and `/run/media` mounts, `/Volumes`, drive letters, or nowhere known. */
  readonly removableDrives: 'media-mounts' | 'volumes-folder' | 'drive-letters' | 'none';
  /** Which PC/SC error codes the OS's PC/SC defines: WinSCard's (`windows`) or pcsc-lite's (`other`). */
  readonly scardCodes: 'windows' | 'other';
  /** The kernel tells which user owns the other end of a loopback TCP connection (Linux: /proc/net/tcp). */
  readonly loopbackPeerUser: boolean;
  /** An app update rewrites the install folder as the running user (Windows' NSIS updater), so that user must be able to write it. */
  readonly updateWritesInstallDir: boolean;
}

/** The OS this process runs on. The one read of `process.platform` in src/ (read on each call: tests may pretend). */
export function currentPlatform(): NodeJS.Platform {
  return process.platform;
}

/** The answers for an OS (default: this one). */
export function osCapabilities(platform: NodeJS.Platform = currentPlatform()): OsCapabilities {
  const windows = platform === 'win32';
  const mac = platform === 'darwin';
  const linux = platform === 'linux';
  return {
    name: platform,
    posixFileModes: !windows,
    builtInBlePeripheral: !windows,
    bleRolesShareRawHci: linux,
    nobleBinding: mac ? 'mac' : windows ? 'win' : 'hci',
    blenoBinding: mac ? 'mac' : 'hci',
    removableDrives: linux ? 'media-mounts' : mac ? 'volumes-folder' : windows ? 'drive-letters' : 'none',
    scardCodes: windows ? 'windows' : 'other',
    loopbackPeerUser: linux,
    updateWritesInstallDir: windows,
  };
}
