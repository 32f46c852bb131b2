import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { PcscBindingUnavailableError, pcscAddonLoadFailureMessage } from '../../../../src/devices/pcsc/pcsc-binding.js';
import { loadSmartcardBinding } from '../../../../src/devices/pcsc/smartcard-binding.js';

/** What Node/Electron throw when an addon of another ABI is required (node/src/node_binding.cc wording). */
function abiError(built: number, needed: number): Error {
  return new Error(
    `The module '/opt/mDL Kiosk/resources/app.asar.unpacked/node_modules/smartcard/build/Release/smartcard_napi.node'\n` +
      `was compiled against a different Node.js version using\nNODE_MODULE_VERSION ${built}. This version of Node.js requires\n` +
      `NODE_MODULE_VERSION ${needed}. Please try re-compiling or re-installing\nthe module (for instance, using \`npm rebuild\` or \`npm install\`).`,
  );
}

const ELECTRON = { modules: '150', electron: '45.4.1', platform: 'linux-x64' } as const;
const NODE = { modules: '115', platform: 'linux-x64' } as const;

describe('PC/SC addon load failures in plain words', () => {
  it('names both ABI versions when a non-N-API build took the addon’s place', () => {
    expect(pcscAddonLoadFailureMessage('smartcard', abiError(115, 150), ELECTRON)).toBe(
      "smartcard is not an N-API build: it was built for NODE_MODULE_VERSION 115, Electron 45.4.1 needs 150; reinstall it with npm ci (the package's own build is N-API)",
    );
    expect(pcscAddonLoadFailureMessage('smartcard', abiError(150, 115), NODE)).toContain('NODE_MODULE_VERSION 150, Node needs 115');
  });

  it.each([
    ['/x/smartcard_napi.node: invalid ELF header', 'invalid ELF header'],
    ['Module did not self-register: /x/smartcard_napi.node.', 'Module did not self-register'],
    ['dlopen(/x/smartcard_napi.node, 0x0001): mach-o file, but is an incompatible architecture', 'incompatible architecture'],
  ])('recognises a build for another OS or CPU: %s', (text, cause) => {
    expect(pcscAddonLoadFailureMessage('smartcard', new Error(text), ELECTRON)).toBe(
      `smartcard's native addon does not fit this machine (${cause}; Electron 45.4.1 on linux-x64): build the package on a machine of this OS and CPU`,
    );
  });

  it('gives the install advice for an addon that was never built', () => {
    expect(pcscAddonLoadFailureMessage('smartcard', new Error("Cannot find module 'smartcard'\nRequire stack:\n- /x"), NODE)).toBe(
      "the smartcard native module is not available (Cannot find module 'smartcard'); install the PC/SC development files (Debian: libpcsclite-dev) and a C++ compiler, then run npm ci again",
    );
  });

  it('loadSmartcardBinding turns a load failure into PcscBindingUnavailableError with that message', () => {
    const load = (): never => {
      throw new Error('/x/smartcard_napi.node: invalid ELF header');
    };
    expect(() => loadSmartcardBinding(load)).toThrow(PcscBindingUnavailableError);
    expect(() => loadSmartcardBinding(load)).toThrow("smartcard's native addon does not fit this machine (invalid ELF header");
  });

  it('loadSmartcardBinding refuses a module without the API it uses', () => {
    expect(() => loadSmartcardBinding(() => ({ Context: 'not a class' }))).toThrow(
      'the smartcard module does not have the API this kiosk uses',
    );
  });

  it('the installed addon loads in this Node and is the N-API build (no PC/SC service needed to load it)', () => {
    const addon = createRequire(import.meta.url)('smartcard') as Record<string, unknown>;
    expect(typeof addon.Context).toBe('function');
    expect(addon.SCARD_SHARE_SHARED).toBe(2);
    expect(() => loadSmartcardBinding()).not.toThrow();
  });
});
