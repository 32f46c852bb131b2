/**
 * The virtual phone's test PKI: an IACA (issuing authority CA) and a document signer (DS) it certifies,
 * generated here with @peculiar/x509 on node:crypto's WebCrypto (never copied from anywhere), and their
 * PEM forms so QA can hand the IACA certificate to the mock backend's trust directory.
 *
 * Profile (ISO/IEC 18013-5 Annex B, as far as a verifier such as @owf/mdoc's `Verifier` checks it):
 * - IACA: self-signed P-256/ES256, subject `C=<country>, ST=<jurisdiction>, CN=…`; basicConstraints cA with
 *   pathLenConstraint 0 (critical); keyUsage keyCertSign + cRLSign (critical); subjectKeyIdentifier.
 * - DS: P-256 key signed by the IACA, subject `C=<country>, ST=<jurisdiction>, CN=…`; keyUsage
 *   digitalSignature (critical); extendedKeyUsage 1.0.18013.5.1.2 (mdlDS, critical); authority and subject
 *   key identifiers.
 * - The DS subject carries C and ST because verifiers (@owf/mdoc, the mock backend) compare the mDL's
 *   `issuing_country` with the DS subject C and `issuing_jurisdiction` with its ST (ISO/IEC 18013-5 §7.2.1).
 * - Validity is generous (IACA from 3 years ago for 10 years, DS from 2 years ago for 4 years) so that an
 *   "expired" credential can be signed in the past by a certificate that is still valid today: only the
 *   MSO validity then fails, which is what that behaviour is meant to show.
 */
import 'reflect-metadata';
import {
  createPrivateKey,
  createPublicKey,
  randomBytes,
  webcrypto,
  X509Certificate as NodeX509Certificate,
  type KeyObject,
} from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  AuthorityKeyIdentifierExtension,
  BasicConstraintsExtension,
  ExtendedKeyUsageExtension,
  KeyUsageFlags,
  KeyUsagesExtension,
  SubjectKeyIdentifierExtension,
  X509Certificate,
  X509CertificateGenerator,
} from '@peculiar/x509';

const subtle = webcrypto.subtle;
const EC_PARAMS = { name: 'ECDSA', namedCurve: 'P-256' } as const;
const SIGNING_ALGORITHM = { name: 'ECDSA', hash: 'SHA-256' } as const;
const DAY_MS = 86_400_000;
const YEAR_MS = 365 * DAY_MS;

/** Extended key usage of an mDL document signer (ISO/IEC 18013-5 Annex B; also in the Annex D DS certificate). */
export const MDL_DS_EKU = '1.0.18013.5.1.2';

export interface TestPkiOptions {
  /** ISO 3166-1 alpha-2 country of the IACA and DS subjects (default `US`). */
  readonly country?: string;
  /** ISO 3166-2 subdivision written as the subjects' ST (default `US-CA`); null leaves ST out. */
  readonly jurisdiction?: string | null;
  /** Common names (defaults: "Virtual Wallet Test IACA" / "Virtual Wallet Test DS"). */
  readonly iacaCommonName?: string;
  readonly documentSignerCommonName?: string;
  /** Validity windows; defaults as in the module comment. */
  readonly iacaValidity?: { readonly notBefore: Date; readonly notAfter: Date };
  readonly documentSignerValidity?: { readonly notBefore: Date; readonly notAfter: Date };
}

export interface TestCertificate {
  /** DER bytes. */
  readonly der: Uint8Array;
  readonly pem: string;
  readonly subject: string;
  readonly notBefore: Date;
  readonly notAfter: Date;
  readonly privateKey: KeyObject;
  readonly publicKey: KeyObject;
}

export interface TestPki {
  readonly country: string;
  readonly jurisdiction: string | undefined;
  readonly iaca: TestCertificate;
  readonly documentSigner: TestCertificate;
}

/** Everything needed to rebuild a TestPki, as PEM text (certificates and PKCS#8 private keys). */
export interface TestPkiPem {
  readonly iacaCertificate: string;
  readonly iacaPrivateKey: string;
  readonly documentSignerCertificate: string;
  readonly documentSignerPrivateKey: string;
}

function distinguishedName(country: string, jurisdiction: string | undefined, commonName: string): string {
  const parts = [`C=${country}`];
  if (jurisdiction !== undefined) parts.push(`ST=${jurisdiction}`);
  parts.push(`CN=${commonName}`);
  return parts.join(', ');
}

/** A positive serial number of 16 random bytes (RFC 5280 §4.1.2.2: at most 20 octets, positive). */
function serialNumber(): string {
  const bytes = randomBytes(16);
  bytes[0] = ((bytes[0] ?? 0) & 0x7f) | 0x01;
  return bytes.toString('hex');
}

async function keyObjects(keys: webcrypto.CryptoKeyPair): Promise<{ privateKey: KeyObject; publicKey: KeyObject }> {
  const pkcs8 = Buffer.from(await subtle.exportKey('pkcs8', keys.privateKey));
  const privateKey = createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' });
  return { privateKey, publicKey: createPublicKey(privateKey) };
}

function describeCertificate(certificate: X509Certificate, keys: { privateKey: KeyObject; publicKey: KeyObject }): TestCertificate {
  return {
    der: new Uint8Array(certificate.rawData),
    pem: certificate.toString('pem'),
    subject: certificate.subject,
    notBefore: certificate.notBefore,
    notAfter: certificate.notAfter,
    ...keys,
  };
}

/** Generates a fresh IACA → DS chain (slow-ish: use `getTestPki()` for the per-process cached one). */
export async function createTestPki(options: TestPkiOptions = {}): Promise<TestPki> {
  const country = options.country ?? 'US';
  if (!/^[A-Z]{2}$/.test(country)) throw new TypeError(`country must be an ISO 3166-1 alpha-2 code, got ${JSON.stringify(country)}`);
  const jurisdiction = options.jurisdiction === null ? undefined : (options.jurisdiction ?? `${country}-CA`);
  const now = Date.now();
  const iacaValidity = options.iacaValidity ?? { notBefore: new Date(now - 3 * YEAR_MS), notAfter: new Date(now + 7 * YEAR_MS) };
  const dsValidity = options.documentSignerValidity ?? { notBefore: new Date(now - 2 * YEAR_MS), notAfter: new Date(now + 2 * YEAR_MS) };
  const iacaName = distinguishedName(country, jurisdiction, options.iacaCommonName ?? 'Virtual Wallet Test IACA');
  const dsName = distinguishedName(country, jurisdiction, options.documentSignerCommonName ?? 'Virtual Wallet Test DS');

  const iacaKeys = await subtle.generateKey(EC_PARAMS, true, ['sign', 'verify']);
  const iacaCertificate = await X509CertificateGenerator.createSelfSigned(
    {
      serialNumber: serialNumber(),
      name: iacaName,
      keys: iacaKeys,
      notBefore: iacaValidity.notBefore,
      notAfter: iacaValidity.notAfter,
      signingAlgorithm: SIGNING_ALGORITHM,
      extensions: [
        new BasicConstraintsExtension(true, 0, true),
        new KeyUsagesExtension(KeyUsageFlags.keyCertSign | KeyUsageFlags.cRLSign, true),
        await SubjectKeyIdentifierExtension.create(iacaKeys.publicKey, false, webcrypto),
      ],
    },
    webcrypto,
  );

  const dsKeys = await subtle.generateKey(EC_PARAMS, true, ['sign', 'verify']);
  const dsCertificate = await X509CertificateGenerator.create(
    {
      serialNumber: serialNumber(),
      subject: dsName,
      issuer: iacaCertificate.subject,
      publicKey: dsKeys.publicKey,
      signingKey: iacaKeys.privateKey,
      notBefore: dsValidity.notBefore,
      notAfter: dsValidity.notAfter,
      signingAlgorithm: SIGNING_ALGORITHM,
      extensions: [
        new KeyUsagesExtension(KeyUsageFlags.digitalSignature, true),
        new ExtendedKeyUsageExtension([MDL_DS_EKU], true),
        await AuthorityKeyIdentifierExtension.create(iacaKeys.publicKey, false, webcrypto),
        await SubjectKeyIdentifierExtension.create(dsKeys.publicKey, false, webcrypto),
      ],
    },
    webcrypto,
  );

  return {
    country,
    jurisdiction,
    iaca: describeCertificate(iacaCertificate, await keyObjects(iacaKeys)),
    documentSigner: describeCertificate(dsCertificate, await keyObjects(dsKeys)),
  };
}

let cached: Promise<TestPki> | undefined;

/**
 * The per-process test PKI with the default options (generated on first use, then shared). Pass
 * `{ fresh: true }` to replace it with a newly generated one.
 */
export function getTestPki(options: { readonly fresh?: boolean } = {}): Promise<TestPki> {
  if (cached === undefined || options.fresh === true) {
    const generating = createTestPki();
    cached = generating;
    // A failed generation is not cached.
    generating.catch(() => {
      if (cached === generating) cached = undefined;
    });
  }
  return cached;
}

function privateKeyPem(key: KeyObject): string {
  return key.export({ format: 'pem', type: 'pkcs8' }).toString();
}

export function exportTestPkiPem(pki: TestPki): TestPkiPem {
  return {
    iacaCertificate: pki.iaca.pem,
    iacaPrivateKey: privateKeyPem(pki.iaca.privateKey),
    documentSignerCertificate: pki.documentSigner.pem,
    documentSignerPrivateKey: privateKeyPem(pki.documentSigner.privateKey),
  };
}

function importCertificate(
  certificatePem: string,
  privateKeyPemText: string,
  what: string,
): { certificate: X509Certificate; keys: { privateKey: KeyObject; publicKey: KeyObject } } {
  const certificate = new X509Certificate(certificatePem);
  const privateKey = createPrivateKey(privateKeyPemText);
  const publicKey = createPublicKey(privateKey);
  const certificateKey = new NodeX509Certificate(certificate.toString('pem')).publicKey;
  if (!certificateKey.equals(publicKey)) throw new TypeError(`${what}: the private key does not belong to the certificate`);
  return { certificate, keys: { privateKey, publicKey } };
}

/** Rebuilds a TestPki from its PEM export; checks that the keys match and the DS names the IACA as issuer. */
export function importTestPkiPem(pem: TestPkiPem): TestPki {
  const iaca = importCertificate(pem.iacaCertificate, pem.iacaPrivateKey, 'IACA');
  const ds = importCertificate(pem.documentSignerCertificate, pem.documentSignerPrivateKey, 'document signer');
  if (ds.certificate.issuer !== iaca.certificate.subject)
    throw new TypeError('the document signer was not issued by this IACA (issuer name differs)');
  const country = ds.certificate.subjectName.getField('C')[0];
  if (country === undefined) throw new TypeError('the document signer subject has no country (C)');
  return {
    country,
    jurisdiction: ds.certificate.subjectName.getField('ST')[0],
    iaca: describeCertificate(iaca.certificate, iaca.keys),
    documentSigner: describeCertificate(ds.certificate, ds.keys),
  };
}

/**
 * Writes the IACA certificate (PEM) into `directory` (created if missing) for the mock backend's trust
 * directory, and returns the file path. Default file name: `virtual-wallet-iaca.pem`.
 */
export async function writeIacaPem(pki: TestPki, directory: string, fileName = 'virtual-wallet-iaca.pem'): Promise<string> {
  await mkdir(directory, { recursive: true });
  const path = join(directory, fileName);
  await writeFile(path, pki.iaca.pem.endsWith('\n') ? pki.iaca.pem : `${pki.iaca.pem}\n`, 'utf8');
  return path;
}
