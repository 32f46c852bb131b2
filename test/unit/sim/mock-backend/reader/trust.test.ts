/**
 * The IACA trust directory loader: PEM (single and bundle) and DER, hidden files and subdirectories
 * skipped, a clear error naming the file for anything that is not a certificate.
 */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { TrustDirectoryError, loadTrustDirectory } from '../../../../../src/qa/sim/mock-backend/reader/trust.js';
import { createIaca } from './test-phone.js';

const first = await createIaca('C=US, CN=First IACA');
const second = await createIaca('C=UT, CN=Second IACA');

const pem = (der: Uint8Array): string =>
  `-----BEGIN CERTIFICATE-----\n${(
    Buffer.from(der)
      .toString('base64')
      .match(/.{1,64}/g) ?? []
  ).join('\n')}\n-----END CERTIFICATE-----\n`;

const dirs: string[] = [];
function directory(files: Record<string, string | Uint8Array>): string {
  const dir = mkdtempSync(join(tmpdir(), 'mdl-trust-'));
  dirs.push(dir);
  for (const [name, content] of Object.entries(files)) writeFileSync(join(dir, name), content);
  return dir;
}

afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('loadTrustDirectory', () => {
  it('reads PEM, a PEM bundle and DER, in file-name order', () => {
    const dir = directory({
      'a.pem': pem(first.der),
      'b-bundle.crt': `# two roots\n${pem(second.der)}${pem(first.der)}`,
      'c.der': first.der,
    });
    expect(loadTrustDirectory(dir)).toEqual([first.der, second.der, first.der, first.der]);
  });

  it('skips hidden files and subdirectories', () => {
    const dir = directory({ 'iaca.pem': pem(second.der), '.gitkeep': '' });
    mkdirSync(join(dir, 'old'));
    writeFileSync(join(dir, 'old', 'junk.txt'), 'not a certificate');
    expect(loadTrustDirectory(dir)).toEqual([second.der]);
  });

  it('a file that is not a certificate is an error naming it', () => {
    const dir = directory({ 'iaca.pem': pem(first.der), 'notes.txt': 'trust these' });
    expect(() => loadTrustDirectory(dir)).toThrow(TrustDirectoryError);
    expect(() => loadTrustDirectory(dir)).toThrow(`${join(dir, 'notes.txt')} is not an X.509 certificate (PEM or DER expected)`);
  });

  it('PEM without a CERTIFICATE block, broken base64, or a truncated DER are errors', () => {
    const key = directory({ 'key.pem': '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n' });
    expect(() => loadTrustDirectory(key)).toThrow(/key\.pem is PEM but holds no CERTIFICATE block/);
    const broken = directory({ 'broken.pem': '-----BEGIN CERTIFICATE-----\n@@@@\n-----END CERTIFICATE-----\n' });
    expect(() => loadTrustDirectory(broken)).toThrow(/broken\.pem \(PEM certificate 1\) is not valid base64/);
    const truncated = directory({ 'cut.der': first.der.subarray(0, 100) });
    expect(() => loadTrustDirectory(truncated)).toThrow(/cut\.der is not an X\.509 certificate/);
  });

  it('an unreadable entry, a missing directory and an empty one are errors', () => {
    const dir = directory({ 'iaca.pem': pem(first.der) });
    symlinkSync(join(dir, 'gone.pem'), join(dir, 'dangling.pem'));
    expect(() => loadTrustDirectory(dir)).toThrow(
      new RegExp(`cannot read ${join(dir, 'dangling.pem').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`),
    );
    expect(() => loadTrustDirectory(join(dir, 'missing'))).toThrow(/cannot read the trust directory/);
    expect(() => loadTrustDirectory(directory({}))).toThrow(/holds no certificate/);
  });
});
