/**
 * Which TLS certificates the kiosk trusts for its backend (`backend.tls`): Node's bundled roots (the
 * Mozilla CA list: `tls.rootCertificates`) plus an optional PEM bundle of the site's own CAs — enterprise
 * networks at counters often inspect TLS with a private CA — and optional pinning of the server's public
 * key (SHA-256 of its SubjectPublicKeyInfo, base64, as HPKP's `pin-sha256` / RFC 7469 §2.4 spelled it),
 * matched against every certificate of the chain the server sent.
 *
 * Used by the session client (HTTP) and the relay socket (WebSocket) alike, so both see one policy. A TLS
 * failure is named for staff (what is wrong, which setting fixes it) instead of "unreachable".
 */
import { createHash, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { checkServerIdentity, rootCertificates, type PeerCertificate } from 'node:tls';
import { ConfigError } from '../platform/config.js';
import { errorText } from '../common/error-text.js';

export interface TlsTrustConfig {
  /** PEM file of extra CA certificates, trusted in addition to the bundled roots. */
  readonly caFile?: string | undefined;
  /** Accepted SPKI SHA-256 pins (base64); when set, one certificate of the chain must match one. */
  readonly pinSha256?: readonly string[] | undefined;
}

/** What `tls.connect` (through undici and ws) takes to apply the policy. */
export interface TlsTrust {
  /** Bundled roots plus the custom CAs; undefined: Node's defaults. */
  readonly ca: readonly string[] | undefined;
  readonly checkServerIdentity: (host: string, cert: PeerCertificate) => Error | undefined;
  /** For the log: how many custom CAs and pins are in force (never their content). */
  readonly summary: { readonly customCas: number; readonly pins: number };
}

/** The error code of a pin mismatch (a code of ours, in the style of Node's). */
export const PIN_MISMATCH_CODE = 'ERR_KIOSK_TLS_PIN_MISMATCH';

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;
/** A CA bundle larger than this is not a CA bundle (Mozilla's whole list is about 220 KB). */
const MAX_CA_FILE_BYTES = 4 * 1024 * 1024;

/**
 * The certificates of a PEM bundle, each checked to parse; throws {@link ConfigError} naming the key
 * (`backend.tls.caFile`, or `backend.proxy.caFile` for the proxy's own certificate).
 */
export function readCaBundle(path: string, read: (path: string) => Buffer = readFileSync, key = 'backend.tls.caFile'): string[] {
  let bytes: Buffer;
  try {
    bytes = read(path);
  } catch (e) {
    throw new ConfigError(`${key}: cannot read ${path}: ${errorText(e)}`);
  }
  if (bytes.length > MAX_CA_FILE_BYTES) throw new ConfigError(`${key}: ${path} is larger than ${MAX_CA_FILE_BYTES} bytes`);
  const pems = bytes.toString('utf8').match(PEM_CERTIFICATE) ?? [];
  if (pems.length === 0) throw new ConfigError(`${key}: ${path} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`);
  pems.forEach((pem, index) => {
    try {
      new X509Certificate(pem);
    } catch {
      throw new ConfigError(`${key}: certificate ${index + 1} of ${path} cannot be read`);
    }
  });
  return pems;
}

/**
 * SHA-256 of a certificate's SubjectPublicKeyInfo (DER), base64: the value `pinSha256` lists. Taken from
 * the certificate's DER: `PeerCertificate.pubkey` is the bare key (an EC point), not the SPKI.
 */
export function spkiSha256(certDer: Buffer): string {
  const spki = new X509Certificate(certDer).publicKey.export({ type: 'spki', format: 'der' });
  return createHash('sha256').update(spki).digest('base64');
}

/** The peer certificate and its issuers as the server sent them (the chain ends where it repeats). */
function chainOf(cert: PeerCertificate): PeerCertificate[] {
  const chain: PeerCertificate[] = [];
  let current: PeerCertificate | undefined = cert;
  while (current !== undefined && !chain.includes(current) && chain.length < 16) {
    chain.push(current);
    const issuer: PeerCertificate | undefined = (current as Partial<{ issuerCertificate: PeerCertificate }>).issuerCertificate;
    current = issuer;
  }
  return chain;
}

export function buildTlsTrust(config: TlsTrustConfig, read?: (path: string) => Buffer): TlsTrust {
  const custom = config.caFile === undefined ? [] : readCaBundle(config.caFile, read);
  const pins = new Set(config.pinSha256 ?? []);
  return {
    ca: custom.length === 0 ? undefined : [...rootCertificates, ...custom],
    checkServerIdentity: (host, cert) => {
      // The host name check first, exactly as Node does it by default.
      const mismatch = checkServerIdentity(host, cert);
      if (mismatch) return mismatch;
      if (pins.size === 0) return undefined;
      if (chainOf(cert).some((c) => (c.raw as Buffer | undefined) !== undefined && pins.has(spkiSha256(c.raw)))) return undefined;
      return Object.assign(new Error(`no certificate of ${host} matches backend.tls.pinSha256`), { code: PIN_MISMATCH_CODE });
    },
    summary: { customCas: custom.length, pins: pins.size },
  };
}

/** OpenSSL and Node verification codes (node/src/crypto/crypto_common.cc) that mean "not trusted". */
const UNTRUSTED = new Set([
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'CERT_SIGNATURE_FAILURE',
]);

/**
 * A staff sentence for a TLS failure code, or undefined when the code is not about TLS. It names the
 * problem and the setting that fixes it; the code stays in brackets for the support desk.
 */
export function describeTlsFailure(code: string): string | undefined {
  if (UNTRUSTED.has(code)) {
    return `the backend's certificate is not issued by a CA this kiosk trusts (${code}): add the CA (or the TLS inspection proxy's CA) to backend.tls.caFile`;
  }
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') return `the backend's certificate is for another host name (${code}): check backend.baseUrl`;
  if (code === 'CERT_HAS_EXPIRED') return `the backend's certificate has expired (${code}); if it has not, check this kiosk's clock`;
  if (code === 'CERT_NOT_YET_VALID') return `the backend's certificate is not valid yet (${code}): check this kiosk's clock`;
  if (code === PIN_MISMATCH_CODE)
    return `the backend's key does not match backend.tls.pinSha256 (${code}): update the pins if the backend changed its key`;
  if (/^ERR_SSL_|^ERR_TLS_|^EPROTO$/.test(code)) return `the TLS handshake with the backend failed (${code})`;
  return undefined;
}

/** The code is a TLS verification or handshake failure (of whichever peer). */
export function isTlsFailureCode(code: string): boolean {
  return describeTlsFailure(code) !== undefined;
}

/**
 * The same for an https:// proxy's own certificate (`origin` names the proxy), or undefined when the code
 * is not about TLS. It must never blame the backend's certificate: the backend's TLS has not started yet.
 */
export function describeProxyTlsFailure(code: string, origin: string): string | undefined {
  if (UNTRUSTED.has(code))
    return `the proxy ${origin} has a certificate not issued by a CA this kiosk trusts (${code}): add the proxy's CA to backend.proxy.caFile`;
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID')
    return `the proxy ${origin} has a certificate for another host name (${code}): check the proxy's address`;
  if (code === 'CERT_HAS_EXPIRED')
    return `the proxy ${origin} has an expired certificate (${code}); if it has not expired, check this kiosk's clock`;
  if (code === 'CERT_NOT_YET_VALID') return `the proxy ${origin} has a certificate not valid yet (${code}): check this kiosk's clock`;
  if (/^ERR_SSL_|^ERR_TLS_|^EPROTO$/.test(code)) return `the TLS handshake with the proxy ${origin} failed (${code})`;
  return undefined;
}
