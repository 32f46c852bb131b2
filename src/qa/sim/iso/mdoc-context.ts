/**
 * The crypto context @owf/mdoc 0.6.0 needs (its `MdocContext`: random, digest, EMacKey derivation, COSE
 * sign/verify/MAC, X.509 parsing and chain verification), on node:crypto and @peculiar/x509.
 *
 * Choices, and why:
 * - ECDSA signatures are raw r||s (IEEE P1363), as COSE requires (RFC 9053 §2.1). ES256/ES384/ES512.
 * - A COSE_Sign1 without an alg header fails verification, and signing without an algorithm throws:
 *   @owf/mdoc writes `{1: null}` when the device key JWK has no `alg` (observed with 0.6.0, see
 *   test/unit/sim/iso/mdoc-context.test.ts) and strict readers reject that, so we surface it instead of producing it.
 * - `calculateEphemeralMacKey` accepts keys both as COSE_Key bytes (what @owf/mdoc's DeviceMac.create
 *   passes) and as raw d / uncompressed point (what DeviceMac.verify passes; both read in 0.6.0's source). The
 *   salt is SHA-256 of the SessionTranscriptBytes given: pass the tag-24 form to @owf/mdoc.
 * - `cose.mac0.*` is HMAC-SHA256 over the bytes @owf/mdoc hands over. Do not rely on @owf/mdoc for
 *   deviceMac: 0.6.0 writes the device key's signature alg (or null) into the Mac0 protected header,
 *   builds MAC_structure without the external_aad element (RFC 9052 §6.3 has four), and its verifier
 *   always reports a failure. Use device-mac.ts, which follows ISO 18013-5 and passes Annex D.
 * - `getIssuerNameField` reads the *subject* of the certificate it is given (the DS certificate), because
 *   @owf/mdoc's checks that use it say "Country name (C) must be present in the issuer certificate's
 *   subject" and "'issuing_country' … must match the 'countryName' in the subject field within the DS
 *   certificate". In a conforming chain the DS subject C equals the IACA's (ISO 18013-5 Annex B).
 * - `verifyCertificateChain` (synchronous; throws on failure) builds the path itself from x5chain[0]
 *   (the DS). Each step needs an issuer whose subject equals the issuer name (exact DN string), whose key
 *   verifies the signature, that is a CA (basicConstraints cA, pathLenConstraint honoured) and, if it has
 *   keyUsage, may sign certificates. Every certificate on the path, the trust anchor included, must be
 *   valid at `now`. The path ends at a trusted certificate, or at the leaf itself when the leaf is trusted
 *   directly (the Annex D vectors carry the DS certificate but no IACA). No revocation checks, no EKU checks.
 * - `getCertificateData().thumbprint` is the SHA-256 fingerprint (hex, lower case).
 */
import 'reflect-metadata';
import {
  createHash,
  createHmac,
  createPrivateKey,
  createPublicKey,
  randomBytes,
  sign as ecdsaSign,
  timingSafeEqual,
  verify as ecdsaVerify,
  X509Certificate as NodeX509Certificate,
  type KeyObject,
} from 'node:crypto';
import { CoseKey, KeyType, MacAlgorithm, type DigestAlgorithm, type MdocContext } from '@owf/mdoc';
import { BasicConstraintsExtension, KeyUsageFlags, KeyUsagesExtension, X509Certificate } from '@peculiar/x509';
import { cborDecode, expectBytes, expectMap } from './cbor.js';
import { COSE_KEY_LABEL, p256PrivateKeyFromRaw, p256PublicKeyFromRaw } from './cose-key.js';
import { memoizeMobileSecurityObject } from './mso-memo.js';
import { ecdhSharedSecret, hkdfSha256, sha256 } from './session-crypto.js';

const COSE_HEADER_ALG = 1;
const MAX_PATH_LENGTH = 8;

interface EcdsaAlgorithm {
  readonly hash: 'sha256' | 'sha384' | 'sha512';
  readonly crv: 'P-256' | 'P-384' | 'P-521';
  readonly coordinateLength: number;
}

/** COSE ECDSA algorithms (RFC 9053 §2.1), by number or by the JOSE name @owf/mdoc sometimes hands over. */
const ECDSA: ReadonlyMap<number | string, EcdsaAlgorithm> = new Map<number | string, EcdsaAlgorithm>([
  [-7, { hash: 'sha256', crv: 'P-256', coordinateLength: 32 }],
  ['ES256', { hash: 'sha256', crv: 'P-256', coordinateLength: 32 }],
  [-35, { hash: 'sha384', crv: 'P-384', coordinateLength: 48 }],
  ['ES384', { hash: 'sha384', crv: 'P-384', coordinateLength: 48 }],
  [-36, { hash: 'sha512', crv: 'P-521', coordinateLength: 66 }],
  ['ES512', { hash: 'sha512', crv: 'P-521', coordinateLength: 66 }],
]);

/** COSE curve ids (RFC 9053 §7.1) of the EC2 curves we handle. */
const COSE_CURVES: ReadonlyMap<number, EcdsaAlgorithm['crv']> = new Map([
  [1, 'P-256'],
  [2, 'P-384'],
  [3, 'P-521'],
]);

const b64url = (bytes: Uint8Array): string => Buffer.from(bytes).toString('base64url');

function curveOf(key: CoseKey): EcdsaAlgorithm['crv'] {
  const curve = key.curve;
  const name = typeof curve === 'number' ? COSE_CURVES.get(curve) : undefined;
  if (name === undefined) throw new Error(`unsupported COSE curve ${String(curve)}`);
  return name;
}

function coseKeyToKeyObject(key: CoseKey, type: 'public' | 'private'): KeyObject {
  if (key.keyType !== KeyType.Ec) throw new Error('expected an EC2 COSE key');
  const { x, y, d } = key;
  if (x === undefined || y === undefined) throw new Error('COSE key without x/y');
  const jwk = { kty: 'EC', crv: curveOf(key), x: b64url(x), y: b64url(y) };
  if (type === 'public') return createPublicKey({ key: jwk, format: 'jwk' });
  if (d === undefined) throw new Error('COSE key without d');
  return createPrivateKey({ key: { ...jwk, d: b64url(d) }, format: 'jwk' });
}

function ecdsaAlgorithm(alg: unknown): EcdsaAlgorithm {
  const found = typeof alg === 'number' || typeof alg === 'string' ? ECDSA.get(alg) : undefined;
  if (found === undefined) throw new Error(`unsupported or missing COSE signature algorithm ${String(alg)}`);
  return found;
}

function headerAlg(headers: { readonly headers: Map<number, unknown> | undefined }): unknown {
  return headers.headers?.get(COSE_HEADER_ALG);
}

/** P-256 private key from what @owf/mdoc passes: raw d (32 bytes) or COSE_Key bytes with -4. */
function macPrivateKey(bytes: Uint8Array): KeyObject {
  if (bytes.length === 32) return p256PrivateKeyFromRaw(bytes);
  const map = expectMap(cborDecode(bytes), 'COSE_Key');
  return p256PrivateKeyFromRaw(expectBytes(map.get(COSE_KEY_LABEL.d), 'COSE_Key d'));
}

/** P-256 public key from an uncompressed point (04||x||y) or COSE_Key bytes. */
function macPublicKey(bytes: Uint8Array): KeyObject {
  if (bytes.length === 65 && bytes[0] === 0x04) return p256PublicKeyFromRaw(bytes.subarray(1, 33), bytes.subarray(33));
  const map = expectMap(cborDecode(bytes), 'COSE_Key');
  return p256PublicKeyFromRaw(expectBytes(map.get(COSE_KEY_LABEL.x), 'COSE_Key x'), expectBytes(map.get(COSE_KEY_LABEL.y), 'COSE_Key y'));
}

function hmacKey(key: CoseKey): Uint8Array {
  const k = key.k;
  if (k === undefined) throw new Error('MAC key without k');
  return k;
}

const DIGESTS: Readonly<Record<DigestAlgorithm, string>> = { 'SHA-256': 'sha256', 'SHA-384': 'sha384', 'SHA-512': 'sha512' };

// ---------------------------------------------------------------- X.509

interface ParsedCertificate {
  readonly der: Uint8Array;
  readonly peculiar: X509Certificate;
  readonly node: NodeX509Certificate;
}

/** Parsed certificates kept per context: more than a test PKI's issuers and anchors, few enough to stay small. */
const CERTIFICATE_CACHE_SIZE = 32;

/**
 * Parses a DER certificate once per context and hands the same parsed form out again for the same bytes.
 * Every verification parses the same IACA and DS certificates three to five times (the chain, the issuer's
 * country, the certificate data, the key): with asn1js that was ~6.7 ms of a ~22 ms verification in
 * bench:e2e's profile (issue 34), all of it the simulated backend's and phone's, none the kiosk's. Keyed by
 * the bytes themselves, so a different certificate is never answered from another's parse; least recently
 * used first out.
 */
class CertificateCache {
  private readonly parsed = new Map<string, ParsedCertificate>();

  parse(der: Uint8Array): ParsedCertificate {
    const key = Buffer.from(der.buffer, der.byteOffset, der.byteLength).toString('base64');
    const known = this.parsed.get(key);
    if (known !== undefined) {
      this.parsed.delete(key);
      this.parsed.set(key, known);
      return known;
    }
    const copy = Uint8Array.from(der); // the caller's buffer may be reused; the cache keeps bytes of its own
    const fresh: ParsedCertificate = { der: copy, peculiar: new X509Certificate(copy), node: new NodeX509Certificate(copy) };
    this.parsed.set(key, fresh);
    if (this.parsed.size > CERTIFICATE_CACHE_SIZE) {
      const oldest = this.parsed.keys().next();
      if (oldest.done !== true) this.parsed.delete(oldest.value);
    }
    return fresh;
  }
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

function describe(certificate: ParsedCertificate): string {
  return `"${certificate.peculiar.subject}"`;
}

function checkValidAt(certificate: ParsedCertificate, now: Date): void {
  const { notBefore, notAfter } = certificate.peculiar;
  if (now < notBefore || now > notAfter) {
    throw new Error(
      `certificate ${describe(certificate)} is not valid at ${now.toISOString()} (${notBefore.toISOString()} – ${notAfter.toISOString()})`,
    );
  }
}

/**
 * Whether `issuer` issued `subject`: names chain, signature verifies, issuer may sign certificates, and
 * its pathLenConstraint allows the `intermediatesBelow` CA certificates between it and the leaf.
 */
function issued(issuer: ParsedCertificate, subject: ParsedCertificate, intermediatesBelow: number): boolean {
  if (issuer.peculiar.subject !== subject.peculiar.issuer) return false;
  let signatureOk = false;
  try {
    signatureOk = subject.node.verify(issuer.node.publicKey);
  } catch {
    signatureOk = false;
  }
  if (!signatureOk) return false;
  const constraints = issuer.peculiar.getExtension(BasicConstraintsExtension);
  if (constraints?.ca !== true) return false;
  if (constraints.pathLength !== undefined && intermediatesBelow > constraints.pathLength) return false;
  const keyUsage = issuer.peculiar.getExtension(KeyUsagesExtension);
  return keyUsage === null || (keyUsage.usages & KeyUsageFlags.keyCertSign) !== 0;
}

function verifyChain(
  certificates: CertificateCache,
  input: { trustedCertificates: Uint8Array[]; x5chain: Uint8Array[]; now?: Date },
): void {
  const parseCertificate = (der: Uint8Array): ParsedCertificate => certificates.parse(der);
  const now = input.now ?? new Date();
  const [leafDer, ...intermediateDers] = input.x5chain;
  if (leafDer === undefined) throw new Error('empty x5chain');
  if (input.trustedCertificates.length === 0) throw new Error('no trusted certificates');
  const trusted = input.trustedCertificates.map(parseCertificate);
  const intermediates = intermediateDers.map(parseCertificate);
  let current = parseCertificate(leafDer);
  for (let depth = 0; depth < MAX_PATH_LENGTH; depth++) {
    checkValidAt(current, now);
    const currentDer = current.der;
    if (trusted.some((anchor) => sameBytes(anchor.der, currentDer))) return;
    const subject = current;
    const anchor = trusted.find((candidate) => issued(candidate, subject, depth));
    if (anchor !== undefined) {
      checkValidAt(anchor, now);
      return;
    }
    const next = intermediates.find((candidate) => !sameBytes(candidate.der, currentDer) && issued(candidate, subject, depth));
    if (next === undefined) throw new Error(`no trusted issuer found for ${describe(current)}`);
    current = next;
  }
  throw new Error('certificate path too long');
}

// ---------------------------------------------------------------- context

export interface NodeMdocContextOptions {
  /** Replaces the random source (deterministic tests). */
  readonly random?: (length: number) => Uint8Array;
}

export function createNodeMdocContext(options: NodeMdocContextOptions = {}): MdocContext {
  memoizeMobileSecurityObject();
  const certificates = new CertificateCache();
  return {
    crypto: {
      random: options.random ?? ((length) => Uint8Array.from(randomBytes(length))),
      digest: ({ digestAlgorithm, bytes }) => Uint8Array.from(createHash(DIGESTS[digestAlgorithm]).update(bytes).digest()),
      calculateEphemeralMacKey: ({ privateKey, publicKey, sessionTranscriptBytes, info }) => {
        // ECDH on P-256 (x-coordinate), HKDF-SHA256 with salt SHA-256(SessionTranscriptBytes) (ISO 18013-5 §9.1.3.5).
        const z = ecdhSharedSecret(macPrivateKey(privateKey), macPublicKey(publicKey));
        const k = hkdfSha256(z, sha256(sessionTranscriptBytes), info, 32);
        return CoseKey.create({ keyType: KeyType.Oct, k, algorithm: MacAlgorithm.HS256 });
      },
    },
    cose: {
      sign1: {
        sign: ({ toBeSigned, key, algorithm }) => {
          const alg = ecdsaAlgorithm(algorithm ?? key.algorithm);
          if (curveOf(key) !== alg.crv) throw new Error(`key curve ${curveOf(key)} does not match ${alg.crv}`);
          return Uint8Array.from(ecdsaSign(alg.hash, toBeSigned, { key: coseKeyToKeyObject(key, 'private'), dsaEncoding: 'ieee-p1363' }));
        },
        verify: ({ key, sign1 }) => {
          try {
            const alg = ecdsaAlgorithm(headerAlg(sign1.protectedHeaders) ?? headerAlg(sign1.unprotectedHeaders));
            if (curveOf(key) !== alg.crv || sign1.signature.length !== 2 * alg.coordinateLength) return false;
            return ecdsaVerify(
              alg.hash,
              sign1.toBeSigned,
              { key: coseKeyToKeyObject(key, 'public'), dsaEncoding: 'ieee-p1363' },
              sign1.signature,
            );
          } catch {
            return false;
          }
        },
      },
      mac0: {
        sign: ({ key, toBeAuthenticated }) => Uint8Array.from(createHmac('sha256', hmacKey(key)).update(toBeAuthenticated).digest()),
        verify: ({ mac0, key }) => {
          try {
            if (headerAlg(mac0.protectedHeaders) !== MacAlgorithm.HS256) return false;
            const expected = createHmac('sha256', hmacKey(key)).update(mac0.toBeAuthenticated).digest();
            return sameBytes(expected, mac0.tag);
          } catch {
            return false;
          }
        },
      },
    },
    x509: {
      getIssuerNameField: ({ certificate, field }) => certificates.parse(certificate).peculiar.subjectName.getField(field),
      getPublicKey: ({ certificate }) => {
        const jwk = certificates.parse(certificate).node.publicKey.export({ format: 'jwk' });
        if (jwk.kty !== 'EC' || jwk.crv === undefined || jwk.x === undefined || jwk.y === undefined) {
          throw new Error('certificate key is not an EC key');
        }
        return CoseKey.fromJwk({ kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y });
      },
      verifyCertificateChain: (input) => verifyChain(certificates, input),
      getCertificateData: ({ certificate }) => {
        const parsed = certificates.parse(certificate);
        return {
          issuerName: parsed.peculiar.issuer,
          subjectName: parsed.peculiar.subject,
          serialNumber: parsed.peculiar.serialNumber,
          thumbprint: parsed.node.fingerprint256.replaceAll(':', '').toLowerCase(),
          notBefore: parsed.peculiar.notBefore,
          notAfter: parsed.peculiar.notAfter,
          pem: parsed.peculiar.toString('pem'),
        };
      },
    },
  };
}
