/**
 * Whether a scanned `mdoc:` text can be a whole device engagement: the part after the scheme is base64url
 * (ISO/IEC 18013-5 §8.2.2.3, device engagement by QR code, writes it without padding; standard base64 and padding are tolerated) whose
 * bytes hold one complete CBOR data item. This is syntax only — what the engagement says is the backend's
 * to judge — and it is lenient on purpose (bytes after the item are not looked at): it exists to tell a
 * customer "this code could not be read" when a scanner dropped characters or a code was cut short, instead
 * of spending a session on it and showing "something went wrong on our side".
 */
/** The scheme of an engagement's QR text, in any case (URI schemes are case-insensitive, RFC 3986 §3.1). */
const SCHEME = /^mdoc:/i;
const PAYLOAD = /^[A-Za-z0-9_\-+/]+={0,2}$/;
/** Deeper than any DeviceEngagement nests (it is a map of arrays of maps); a bound, not a rule. */
const MAX_DEPTH = 16;
/** Items visited at most: a QR code holds at most 7,089 characters, so this is never reached honestly. */
const MAX_ITEMS = 20_000;

export type EngagementTextProblem = 'not_base64' | 'truncated';

function decodeBase64(payload: string): Uint8Array | undefined {
  const bare = payload.replace(/=+$/, '');
  if (bare.length % 4 === 1) return undefined;
  const standard = bare.replace(/-/g, '+').replace(/_/g, '/');
  const bytes = Buffer.from(standard, 'base64');
  // Node ignores what it cannot decode: the length says whether every character was used.
  return bytes.length === Math.floor((bare.length * 3) / 4) ? Uint8Array.from(bytes) : undefined;
}

/**
 * Skips one CBOR data item (RFC 8949 §3) starting at `at`; returns the offset after it, or undefined when
 * the bytes end first (or the item is not well formed).
 */
function skipItem(bytes: Uint8Array, at: number, depth: number, budget: { items: number }): number | undefined {
  if (depth > MAX_DEPTH || --budget.items < 0 || at >= bytes.length) return undefined;
  const initial = bytes[at] as number;
  const major = initial >> 5;
  const info = initial & 0x1f;
  let offset = at + 1;
  let argument: number;
  if (info < 24) argument = info;
  else if (info <= 27) {
    const size = 1 << (info - 24);
    if (offset + size > bytes.length) return undefined;
    argument = 0;
    for (let i = 0; i < size; i++) argument = argument * 256 + (bytes[offset + i] as number);
    offset += size;
  } else if (info === 31 && major >= 2 && major <= 5) {
    // Indefinite length: items until the 0xff break.
    for (;;) {
      if (offset >= bytes.length) return undefined;
      if (bytes[offset] === 0xff) return offset + 1;
      const next = skipItem(bytes, offset, depth + 1, budget);
      if (next === undefined) return undefined;
      offset = next;
      if (major === 5) {
        const value = skipItem(bytes, offset, depth + 1, budget);
        if (value === undefined) return undefined;
        offset = value;
      }
    }
  } else if (info === 31 && major === 7)
    return undefined; // a break outside an indefinite item
  else return undefined; // 28–30 are reserved
  switch (major) {
    case 0:
    case 1:
    case 7:
      return offset;
    case 2:
    case 3:
      return offset + argument <= bytes.length ? offset + argument : undefined;
    case 4:
    case 5: {
      const count = major === 5 ? argument * 2 : argument;
      if (count > bytes.length - offset) return undefined; // each item takes a byte at least
      for (let i = 0; i < count; i++) {
        const next = skipItem(bytes, offset, depth + 1, budget);
        if (next === undefined) return undefined;
        offset = next;
      }
      return offset;
    }
    case 6:
      return skipItem(bytes, offset, depth + 1, budget);
    default:
      return undefined;
  }
}

/**
 * The `qr.requireMdocPrefix` rule, for every place a scan is judged (the kiosk's triggers, the service's
 * `qrScanned`, the QA scan feeder): with it, a text that is not an `mdoc:` device engagement (some other
 * barcode) is not worth a session.
 */
export function failsMdocPrefixRule(text: string, requireMdocPrefix: boolean): boolean {
  return requireMdocPrefix && !SCHEME.test(text);
}

/** Why an `mdoc:` text cannot be a whole engagement, or undefined when it can (or is no `mdoc:` text). */
export function engagementTextProblem(text: string): EngagementTextProblem | undefined {
  if (!SCHEME.test(text)) return undefined;
  const payload = text.slice('mdoc:'.length);
  if (!PAYLOAD.test(payload)) return 'not_base64';
  const bytes = decodeBase64(payload);
  if (bytes === undefined) return 'not_base64';
  return skipItem(bytes, 0, 0, { items: MAX_ITEMS }) === undefined ? 'truncated' : undefined;
}
