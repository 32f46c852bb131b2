/**
 * @owf/mdoc 0.6.0 decodes the MobileSecurityObject anew — CBOR and a zod pipeline — on every read of
 * `IssuerAuth.mobileSecurityObject`, and its verifier reads it twice per disclosed element (the digest
 * algorithm and the value digests in `IssuerSignedItem.isValid`) and again per check: in bench:e2e's
 * profile that was ~1 s of CPU over 300 verifications, a tenth of the simulated backend's and phone's work
 * (issue 34). The getter is replaced, once per process, by one that keeps the decoded object per payload:
 * the same `Uint8Array` (never copied by the library: `payload` is the COSE structure's own) decodes to
 * the same object, and a payload the library has not seen is decoded by the original getter, errors
 * included. Verification reads the object and never writes to it.
 */
import { IssuerAuth, type MobileSecurityObject } from '@owf/mdoc';

let installed = false;

export function memoizeMobileSecurityObject(): void {
  if (installed) return;
  installed = true;
  // Kept unbound: it is called with the IssuerAuth as `this`, as the property access would.
  const descriptor: Record<string, unknown> = { ...Object.getOwnPropertyDescriptor(IssuerAuth.prototype, 'mobileSecurityObject') };
  const original = descriptor.get;
  // A later @owf/mdoc that moved or dropped the getter keeps its own behaviour.
  if (typeof original !== 'function') return;
  const decoded = new WeakMap<Uint8Array, MobileSecurityObject>();
  Object.defineProperty(IssuerAuth.prototype, 'mobileSecurityObject', {
    configurable: true,
    get(this: IssuerAuth): MobileSecurityObject {
      const payload = this.payload;
      const known = payload ? decoded.get(payload) : undefined;
      if (known !== undefined) return known;
      const fresh = Reflect.apply(original, this, []) as MobileSecurityObject;
      if (payload) decoded.set(payload, fresh);
      return fresh;
    },
  });
}
