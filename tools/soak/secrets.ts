/**
 * The secrets and personal data the soak searches everything for (issue 12 §5): the API key, every
 * session's client secret, the test holder's name and document number, and the portrait's bytes. Text is
 * searched as it is written (the kiosk's log lines) or read (the pcscd log), never kept; a hit is counted
 * with its label and source only — the matched value is never printed.
 *
 * Bytes can reach a log in several spellings, so each byte needle is searched as hex (both cases),
 * standard and URL-safe base64 at each of the three alignments a slice can have inside a longer base64
 * text, and as a decimal list (`Buffer` or `Uint8Array` serialised to JSON). Client secrets, thousands of
 * them, are looked up by window: every 32-character window of every base64url run is checked against the
 * set, so the cost does not grow with their number.
 */

export interface Hit {
  readonly label: string;
  readonly source: string;
}

/** Spellings of `bytes` as they could appear in text (see the module comment). */
export function byteSpellings(bytes: Uint8Array): string[] {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const hex = buffer.toString('hex');
  const out = new Set<string>([hex, hex.toUpperCase(), Array.from(bytes).join(',')]);
  for (let shift = 0; shift < 3; shift++) {
    const whole = Math.floor((bytes.length - shift) / 3) * 3;
    if (whole < 6) continue; // too short to be distinctive
    const slice = buffer.subarray(shift, shift + whole);
    out.add(slice.toString('base64'));
    out.add(slice.toString('base64url'));
  }
  return [...out];
}

/** A distinctive slice from the middle of `bytes` (the entropy-coded part of an image). */
export function middleSlice(bytes: Uint8Array, length = 24): Uint8Array {
  if (bytes.length <= length) return bytes;
  const start = Math.floor((bytes.length - length) / 2);
  return bytes.subarray(start, start + length);
}

const SECRET_RUN = /[A-Za-z0-9_-]{16,}/g;

export class SecretScanner {
  private readonly needles: { readonly label: string; readonly text: string }[] = [];
  /** Window-searched secrets, by length. */
  private readonly secrets = new Map<number, Set<string>>();
  private readonly hitCounts = new Map<string, number>();
  private readonly bytesBySource = new Map<string, number>();
  private secretCount = 0;

  /** A fixed string (the API key, a name) searched verbatim. */
  addText(label: string, text: string): void {
    if (text.length < 3) throw new RangeError(`needle "${label}" is too short to be meaningful`);
    this.needles.push({ label, text });
  }

  /** Bytes, searched in every spelling of `byteSpellings`. */
  addBytes(label: string, bytes: Uint8Array): void {
    for (const text of byteSpellings(bytes)) this.needles.push({ label, text });
  }

  /** A base64url token (a client secret), searched by window. */
  addSecret(secret: string): void {
    if (!/^[A-Za-z0-9_-]{16,}$/.test(secret)) {
      // Not base64url: searched verbatim instead.
      this.addText('client secret', secret);
      this.secretCount++;
      return;
    }
    let set = this.secrets.get(secret.length);
    if (!set) {
      set = new Set();
      this.secrets.set(secret.length, set);
    }
    if (!set.has(secret)) this.secretCount++;
    set.add(secret);
  }

  get secretsKnown(): number {
    return this.secretCount;
  }

  /** Searches `text`, written to or read from `source`. */
  scan(source: string, text: string): void {
    this.bytesBySource.set(source, (this.bytesBySource.get(source) ?? 0) + Buffer.byteLength(text));
    for (const needle of this.needles) {
      if (text.includes(needle.text)) this.hit(needle.label, source);
    }
    if (this.secrets.size === 0) return;
    for (const match of text.matchAll(SECRET_RUN)) {
      const run = match[0];
      for (const [length, set] of this.secrets) {
        for (let i = 0; i + length <= run.length; i++) {
          if (set.has(run.slice(i, i + length))) {
            this.hit('client secret', source);
            break;
          }
        }
      }
    }
  }

  private hit(label: string, source: string): void {
    const key = `${label} in ${source}`;
    this.hitCounts.set(key, (this.hitCounts.get(key) ?? 0) + 1);
  }

  get hits(): number {
    let total = 0;
    for (const count of this.hitCounts.values()) total += count;
    return total;
  }

  /** `label in source: count` for each kind of hit (no values). */
  get hitSummary(): string[] {
    return [...this.hitCounts].map(([key, count]) => `${key}: ${count}`);
  }

  get searchedBytes(): number {
    let total = 0;
    for (const bytes of this.bytesBySource.values()) total += bytes;
    return total;
  }

  get bytesPerSource(): ReadonlyMap<string, number> {
    return this.bytesBySource;
  }

  /** How many distinct strings are searched for (every spelling counts). */
  get needleCount(): number {
    return this.needles.length + this.secretCount;
  }

  /**
   * Proves the search can find what it looks for before the soak relies on "zero hits": each needle
   * embedded in a log-like line, each byte needle inside a longer base64 text at every alignment, and a
   * client secret inside a longer token. Leaves no counts behind. Returns the problems (empty: fine).
   */
  selfTest(probeBytes: Uint8Array, probeSecret: string): string[] {
    const problems: string[] = [];
    const probe = new SecretScanner();
    for (const needle of this.needles) probe.needles.push(needle);
    for (const needle of this.needles) {
      probe.scan('self-test', `{"level":30,"detail":"x${needle.text}y"}`);
      if (probe.hits === 0) problems.push(`needle "${needle.label}" is not found in a line that holds it`);
      probe.hitCounts.clear();
    }
    for (let prefix = 0; prefix < 3; prefix++) {
      const framed = Buffer.concat([Buffer.alloc(prefix, 7), Buffer.from(probeBytes), Buffer.alloc(2, 9)]);
      for (const encoding of ['base64', 'base64url', 'hex'] as const) {
        probe.scan('self-test', `"data":"${framed.toString(encoding)}"`);
        if (probe.hits === 0) problems.push(`bytes are not found as ${encoding} after a ${prefix}-byte prefix`);
        probe.hitCounts.clear();
      }
    }
    probe.addSecret(probeSecret);
    probe.scan('self-test', `token=AAAA${probeSecret}BBBB`);
    if (probe.hits === 0) problems.push('a client secret inside a longer token is not found');
    return problems;
  }
}
