import { describe, expect, it } from 'vitest';
import { loadPcscliteBinding, PcscBindingUnavailableError, pcscliteLoadFailureMessage } from '../../../../src/devices/pcsc/pcsc-binding.js';

/** What Node/Electron throw when an addon of another ABI is required (node/src/node_binding.cc wording). */
function abiError(built: number, needed: number): Error {
  return new Error(
    `The module '/opt/mDL Kiosk/resources/app.asar.unpacked/node_modules/pcsclite/build/Release/pcsclite.node'\n` +
      `was compiled against a different Node.js version using\nNODE_MODULE_VERSION ${built}. This version of Node.js requires\n` +
      `NODE_MODULE_VERSION ${needed}. Please try re-compiling or re-installing\nthe module (for instance, using \`npm rebuild\` or \`npm install\`).`,
  );
}

const ELECTRON = { modules: '150', electron: '45.4.1' } as const;
const NODE = { modules: '115' } as const;

describe('pcsclite load failures in plain words', () => {
  it('names both ABI versions and the Electron rebuild command for an addon built for plain Node', () => {
    expect(pcscliteLoadFailureMessage(abiError(115, 150), ELECTRON)).toBe(
      'pcsclite was built for a different Node/Electron ABI (NODE_MODULE_VERSION 115, needs 150 for Electron 45.4.1): ' +
        'rebuild it with `npx @electron/rebuild -f -w pcsclite`',
    );
  });

  it('asks for npm rebuild when plain Node meets an addon rebuilt for Electron', () => {
    expect(pcscliteLoadFailureMessage(abiError(150, 115), NODE)).toBe(
      'pcsclite was built for a different Node/Electron ABI (NODE_MODULE_VERSION 150, needs 115 for Node): rebuild it with `npm rebuild pcsclite`',
    );
  });

  it('falls back to the runtime ABI when the message names no version', () => {
    const message = pcscliteLoadFailureMessage(new Error('module was compiled against a different Node.js version'), ELECTRON);
    expect(message).toContain('NODE_MODULE_VERSION unknown, needs 150');
  });

  it.each([
    ['/x/pcsclite.node: invalid ELF header', 'invalid ELF header'],
    ['Module did not self-register: /x/pcsclite.node.', 'Module did not self-register'],
    ['dlopen(/x/pcsclite.node, 0x0001): mach-o file, but is an incompatible architecture', 'incompatible architecture'],
  ])('recognises a wrong build: %s', (text, cause) => {
    const message = pcscliteLoadFailureMessage(new Error(text), ELECTRON);
    expect(message).toBe(
      `pcsclite's native addon does not fit this runtime (${cause}; Electron 45.4.1, NODE_MODULE_VERSION 150): rebuild it with \`npx @electron/rebuild -f -w pcsclite\``,
    );
  });

  it('keeps the install advice for a module that is simply absent', () => {
    const message = pcscliteLoadFailureMessage(new Error("Cannot find module 'pcsclite'\nRequire stack:\n- /x"), NODE);
    expect(message).toBe(
      "the pcsclite native module is not available (Cannot find module 'pcsclite'); install the PC/SC development files (Debian: libpcsclite-dev) and a compiler, then run npm ci again",
    );
  });

  it('loadPcscliteBinding turns an ABI failure into PcscBindingUnavailableError with that message', () => {
    const load = (): never => {
      throw abiError(115, Number(process.versions.modules));
    };
    expect(() => loadPcscliteBinding(load)).toThrow(PcscBindingUnavailableError);
    expect(() => loadPcscliteBinding(load)).toThrow(`NODE_MODULE_VERSION 115, needs ${process.versions.modules} for Node`);
  });

  it('loadPcscliteBinding returns a factory that calls the loaded binding', () => {
    let calls = 0;
    const context = { on: () => context, close: () => undefined };
    const factory = loadPcscliteBinding(() => () => {
      calls++;
      return context;
    });
    expect(factory()).toBe(context);
    expect(calls).toBe(1);
  });
});
