/**
 * Text that came from a peer (the backend, the phone, a reader's name) is escaped before it is printed,
 * logged or shown: a newline or an ANSI escape in a backend-supplied key could otherwise forge a whole
 * terminal or log line (e.g. a fake `[relay] result: verified`), and bidirectional overrides can make
 * text read differently from what it is (CVE-2021-42574, "Trojan Source").
 */

// C0 and C1 controls, DEL, the Unicode line/paragraph separators and the bidi embedding, override and
// isolate characters.
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/** Every unsafe character as a visible `\uXXXX`, the text cut to `max` characters (with `…`). */
export function escapePeerText(text: string, max = 200): string {
  const cut = text.length > max ? `${text.slice(0, max)}…` : text;
  return cut.replace(UNSAFE, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

const IDENTIFIER = /^[A-Za-z0-9_.:-]{1,64}$/;

/** A key of a peer's object as it may appear in a field path: plain when it is identifier-like, else quoted and escaped. */
export function peerKey(key: PropertyKey): string {
  if (typeof key === 'number') return String(key);
  const text = typeof key === 'symbol' ? key.toString() : key;
  return IDENTIFIER.test(text) ? text : `"${escapePeerText(text, 40).replace(/"/g, '\\"')}"`;
}
