/**
 * Proves the node:crypto MdocContext with @owf/mdoc 0.6.0 end to end: a self-generated IACA → DS chain
 * issues a small mDL, the holder answers a DeviceRequest for a QR SessionTranscript built by our toolkit
 * with an ECDSA deviceSignature, and @owf/mdoc's Verifier accepts it against the IACA with zero failed
 * checks; a tampered element or a foreign IACA fails. Also the context's pieces on their own (EMacKey
 * derivation in both key forms, X.509 path rules).
 */
import 'reflect-metadata';
import { verify as ecdsaVerify, webcrypto } from 'node:crypto';
import {
  CoseKey,
  DateOnly,
  DeviceKey,
  DeviceRequest,
  DeviceResponse,
  DocRequest,
  Holder,
  Issuer,
  ItemsRequest,
  SignatureAlgorithm,
  Verifier,
  type IssuerSigned,
  type VerificationAssessment,
} from '@owf/mdoc';
import {
  AuthorityKeyIdentifierExtension,
  BasicConstraintsExtension,
  ExtendedKeyUsageExtension,
  KeyUsageFlags,
  KeyUsagesExtension,
  SubjectKeyIdentifierExtension,
  X509CertificateGenerator,
} from '@peculiar/x509';
import { describe, expect, it } from 'vitest';
import { cborEncode, encodeByteString } from '../../../../src/qa/sim/iso/cbor.js';
import { encodeRawArray, rawArrayItems } from '../../../../src/qa/sim/iso/cbor-raw.js';
import {
  encodeCoseKey,
  encodeCoseKeyBytes,
  generateP256KeyPair,
  privateScalar,
  toEs256Jwk,
  type P256KeyPair,
} from '../../../../src/qa/sim/iso/cose-key.js';
import { encodeDeviceEngagement } from '../../../../src/qa/sim/iso/device-engagement.js';
import { deviceAuthenticationBytes, readDeviceSigned, verifyDeviceMac } from '../../../../src/qa/sim/iso/device-mac.js';
import { createNodeMdocContext } from '../../../../src/qa/sim/iso/mdoc-context.js';
import { deriveEMacKey } from '../../../../src/qa/sim/iso/session-crypto.js';
import { buildSessionTranscript } from '../../../../src/qa/sim/iso/session-transcript.js';

type CryptoKeyPair = webcrypto.CryptoKeyPair;

const ctx = createNodeMdocContext();
const MDL = 'org.iso.18013.5.1.mDL';
const NS = 'org.iso.18013.5.1';
const DS_EKU = '1.0.18013.5.1.2'; // mdlDS, the EKU of the Annex D DS certificate
const DAY = 86_400_000;
const subtle = webcrypto.subtle;
const EC_PARAMS = { name: 'ECDSA', namedCurve: 'P-256' } as const;
const SIGNING = { name: 'ECDSA', hash: 'SHA-256' } as const;

interface Pki {
  readonly iacaDer: Uint8Array;
  readonly iacaKeys: CryptoKeyPair;
}

async function createIaca(name: string, pathLength = 0): Promise<Pki> {
  const keys = await subtle.generateKey(EC_PARAMS, true, ['sign', 'verify']);
  const cert = await X509CertificateGenerator.createSelfSigned(
    {
      name,
      keys,
      notBefore: new Date(Date.now() - DAY),
      notAfter: new Date(Date.now() + 365 * DAY),
      signingAlgorithm: SIGNING,
      extensions: [
        new BasicConstraintsExtension(true, pathLength, true),
        new KeyUsagesExtension(KeyUsageFlags.keyCertSign | KeyUsageFlags.cRLSign, true),
        await SubjectKeyIdentifierExtension.create(keys.publicKey, false, webcrypto),
      ],
    },
    webcrypto,
  );
  return { iacaDer: new Uint8Array(cert.rawData), iacaKeys: keys };
}

interface DocumentSigner {
  readonly der: Uint8Array;
  readonly signingKey: CoseKey;
  readonly keys: CryptoKeyPair;
}

async function createDocumentSigner(
  issuer: Pki,
  options: { subject?: string; from?: Date; to?: Date; issuerName?: string; profile?: 'ds' | 'bare' | 'ca' | 'ca-without-cert-sign' } = {},
): Promise<DocumentSigner> {
  const keys = await subtle.generateKey(EC_PARAMS, true, ['sign', 'verify']);
  const profile = options.profile ?? 'ds';
  const extensions =
    profile === 'bare'
      ? []
      : profile === 'ca-without-cert-sign'
        ? [new BasicConstraintsExtension(true, 0, true), new KeyUsagesExtension(KeyUsageFlags.digitalSignature, true)]
        : profile === 'ca'
          ? [new BasicConstraintsExtension(true, 0, true), new KeyUsagesExtension(KeyUsageFlags.keyCertSign, true)]
          : [
              new KeyUsagesExtension(KeyUsageFlags.digitalSignature, true),
              new ExtendedKeyUsageExtension([DS_EKU], true),
              await AuthorityKeyIdentifierExtension.create(issuer.iacaKeys.publicKey, false, webcrypto),
              await SubjectKeyIdentifierExtension.create(keys.publicKey, false, webcrypto),
            ];
  const cert = await X509CertificateGenerator.create(
    {
      subject: options.subject ?? 'C=US, CN=Test Document Signer',
      issuer: options.issuerName ?? 'C=US, CN=Test IACA',
      publicKey: keys.publicKey,
      signingKey: issuer.iacaKeys.privateKey,
      notBefore: options.from ?? new Date(Date.now() - DAY),
      notAfter: options.to ?? new Date(Date.now() + 90 * DAY),
      signingAlgorithm: SIGNING,
      extensions,
    },
    webcrypto,
  );
  const jwk = await subtle.exportKey('jwk', keys.privateKey);
  return {
    der: new Uint8Array(cert.rawData),
    keys,
    signingKey: CoseKey.fromJwk({ kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y, d: jwk.d, alg: 'ES256' }),
  };
}

async function issueMdl(signer: DocumentSigner, deviceKey: P256KeyPair): Promise<IssuerSigned> {
  const now = new Date();
  return new Issuer(MDL, ctx)
    .addIssuerNamespace(NS, {
      family_name: 'Doe',
      given_name: 'Jane',
      birth_date: new DateOnly('1990-04-12'),
      issuing_country: 'US',
      document_number: 'D1234567',
      age_over_18: true,
      age_over_21: true,
    })
    .sign({
      signingKey: signer.signingKey,
      algorithm: SignatureAlgorithm.ES256,
      digestAlgorithm: 'SHA-256',
      validityInfo: { signed: now, validFrom: now, validUntil: new Date(now.getTime() + 365 * DAY) },
      deviceKeyInfo: { deviceKey: DeviceKey.decode(encodeCoseKey(deviceKey.publicKey)) },
      certificates: [signer.der],
    });
}

function qrTranscript(): { taggedBytes: Uint8Array; bytes: Uint8Array; eReader: P256KeyPair } {
  const eDevice = generateP256KeyPair();
  const eReader = generateP256KeyPair();
  const deviceEngagement = encodeDeviceEngagement({
    eDeviceKey: eDevice.publicKey,
    retrievalMethods: [
      { type: 'ble', peripheralServerMode: false, centralClientMode: true, centralClientModeUuid: '45efef74-2b2c-4837-a9a3-b0e1d05a6917' },
    ],
  });
  const transcript = buildSessionTranscript({
    deviceEngagement,
    eReaderKeyBytes: encodeCoseKeyBytes(eReader.publicKey),
    handover: { type: 'qr' },
  });
  return { ...transcript, eReader };
}

function requestFor(elements: readonly string[]): DeviceRequest {
  return DeviceRequest.create({
    docRequests: [
      DocRequest.create({
        itemsRequest: ItemsRequest.create({ docType: MDL, namespaces: { [NS]: Object.fromEntries(elements.map((e) => [e, false])) } }),
      }),
    ],
  });
}

async function verifyChecks(options: {
  response: Uint8Array;
  request: DeviceRequest;
  sessionTranscript: Uint8Array;
  trusted: Uint8Array[];
}): Promise<VerificationAssessment[]> {
  const checks: VerificationAssessment[] = [];
  await Verifier.verifyDeviceResponse(
    {
      deviceRequest: options.request,
      deviceResponse: options.response,
      sessionTranscript: options.sessionTranscript,
      trustedCertificates: options.trusted,
      onCheck: (check) => checks.push(check),
    },
    ctx,
  );
  return checks;
}

const failed = (checks: readonly VerificationAssessment[]): string[] =>
  checks.filter((c) => c.status === 'FAILED').map((c) => `${c.check} ${c.reason ?? ''}`);

/** Replaces the single occurrence of `from` by `to` (same length) in `bytes`. */
function replaceOnce(bytes: Uint8Array, from: Uint8Array, to: Uint8Array): Uint8Array {
  const haystack = Buffer.from(bytes);
  const at = haystack.indexOf(Buffer.from(from));
  expect(at).toBeGreaterThanOrEqual(0);
  expect(haystack.indexOf(Buffer.from(from), at + 1)).toBe(-1);
  const out = Uint8Array.from(bytes);
  out.set(to, at);
  return out;
}

describe('MdocContext with @owf/mdoc: issue → present (QR, deviceSignature) → verify', async () => {
  const pki = await createIaca('C=US, CN=Test IACA');
  const signer = await createDocumentSigner(pki);
  const deviceKey = generateP256KeyPair();
  const issuerSigned = await issueMdl(signer, deviceKey);
  const transcript = qrTranscript();
  const request = requestFor(['family_name', 'age_over_21']);
  const deviceResponse = await Holder.createDeviceResponseForDeviceRequest(
    {
      deviceRequest: request,
      sessionTranscript: transcript.taggedBytes,
      issuerSigned: [issuerSigned],
      signature: { signingKey: CoseKey.fromJwk(toEs256Jwk(deviceKey.privateKey)) },
    },
    ctx,
  );
  const responseBytes = deviceResponse.encode();

  it('verifies against the IACA with zero failed checks', async () => {
    const checks = await verifyChecks({
      response: responseBytes,
      request,
      sessionTranscript: transcript.taggedBytes,
      trusted: [pki.iacaDer],
    });
    expect(failed(checks)).toEqual([]);
    const passed = checks.filter((c) => c.status === 'PASSED').map((c) => c.check);
    expect(passed).toContain('Device signature must be valid');
    expect(passed).toContain('Issuer certificate must be valid');
    expect(passed).toContain('Issuer auth signature is invalid'); // (sic) @owf/mdoc's label for the passing signature check
    expect(passed).toContain(`The calculated digest for ${NS}/family_name attribute must match the digest in the issuerAuth element`);
  });

  it('discloses only the requested elements', () => {
    const decoded = DeviceResponse.decode(responseBytes);
    const items = decoded.documents?.[0]?.getIssuerNamespace(NS) ?? [];
    expect(items.map((item) => item.elementIdentifier).sort()).toEqual(['age_over_21', 'family_name']);
  });

  it('signs the deviceSignature with alg ES256 over DeviceAuthenticationBytes spliced from our SessionTranscript', () => {
    const [document] = readDeviceSigned(responseBytes);
    if (document?.deviceSignature === undefined) throw new Error('no deviceSignature');
    const [protectedHeader, , payload, signature] = rawArrayItems(document.deviceSignature);
    expect(Buffer.from(protectedHeader ?? []).toString('hex')).toBe('43a10126'); // bstr {1: -7}: alg set, not null
    expect(Buffer.from(payload ?? []).toString('hex')).toBe('f6'); // detached
    // Independent check: Sig_structure over our own DeviceAuthenticationBytes, verified with node:crypto.
    const detached = deviceAuthenticationBytes({
      sessionTranscript: transcript.bytes,
      docType: MDL,
      deviceNameSpacesBytes: document.deviceNameSpacesBytes,
    });
    const toBeSigned = encodeRawArray([
      cborEncode('Signature1'),
      encodeByteString(Uint8Array.of(0xa1, 0x01, 0x26)),
      encodeByteString(new Uint8Array(0)),
      encodeByteString(detached),
    ]);
    const rawSignature = (signature ?? new Uint8Array(0)).subarray(2); // skip the bstr header 58 40
    expect(ecdsaVerify('sha256', toBeSigned, { key: deviceKey.publicKey, dsaEncoding: 'ieee-p1363' }, rawSignature)).toBe(true);
  });

  it('a tampered element fails the digest check', async () => {
    // family_name "Doe" (63 446f65) → "Dog" inside its IssuerSignedItem.
    const tampered = replaceOnce(responseBytes, Uint8Array.of(0x63, 0x44, 0x6f, 0x65), Uint8Array.of(0x63, 0x44, 0x6f, 0x67));
    const checks = await verifyChecks({ response: tampered, request, sessionTranscript: transcript.taggedBytes, trusted: [pki.iacaDer] });
    expect(failed(checks)).toEqual([expect.stringContaining(`The calculated digest for ${NS}/family_name attribute must match`)]);
  });

  it('a foreign IACA fails the certificate check', async () => {
    const foreign = await createIaca('C=US, CN=Test IACA');
    const checks = await verifyChecks({
      response: responseBytes,
      request,
      sessionTranscript: transcript.taggedBytes,
      trusted: [foreign.iacaDer],
    });
    expect(failed(checks)).toEqual([expect.stringContaining('Issuer certificate must be valid')]);
  });

  it('another SessionTranscript fails the device signature', async () => {
    const other = qrTranscript();
    const checks = await verifyChecks({ response: responseBytes, request, sessionTranscript: other.taggedBytes, trusted: [pki.iacaDer] });
    expect(failed(checks)).toEqual([expect.stringContaining('Device signature must be valid')]);
  });

  it('a device key without alg makes signing throw instead of writing {1: null}', async () => {
    const jwkWithoutAlg = Object.fromEntries(Object.entries(toEs256Jwk(deviceKey.privateKey)).filter(([name]) => name !== 'alg'));
    await expect(
      Holder.createDeviceResponseForDeviceRequest(
        {
          deviceRequest: request,
          sessionTranscript: transcript.taggedBytes,
          issuerSigned: [issuerSigned],
          signature: { signingKey: CoseKey.fromJwk(jwkWithoutAlg) },
        },
        ctx,
      ),
    ).rejects.toThrow(/signature algorithm/);
  });
});

describe('MdocContext pieces', () => {
  it('calculateEphemeralMacKey takes raw or COSE-encoded keys and equals our EMacKey', async () => {
    const sDevice = generateP256KeyPair();
    const eReader = generateP256KeyPair();
    const { taggedBytes } = qrTranscript();
    const expected = deriveEMacKey({ privateKey: sDevice.privateKey, publicKey: eReader.publicKey, sessionTranscriptBytes: taggedBytes });
    const raw = await ctx.crypto.calculateEphemeralMacKey({
      privateKey: privateScalar(sDevice.privateKey),
      publicKey: CoseKey.fromJwk(toEs256Jwk(eReader.publicKey)).publicKey,
      sessionTranscriptBytes: taggedBytes,
      info: 'EMacKey',
    });
    const encoded = await ctx.crypto.calculateEphemeralMacKey({
      privateKey: CoseKey.fromJwk(toEs256Jwk(sDevice.privateKey)).encode(),
      publicKey: encodeCoseKey(eReader.publicKey),
      sessionTranscriptBytes: taggedBytes,
      info: 'EMacKey',
    });
    expect(raw.k).toEqual(expected);
    expect(encoded.k).toEqual(expected);
  });

  it('digest and random', async () => {
    expect(Buffer.from(await ctx.crypto.digest({ digestAlgorithm: 'SHA-256', bytes: new Uint8Array(0) })).toString('hex')).toBe(
      'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
    );
    expect(ctx.crypto.random(32)).toHaveLength(32);
    expect(createNodeMdocContext({ random: (n) => new Uint8Array(n).fill(7) }).crypto.random(3)).toEqual(Uint8Array.of(7, 7, 7));
  });

  describe('verifyCertificateChain', async () => {
    const pki = await createIaca('C=US, CN=Test IACA');
    const signer = await createDocumentSigner(pki);
    const verify = async (x5chain: Uint8Array[], trustedCertificates: Uint8Array[], now?: Date): Promise<void> => {
      await ctx.x509.verifyCertificateChain({ x5chain, trustedCertificates, ...(now === undefined ? {} : { now }) });
    };

    it('accepts DS → trusted IACA, and a directly trusted DS (Annex D style)', async () => {
      await expect(verify([signer.der], [pki.iacaDer])).resolves.toBeUndefined();
      await expect(verify([signer.der, pki.iacaDer], [pki.iacaDer])).resolves.toBeUndefined();
      await expect(verify([signer.der], [signer.der])).resolves.toBeUndefined();
    });

    it('rejects an untrusted chain, an empty chain, no anchors, and an expired DS', async () => {
      const foreign = await createIaca('C=US, CN=Test IACA');
      await expect(verify([signer.der], [foreign.iacaDer])).rejects.toThrow(/no trusted issuer/);
      await expect(verify([signer.der, pki.iacaDer], [foreign.iacaDer])).rejects.toThrow(/no trusted issuer/);
      await expect(verify([], [pki.iacaDer])).rejects.toThrow(/empty x5chain/);
      await expect(verify([signer.der], [])).rejects.toThrow(/no trusted certificates/);
      await expect(verify([signer.der], [pki.iacaDer], new Date(Date.now() + 200 * DAY))).rejects.toThrow(/not valid at/);
    });

    it('rejects an issuer without basicConstraints cA, or whose keyUsage lacks keyCertSign', async () => {
      // Names chain and the signatures verify; only the issuer's CA rules stop these paths.
      const root = await createIaca('C=US, CN=Test IACA', 1);
      for (const profile of ['bare', 'ca-without-cert-sign'] as const) {
        const middle = await createDocumentSigner(root, { subject: 'C=US, CN=Middle', profile });
        const leaf = await createDocumentSigner(
          { iacaDer: middle.der, iacaKeys: middle.keys },
          { subject: 'C=US, CN=Leaf', issuerName: 'C=US, CN=Middle' },
        );
        await expect(verify([leaf.der, middle.der], [root.iacaDer]), profile).rejects.toThrow(
          /no trusted issuer found for "C=US, CN=Leaf"/,
        );
      }
    });

    it('walks a proper intermediate CA, within the root pathLenConstraint only', async () => {
      const root = await createIaca('C=US, CN=Test IACA', 1);
      const middle = await createDocumentSigner(root, { subject: 'C=US, CN=Middle', profile: 'ca' });
      const leaf = await createDocumentSigner(
        { iacaDer: middle.der, iacaKeys: middle.keys },
        { subject: 'C=US, CN=Leaf', issuerName: 'C=US, CN=Middle' },
      );
      await expect(verify([leaf.der, middle.der], [root.iacaDer])).resolves.toBeUndefined();
      await expect(verify([leaf.der], [root.iacaDer])).rejects.toThrow(/no trusted issuer found for "C=US, CN=Leaf"/);
      // The ISO IACA profile (pathLen 0) forbids the intermediate.
      const strictMiddle = await createDocumentSigner(pki, { subject: 'C=US, CN=Middle', profile: 'ca' });
      const strictLeaf = await createDocumentSigner(
        { iacaDer: strictMiddle.der, iacaKeys: strictMiddle.keys },
        { subject: 'C=US, CN=Leaf', issuerName: 'C=US, CN=Middle' },
      );
      await expect(verify([strictLeaf.der, strictMiddle.der], [pki.iacaDer])).rejects.toThrow(
        /no trusted issuer found for "C=US, CN=Middle"/,
      );
    });

    it('reads the DS subject country and certificate data', async () => {
      expect(ctx.x509.getIssuerNameField({ certificate: signer.der, field: 'C' })).toEqual(['US']);
      const data = await ctx.x509.getCertificateData({ certificate: signer.der });
      expect(data.subjectName).toContain('CN=Test Document Signer');
      expect(data.issuerName).toContain('CN=Test IACA');
      expect(data.thumbprint).toMatch(/^[0-9a-f]{64}$/);
      expect(data.pem).toContain('BEGIN CERTIFICATE');
    });

    it('answers each certificate from its own parse: another certificate, a copy of the same, past the cache size', async () => {
      // The context keeps parsed certificates (mdoc-context.ts, CertificateCache): these would fail if it
      // answered by anything but the exact bytes or lost track past its bound.
      const fresh = createNodeMdocContext();
      const iaca = await fresh.x509.getCertificateData({ certificate: pki.iacaDer });
      const ds = await fresh.x509.getCertificateData({ certificate: signer.der });
      expect(iaca.subjectName).toContain('CN=Test IACA');
      expect(ds.subjectName).toContain('CN=Test Document Signer');
      expect(ds.thumbprint).not.toBe(iaca.thumbprint);
      expect(await fresh.x509.getCertificateData({ certificate: Uint8Array.from(signer.der) })).toMatchObject({
        thumbprint: ds.thumbprint,
      });
      const others = await Promise.all(Array.from({ length: 40 }, (_, i) => createIaca(`C=US, CN=Other ${i}`)));
      for (const other of others) await fresh.x509.getCertificateData({ certificate: other.iacaDer });
      expect(fresh.x509.getIssuerNameField({ certificate: signer.der, field: 'CN' })).toEqual(['Test Document Signer']);
      const chain = async (anchor: Uint8Array): Promise<void> => {
        await fresh.x509.verifyCertificateChain({ x5chain: [signer.der], trustedCertificates: [anchor] });
      };
      await expect(chain(others[0]?.iacaDer ?? pki.iacaDer)).rejects.toThrow(/no trusted issuer/);
      await expect(chain(pki.iacaDer)).resolves.toBeUndefined();
    });
  });
});

describe('@owf/mdoc 0.6.0 deviceMac creation (why device-mac.ts exists)', () => {
  it('writes the device key alg instead of 5 into the Mac0 header, so a conforming verifier rejects it', async () => {
    const dsKey = generateP256KeyPair();
    const deviceKey = generateP256KeyPair();
    const issuerSigned = await new Issuer(MDL, ctx).addIssuerNamespace(NS, { family_name: 'Doe' }).sign({
      signingKey: CoseKey.fromJwk(toEs256Jwk(dsKey.privateKey)),
      algorithm: SignatureAlgorithm.ES256,
      digestAlgorithm: 'SHA-256',
      validityInfo: { signed: new Date(), validFrom: new Date(), validUntil: new Date(Date.now() + DAY) },
      deviceKeyInfo: { deviceKey: DeviceKey.decode(encodeCoseKey(deviceKey.publicKey)) },
      certificates: [Uint8Array.of(0x30, 0x00)], // never parsed on this path
    });
    const transcript = qrTranscript();
    const response = await Holder.createDeviceResponseForDeviceRequest(
      {
        deviceRequest: requestFor(['family_name']),
        sessionTranscript: transcript.taggedBytes,
        issuerSigned: [issuerSigned],
        mac: {
          signingKey: CoseKey.fromJwk(toEs256Jwk(deviceKey.privateKey)),
          ephemeralKey: CoseKey.fromJwk(toEs256Jwk(transcript.eReader.publicKey)),
        },
      },
      ctx,
    );
    const [document] = readDeviceSigned(response.encode());
    if (document?.deviceMac === undefined) throw new Error('no deviceMac');
    expect(Buffer.from(document.deviceMac.subarray(0, 5)).toString('hex')).toBe('8443a10126'); // {1: -7}, not {1: 5}
    const eMacKey = deriveEMacKey({
      privateKey: transcript.eReader.privateKey,
      publicKey: deviceKey.publicKey,
      sessionTranscriptBytes: transcript.taggedBytes,
    });
    const verdict = verifyDeviceMac({
      sessionTranscript: transcript.bytes,
      docType: MDL,
      deviceNameSpacesBytes: document.deviceNameSpacesBytes,
      eMacKey,
      deviceMac: document.deviceMac,
    });
    expect(verdict).toEqual({ valid: false, reason: 'COSE_Mac0 alg must be 5 (HMAC 256/256), got -7' });
  });
});
