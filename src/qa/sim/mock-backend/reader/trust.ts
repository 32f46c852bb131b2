/**
 * The IACA trust list of the mock backend: a directory of certificates (issue 3: "issuer signature and
 * chain to trusted IACA certificates from a directory").
 *
 * Rules: every regular, non-hidden file in the directory (not its subdirectories) must hold certificates,
 * either PEM (one or more `-----BEGIN CERTIFICATE-----` blocks, e.g. a bundle) or a single DER
 * certificate. Anything else is an error naming the file, rather than a silently shorter trust list; so is
 * a directory without any certificate. Hidden files (`.gitkeep`, editor droppings) are skipped. The
 * certificates are not checked to be CAs: a directly trusted document signer also works (the Annex D
 * vectors in `test/fixtures/iso18013-5/` carry a document signer certificate but no IACA).
 */
import { X509Certificate } from 'node:crypto';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { errorText } from '../../../../common/error-text.js';

export class TrustDirectoryError extends Error {
  override readonly name = 'TrustDirectoryError';
}

const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----([\s\S]*?)-----END \1-----/g;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

const message = (error: unknown): string => errorText(error);

function asCertificate(der: Uint8Array, where: string): Uint8Array {
  try {
    new X509Certificate(der);
  } catch (error) {
    throw new TrustDirectoryError(`${where} is not an X.509 certificate (PEM or DER expected): ${message(error)}`);
  }
  return der;
}

/** The DER certificates of one file (PEM bundle or DER). */
export function parseCertificateFile(content: Uint8Array, where: string): Uint8Array[] {
  const text = Buffer.from(content).toString('latin1');
  if (!text.includes('-----BEGIN ')) return [asCertificate(Uint8Array.from(content), where)];
  const certificates: Uint8Array[] = [];
  for (const match of text.matchAll(PEM_BLOCK)) {
    if (match[1] !== 'CERTIFICATE') continue;
    const body = (match[2] ?? '').replace(/\s+/g, '');
    const label = `${where} (PEM certificate ${certificates.length + 1})`;
    if (!BASE64.test(body)) throw new TrustDirectoryError(`${label} is not valid base64`);
    certificates.push(asCertificate(Uint8Array.from(Buffer.from(body, 'base64')), label));
  }
  if (certificates.length === 0) throw new TrustDirectoryError(`${where} is PEM but holds no CERTIFICATE block`);
  return certificates;
}

/** Loads every certificate of `dir` as DER; throws TrustDirectoryError with the file at fault. */
export function loadTrustDirectory(dir: string): Uint8Array[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (error) {
    throw new TrustDirectoryError(`cannot read the trust directory ${dir}: ${message(error)}`);
  }
  const certificates: Uint8Array[] = [];
  for (const name of names.sort()) {
    if (name.startsWith('.')) continue;
    const path = join(dir, name);
    let content: Buffer;
    try {
      const stat = statSync(path);
      if (!stat.isFile()) continue;
      content = readFileSync(path);
    } catch (error) {
      throw new TrustDirectoryError(`cannot read ${path}: ${message(error)}`);
    }
    certificates.push(...parseCertificateFile(content, path));
  }
  if (certificates.length === 0) throw new TrustDirectoryError(`the trust directory ${dir} holds no certificate`);
  return certificates;
}
