/**
 * A private test PKI for TLS tests: a CA of its own, a server certificate it issued for 127.0.0.1 and
 * localhost (or another name), and a second, unrelated CA. Generated at test time with @peculiar/x509 on
 * node:crypto's WebCrypto; nothing is stored.
 */
import 'reflect-metadata';
import { createHash, webcrypto, X509Certificate as NodeX509Certificate } from 'node:crypto';
import {
  BasicConstraintsExtension,
  KeyUsageFlags,
  KeyUsagesExtension,
  SubjectAlternativeNameExtension,
  X509CertificateGenerator,
} from '@peculiar/x509';

const subtle = webcrypto.subtle;
const EC = { name: 'ECDSA', namedCurve: 'P-256' } as const;
const SIGN = { name: 'ECDSA', hash: 'SHA-256' } as const;
const DAY_MS = 86_400_000;

export interface TestCa {
  readonly certPem: string;
  readonly keys: webcrypto.CryptoKeyPair;
  readonly name: string;
}

export interface ServerIdentity {
  /** PEM private key (PKCS#8) and certificate chain (leaf first, then the CA) for `https.createServer`. */
  readonly key: string;
  readonly cert: string;
  /** base64 SHA-256 of the leaf's SubjectPublicKeyInfo: its `backend.tls.pinSha256`. */
  readonly leafPin: string;
  /** The same for the issuing CA's key. */
  readonly caPin: string;
}

function pem(label: string, der: ArrayBuffer): string {
  const b64 = Buffer.from(der).toString('base64').replace(/.{64}/g, '$&\n');
  return `-----BEGIN ${label}-----\n${b64}${b64.endsWith('\n') ? '' : '\n'}-----END ${label}-----\n`;
}

function spkiPin(certPem: string): string {
  const spki = new NodeX509Certificate(certPem).publicKey.export({ type: 'spki', format: 'der' });
  return createHash('sha256').update(spki).digest('base64');
}

export async function createTestCa(name = 'Kiosk Test TLS CA'): Promise<TestCa> {
  const keys = await subtle.generateKey(EC, true, ['sign', 'verify']);
  const cert = await X509CertificateGenerator.createSelfSigned(
    {
      serialNumber: '01',
      name: `CN=${name}`,
      notBefore: new Date(Date.now() - DAY_MS),
      notAfter: new Date(Date.now() + 30 * DAY_MS),
      keys,
      signingAlgorithm: SIGN,
      extensions: [
        new BasicConstraintsExtension(true, 0, true),
        new KeyUsagesExtension(KeyUsageFlags.keyCertSign | KeyUsageFlags.cRLSign, true),
      ],
    },
    webcrypto,
  );
  return { certPem: cert.toString('pem'), keys, name };
}

/**
 * A server certificate issued by `ca` for the given DNS names and IP addresses, valid from a day ago for a
 * week unless `validity` says otherwise (a certificate not valid yet is what a kiosk whose clock is behind sees).
 */
export async function issueServerIdentity(
  ca: TestCa,
  names: { dns?: readonly string[]; ips?: readonly string[] } = { dns: ['localhost'], ips: ['127.0.0.1'] },
  validity: { readonly notBefore: Date; readonly notAfter: Date } = {
    notBefore: new Date(Date.now() - DAY_MS),
    notAfter: new Date(Date.now() + 7 * DAY_MS),
  },
): Promise<ServerIdentity> {
  const keys = await subtle.generateKey(EC, true, ['sign', 'verify']);
  const cert = await X509CertificateGenerator.create(
    {
      serialNumber: '02',
      subject: `CN=${names.dns?.[0] ?? names.ips?.[0] ?? 'server'}`,
      issuer: `CN=${ca.name}`,
      notBefore: validity.notBefore,
      notAfter: validity.notAfter,
      publicKey: keys.publicKey,
      signingKey: ca.keys.privateKey,
      signingAlgorithm: SIGN,
      extensions: [
        new BasicConstraintsExtension(false, undefined, true),
        new KeyUsagesExtension(KeyUsageFlags.digitalSignature, true),
        new SubjectAlternativeNameExtension([
          ...(names.dns ?? []).map((value) => ({ type: 'dns' as const, value })),
          ...(names.ips ?? []).map((value) => ({ type: 'ip' as const, value })),
        ]),
      ],
    },
    webcrypto,
  );
  const keyPem = pem('PRIVATE KEY', await subtle.exportKey('pkcs8', keys.privateKey));
  const leafPem = cert.toString('pem');
  return { key: keyPem, cert: `${leafPem}\n${ca.certPem}`, leafPin: spkiPin(leafPem), caPin: spkiPin(ca.certPem) };
}
