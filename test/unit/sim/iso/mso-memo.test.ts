/**
 * The MobileSecurityObject kept per payload (src/qa/sim/iso/mso-memo.ts): the same payload reads as the same
 * decoded object, another payload as its own, and a payload that does not decode still fails as before.
 */
import 'reflect-metadata';
import { IssuerAuth } from '@owf/mdoc';
import { describe, expect, it } from 'vitest';
import { memoizeMobileSecurityObject } from '../../../../src/qa/sim/iso/mso-memo.js';
import { getTestCredential } from '../../../../src/qa/sim/virtual-wallet/credential.js';

describe('memoizeMobileSecurityObject', async () => {
  memoizeMobileSecurityObject();
  memoizeMobileSecurityObject(); // idempotent: a second call must not wrap the wrapper
  const credential = await getTestCredential();
  const issuerAuth = credential.issuerSigned.issuerAuth;

  it('reads the same payload as the same decoded object, with the credential’s digests', () => {
    const first = issuerAuth.mobileSecurityObject;
    expect(issuerAuth.mobileSecurityObject).toBe(first);
    expect(first.digestAlgorithm).toBe('SHA-256');
    expect(first.valueDigests.valueDigests.size).toBeGreaterThan(0);
  });

  it('decodes another payload on its own, and still refuses one that is not an MSO', () => {
    const copy = IssuerAuth.decode(issuerAuth.encode());
    expect(copy.payload).not.toBe(issuerAuth.payload);
    const mso = copy.mobileSecurityObject;
    expect(mso).not.toBe(issuerAuth.mobileSecurityObject);
    expect(mso.docType).toBe(issuerAuth.mobileSecurityObject.docType);
    const broken = IssuerAuth.decode(issuerAuth.encode());
    const payload = broken.payload;
    if (!payload) throw new Error('test: no payload');
    payload.fill(0);
    expect(() => broken.mobileSecurityObject).toThrow();
  });
});
