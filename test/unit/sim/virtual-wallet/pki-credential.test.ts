/**
 * The virtual phone's test PKI and mDL: a generated IACA → DS chain with the ISO profile, PEM export and
 * import, the IACA written for a trust directory, and an mDL issued under it with the full element set
 * (portrait a real JPEG), valid, expired or tampered.
 */
import 'reflect-metadata';
import { X509Certificate as NodeX509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { IssuerSigned, type VerificationAssessment } from '@owf/mdoc';
import { BasicConstraintsExtension, ExtendedKeyUsageExtension, KeyUsageFlags, KeyUsagesExtension, X509Certificate } from '@peculiar/x509';
import jpeg from 'jpeg-js';
import { describe, expect, it } from 'vitest';
import { ALL_MDL_ELEMENTS } from '../../../../src/kiosk/profiles.js';
import { Tag, cborDecode, expectMap, readFullDate, readTdate } from '../../../../src/qa/sim/iso/cbor.js';
import { createNodeMdocContext } from '../../../../src/qa/sim/iso/mdoc-context.js';
import {
  MDL_DS_EKU,
  createTestPki,
  exportTestPkiPem,
  getTestCredential,
  getTestPki,
  importTestPkiPem,
  issueTestCredential,
  writeIacaPem,
  type TestCredential,
} from '../../../../src/qa/sim/virtual-wallet/index.js';

const ctx = createNodeMdocContext();
const NS = 'org.iso.18013.5.1';

/** IssuerSigned verification with @owf/mdoc: signature, chain to the IACA, MSO validity, digests. */
async function issuerChecks(credential: TestCredential, trusted: Uint8Array[], now?: Date): Promise<VerificationAssessment[]> {
  const checks: VerificationAssessment[] = [];
  await IssuerSigned.decode(credential.issuerSignedBytes).verify(
    { trustedCertificates: trusted, verificationCallback: (check) => checks.push(check), ...(now ? { now } : {}) },
    ctx,
  );
  return checks;
}

const failed = (checks: readonly VerificationAssessment[]): string[] => checks.filter((c) => c.status === 'FAILED').map((c) => c.check);

/** Decoded values of the credential's IssuerSignedItems (our CBOR, tags kept). */
function values(credential: TestCredential): Map<string, unknown> {
  const issuerSigned = expectMap(cborDecode(credential.issuerSignedBytes), 'IssuerSigned');
  const items = expectMap(issuerSigned.get('nameSpaces'), 'nameSpaces').get(NS) as { decode(): unknown }[];
  return new Map(
    items.map((item) => {
      const map = expectMap(item.decode(), 'item');
      return [map.get('elementIdentifier') as string, map.get('elementValue')];
    }),
  );
}

describe('test PKI', async () => {
  const pki = await getTestPki();

  it('IACA: self-signed CA with pathLen 0, keyCertSign + cRLSign; C and ST in the subject', () => {
    const iaca = new X509Certificate(pki.iaca.der);
    expect(iaca.subject).toBe('C=US, ST=US-CA, CN=Virtual Wallet Test IACA');
    expect(iaca.issuer).toBe(iaca.subject);
    expect(new NodeX509Certificate(pki.iaca.der).verify(pki.iaca.publicKey)).toBe(true);
    const constraints = iaca.getExtension(BasicConstraintsExtension);
    expect(constraints?.ca).toBe(true);
    expect(constraints?.pathLength).toBe(0);
    expect(constraints?.critical).toBe(true);
    expect(iaca.getExtension(KeyUsagesExtension)?.usages).toBe(KeyUsageFlags.keyCertSign | KeyUsageFlags.cRLSign);
  });

  it('DS: signed by the IACA, digitalSignature, EKU mdlDS 1.0.18013.5.1.2, not a CA', () => {
    const ds = new X509Certificate(pki.documentSigner.der);
    expect(ds.issuer).toBe(pki.iaca.subject);
    expect(ds.subject).toBe('C=US, ST=US-CA, CN=Virtual Wallet Test DS');
    expect(new NodeX509Certificate(pki.documentSigner.der).verify(pki.iaca.publicKey)).toBe(true);
    expect(ds.getExtension(KeyUsagesExtension)?.usages).toBe(KeyUsageFlags.digitalSignature);
    expect(ds.getExtension(ExtendedKeyUsageExtension)?.usages).toEqual([MDL_DS_EKU]);
    expect(ds.getExtension(BasicConstraintsExtension)).toBeNull();
  });

  it('the chain verifies with the mdoc context (the mock backend uses the same rules), and not against a foreign IACA', async () => {
    await expect(
      Promise.resolve(ctx.x509.verifyCertificateChain({ x5chain: [pki.documentSigner.der], trustedCertificates: [pki.iaca.der] })),
    ).resolves.toBeUndefined();
    const foreign = await createTestPki();
    expect(() => ctx.x509.verifyCertificateChain({ x5chain: [pki.documentSigner.der], trustedCertificates: [foreign.iaca.der] })).toThrow(
      /no trusted issuer/,
    );
  });

  it('is cached per process; fresh on request; configurable country', async () => {
    expect(await getTestPki()).toBe(pki);
    const other = await createTestPki({ country: 'NL', jurisdiction: null, iacaCommonName: 'NL IACA' });
    expect(other.iaca.subject).toBe('C=NL, CN=NL IACA');
    expect(other.jurisdiction).toBeUndefined();
    await expect(createTestPki({ country: 'nld' })).rejects.toThrow(/alpha-2/);
  });

  it('round-trips through PEM (keys checked against the certificates)', () => {
    const pem = exportTestPkiPem(pki);
    expect(pem.iacaCertificate).toMatch(/^-----BEGIN CERTIFICATE-----/);
    expect(pem.iacaPrivateKey).toMatch(/^-----BEGIN PRIVATE KEY-----/);
    const back = importTestPkiPem(pem);
    expect(back.iaca.der).toEqual(pki.iaca.der);
    expect(back.documentSigner.der).toEqual(pki.documentSigner.der);
    expect(back.country).toBe('US');
    expect(back.jurisdiction).toBe('US-CA');
    expect(back.documentSigner.privateKey.equals(pki.documentSigner.privateKey)).toBe(true);
    expect(() => importTestPkiPem({ ...pem, documentSignerPrivateKey: pem.iacaPrivateKey })).toThrow(/does not belong/);
  });

  it('writes the IACA PEM into a trust directory', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'vw-trust-'));
    try {
      const path = await writeIacaPem(pki, join(dir, 'trust'));
      const text = await readFile(path, 'utf8');
      expect(new X509Certificate(text).rawData).toEqual(new X509Certificate(pki.iaca.der).rawData);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('test mDL', async () => {
  const credential = await getTestCredential();

  it('issuer-signed with zero failed checks against the IACA', async () => {
    const checks = await issuerChecks(credential, [credential.pki.iaca.der]);
    expect(failed(checks)).toEqual([]);
    expect(checks.some((c) => c.check.startsWith('The calculated digest for org.iso.18013.5.1/portrait'))).toBe(true);
  });

  it("holds every element of the kiosk's full profile, with realistic encodings", () => {
    const held = credential.elements.get(NS) ?? [];
    expect([...ALL_MDL_ELEMENTS].filter((e) => !held.includes(e))).toEqual([]);
    const v = values(credential);
    expect(v.get('family_name')).toBe('Doe');
    expect(readFullDate(v.get('birth_date'))).toBe('1990-04-12');
    expect(readFullDate(v.get('issue_date'))).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(readFullDate(v.get('expiry_date'))).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(readTdate(v.get('portrait_capture_date'))).toMatch(/^\d{4}-\d{2}-\d{2}T09:30:00Z$/);
    expect(v.get('issuing_country')).toBe('US');
    expect(v.get('issuing_jurisdiction')).toBe('US-CA');
    expect(v.get('sex')).toBe(2);
    expect(v.get('age_over_18')).toBe(true);
    expect(v.get('age_over_65')).toBe(false);
    expect(v.get('age_birth_year')).toBe(1990);
    expect(typeof v.get('age_in_years')).toBe('number');
    const privileges = v.get('driving_privileges') as Map<string, unknown>[];
    expect(privileges.map((p) => p.get('vehicle_category_code'))).toEqual(['B', 'A']);
    expect(privileges[0]?.get('issue_date')).toBeInstanceOf(Tag);
    expect(readFullDate(privileges[0]?.get('expiry_date'))).toBe('2033-06-01');
  });

  it('portrait and signature are real JPEGs (SOI … EOI) that jpeg-js decodes', () => {
    const v = values(credential);
    for (const [name, size] of [
      ['portrait', [120, 160]],
      ['signature_usual_mark', [160, 48]],
    ] as const) {
      const bytes = v.get(name) as Uint8Array;
      expect(bytes).toBeInstanceOf(Uint8Array);
      expect([bytes[0], bytes[1]]).toEqual([0xff, 0xd8]);
      expect([bytes[bytes.length - 2], bytes[bytes.length - 1]]).toEqual([0xff, 0xd9]);
      const image = jpeg.decode(bytes, { useTArray: true });
      expect([image.width, image.height]).toEqual(size);
    }
    // The face is skin-coloured in the middle, the background light at the corner.
    const image = jpeg.decode(v.get('portrait') as Uint8Array, { useTArray: true, formatAsRGBA: true });
    const pixel = (x: number, y: number): number[] =>
      Array.from(image.data.subarray((y * image.width + x) * 4, (y * image.width + x) * 4 + 3));
    const [r, g, b] = pixel(60, 76);
    expect(r).toBeGreaterThan(200);
    expect(g).toBeGreaterThan(150);
    expect(b).toBeLessThan(190);
    expect(pixel(2, 2).every((c) => c > 200)).toBe(true);
  });

  it('binds the device key (ES256 COSE key without alg in the MSO) and is cached per variant', async () => {
    expect(credential.deviceKey.privateKey.asymmetricKeyDetails?.namedCurve).toBe('prime256v1');
    expect(await getTestCredential()).toBe(credential);
    expect(await getTestCredential({ fresh: true })).not.toBe(credential);
  });

  it('expired: the MSO validity ended yesterday (only that check fails), expiry_date yesterday', async () => {
    const expired = await issueTestCredential({ validity: 'expired' });
    expect(expired.validity.validUntil.getTime()).toBeLessThan(Date.now());
    const checks = await issuerChecks(expired, [expired.pki.iaca.der]);
    expect(failed(checks)).toEqual(['The MSO must be valid at the time of verification']);
    expect(readFullDate(values(expired).get('expiry_date'))).toBe(expired.validity.validUntil.toISOString().slice(0, 10));
  });

  it('tampered at issuance ({element}): one element changed after signing, so only its digest fails', async () => {
    const tampered = await issueTestCredential({ tamper: {} });
    expect(tampered.tampered).toEqual({ namespace: NS, element: 'family_name' });
    expect(tampered.tamperAtAnswer).toBe(false);
    expect(values(tampered).get('family_name')).toBe('Dox');
    const checks = await issuerChecks(tampered, [tampered.pki.iaca.der]);
    expect(failed(checks)).toEqual([
      `The calculated digest for ${NS}/family_name attribute must match the digest in the issuerAuth element`,
    ]);
    const ageTampered = await issueTestCredential({ tamper: { element: 'age_over_21' } });
    expect(values(ageTampered).get('age_over_21')).toBe(false);
    await expect(issueTestCredential({ tamper: { element: 'no_such_element' } })).rejects.toThrow(/no org.iso.18013.5.1\/no_such_element/);
  });
});
