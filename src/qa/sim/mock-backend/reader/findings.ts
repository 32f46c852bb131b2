/**
 * The `errors` and `warnings` objects of the outcome (spec §2.4, §7.4). Their internal structure is "not
 * shown" in the spec; ours: an object keyed by a stable category, each an array of human-readable
 * messages in the order found. An empty object means nothing to report.
 *
 *   { "data_integrity": ["digest mismatch for org.iso.18013.5.1/family_name (digestID 3)"],
 *     "request": ["requested element org.iso.18013.5.1/nationality was not disclosed"] }
 *
 * Categories:
 * - `session`: the ISO session ended without a DeviceResponse (SessionData status 10/11/20, State 0x02):
 *   the holder declined or the wallet failed;
 * - `document`: DeviceResponse structure, status, document errors, missing or surplus documents;
 * - `request`: disclosure versus the request (unrequested elements, requested ones not disclosed);
 * - `issuer_authentication`: issuer signature, certificate chain to a trusted IACA, DS certificate rules;
 * - `data_integrity`: value digests over the received IssuerSignedItemBytes, MSO docType, issuing country;
 * - `validity`: the MSO validity period (validFrom/validUntil) at verification time;
 * - `device_authentication`: deviceSignature or deviceMac over DeviceAuthenticationBytes.
 */

export const CATEGORIES = [
  'session',
  'document',
  'request',
  'issuer_authentication',
  'data_integrity',
  'validity',
  'device_authentication',
] as const;
export type Category = (typeof CATEGORIES)[number];

export type FindingsJson = Partial<Record<Category, string[]>>;

export class Findings {
  readonly #entries = new Map<Category, string[]>();

  add(category: Category, message: string): void {
    const list = this.#entries.get(category);
    if (list === undefined) this.#entries.set(category, [message]);
    else if (!list.includes(message)) list.push(message);
  }

  has(category: Category): boolean {
    return this.#entries.has(category);
  }

  get empty(): boolean {
    return this.#entries.size === 0;
  }

  /** Categories in the fixed order above, so equal findings serialise identically. */
  toJson(): FindingsJson {
    const out: FindingsJson = {};
    for (const category of CATEGORIES) {
      const list = this.#entries.get(category);
      if (list !== undefined) out[category] = [...list];
    }
    return out;
  }
}
