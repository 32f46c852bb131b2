/**
 * The managed file's mode: world-readable (the staff PIN hash open to every account) or writable by others
 * is named; 0640 and 0600 are fine; Windows (ACLs) and a missing file say nothing.
 */
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { managedFileExposure } from '../../../src/service/managed-file-mode.js';

let dir: string;
let file: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'mdl-kiosk-managed-mode-'));
  file = join(dir, 'config.json');
  await writeFile(file, '{"staff":{"pinHash":"scrypt$32768$8$1$c2FsdA$aGFzaA"}}');
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('managedFileExposure', () => {
  it.each([0o644, 0o604, 0o444])('mode %o: readable by every user, named with its mode and the fix', async (mode) => {
    await chmod(file, mode);
    const warning = managedFileExposure(file, 'linux');
    expect(warning).toContain(file);
    expect(warning).toContain(`mode 0${mode.toString(8)}`);
    expect(warning).toContain('readable by every user');
    expect(warning).toContain('0640');
  });

  it.each([0o664, 0o646, 0o660])('mode %o: writable by others is named first', async (mode) => {
    await chmod(file, mode);
    expect(managedFileExposure(file, 'darwin')).toContain('can be changed by other users');
  });

  it.each([0o640, 0o600, 0o440, 0o400])('mode %o: fine', async (mode) => {
    await chmod(file, mode);
    expect(managedFileExposure(file, 'linux')).toBeUndefined();
  });

  it('no file, or Windows (its ACL decides): nothing to say', async () => {
    expect(managedFileExposure(join(dir, 'missing.json'), 'linux')).toBeUndefined();
    await chmod(file, 0o644);
    expect(managedFileExposure(file, 'win32')).toBeUndefined();
  });
});
