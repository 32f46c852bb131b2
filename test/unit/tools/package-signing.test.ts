/**
 * Release builds and signing (tools/package/signing.ts, tools/package/package.ts): a production package
 * for Windows or macOS is built only with signing configured or `--unsigned` given; the check afterwards
 * reads the Windows executable's certificate table.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parsePackageArgs, UsageError } from '../../../tools/package/package.js';
import { peSignature, signingPlan, type SigningInputs } from '../../../tools/package/signing.js';

const base: SigningInputs = { os: 'win', flavour: 'production', unsigned: false, env: {}, builderArgs: [], configured: [] };

describe('signing plan', () => {
  it('refuses an unsigned production build for Windows and for macOS, naming what to configure and the flag', () => {
    const win = signingPlan(base);
    expect(win.kind).toBe('refused');
    expect(win.kind === 'refused' && win.message).toMatch(
      /^refusing to build an unsigned production package for Windows: no signing is configured\. Configure a certificate file in CSC_LINK .* pass --unsigned\.$/,
    );
    const mac = signingPlan({ ...base, os: 'mac' });
    expect(mac.kind === 'refused' && mac.message).toMatch(
      /^refusing to build an unsigned production package for macOS: .*"Developer ID Application" identity in the keychain/,
    );
  });

  it.each([
    [{ env: { CSC_LINK: '/secure/cert.p12' } }, 'CSC_LINK in the environment'],
    [{ env: { WIN_CSC_LINK: 'base64…' } }, 'WIN_CSC_LINK in the environment'],
    [{ builderArgs: ['-c.win.signtoolOptions.certificateSubjectName=Example Ltd'] }, '-c.win.signtoolOptions.certificateSubjectName=…'],
    [{ builderArgs: ['-c.win.azureSignOptions.endpoint=https://x'] }, '-c.win.azureSignOptions.endpoint=…'],
    [{ configured: ['win.signtoolOptions.certificateSha1'] }, 'win.signtoolOptions.certificateSha1 in the electron-builder file'],
  ])('Windows signs with %o', (inputs, how) => {
    expect(signingPlan({ ...base, ...inputs })).toEqual({ kind: 'signed', how });
  });

  it('macOS signs with a keychain identity, CSC_NAME or mac.identity; identity=null is not signing', () => {
    expect(signingPlan({ ...base, os: 'mac', keychainIdentity: 'Developer ID Application: Example (TEAM1)' })).toMatchObject({
      kind: 'signed',
    });
    expect(signingPlan({ ...base, os: 'mac', env: { CSC_NAME: 'Example' } })).toMatchObject({ kind: 'signed' });
    expect(signingPlan({ ...base, os: 'mac', builderArgs: ['-c.mac.identity=null'] })).toMatchObject({ kind: 'refused' });
    // A Windows certificate is no macOS signature.
    expect(signingPlan({ ...base, os: 'mac', env: { WIN_CSC_LINK: 'x' } })).toMatchObject({ kind: 'refused' });
  });

  it('--unsigned builds unsigned on purpose, with the consequences spelled out; macOS then turns identity discovery off', () => {
    const win = signingPlan({ ...base, unsigned: true, env: { CSC_LINK: 'x' } });
    expect(win).toMatchObject({ kind: 'unsigned', builderArgs: [], envRemoved: ['CSC_LINK', 'WIN_CSC_LINK'] });
    expect(win.kind === 'unsigned' && win.warning).toMatch(
      /^building an UNSIGNED production package for Windows \(--unsigned\): without a signature the asar integrity check protects nothing/,
    );
    expect(signingPlan({ ...base, os: 'mac', unsigned: true })).toMatchObject({ kind: 'unsigned', builderArgs: ['-c.mac.identity=null'] });
  });

  it('QA builds may be unsigned (with a warning); Linux packages are not code-signed', () => {
    const qa = signingPlan({ ...base, flavour: 'qa' });
    expect(qa.kind === 'unsigned' && qa.warning).toMatch(/QA package for Windows is built unsigned/);
    expect(signingPlan({ ...base, os: 'linux' })).toEqual({ kind: 'not-applicable' });
  });
});

describe('package arguments', () => {
  it('reads the OS, flavour, arch and flags; passes the rest to electron-builder', () => {
    expect(parsePackageArgs(['--win', '--unsigned', '-c.electronDist=/x', '--x64'])).toEqual({
      os: 'win',
      flavour: 'production',
      unsigned: true,
      printPlan: false,
      arch: 'x64',
      builderArgs: ['-c.electronDist=/x'],
    });
    expect(parsePackageArgs(['--mac', '--qa', '--print-plan'])).toMatchObject({
      os: 'mac',
      flavour: 'qa',
      printPlan: true,
      arch: undefined,
    });
  });

  it('refuses no OS, two OSes, publishing and another config file', () => {
    expect(() => parsePackageArgs([])).toThrow(UsageError);
    expect(() => parsePackageArgs(['--win', '--mac'])).toThrow('one OS per build');
    expect(() => parsePackageArgs(['--linux', '--publish', 'always'])).toThrow('publishing is a separate step');
    expect(() => parsePackageArgs(['--linux', '--config', 'x.yml'])).toThrow('the flavour chooses the electron-builder file');
  });
});

describe('Authenticode presence in a Windows executable', () => {
  const unsigned = readFileSync(join(process.cwd(), 'node_modules', '@stoprocent', 'noble', 'prebuilds', 'win32-x64', 'node.napi.node'));

  it('an unsigned PE has an empty certificate table; with one filled in it counts as signed', () => {
    expect(peSignature(unsigned)).toBe('unsigned');
    const signed = Buffer.from(unsigned);
    const pe = signed.readUInt32LE(0x3c);
    const directories = pe + 24 + (signed.readUInt16LE(pe + 24) === 0x20b ? 112 : 96);
    signed.writeUInt32LE(signed.length - 16, directories + 32);
    signed.writeUInt32LE(16, directories + 36);
    expect(peSignature(signed)).toBe('signed');
    // A table that points past the end of the file is no signature.
    signed.writeUInt32LE(64, directories + 36);
    expect(peSignature(signed)).toBe('unsigned');
  });

  it('anything that is not a PE says so', () => {
    expect(peSignature(Buffer.from('#!/bin/sh\n'.repeat(10)))).toBe('not-pe');
    expect(peSignature(Buffer.alloc(10))).toBe('not-pe');
  });
});
