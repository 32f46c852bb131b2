/** Drops only the CR/LF a scanner or a paste leaves at the end; everything else is kept as typed. */
export function withoutTrailingNewline(text: string): string {
  return text.replace(/[\r\n]+$/, '');
}

/**
 * A camera decodes the same code many times a second while it stays in view: report a text once, and
 * again only after `windowMs` (so a code still held up after the host refused it is retried now and then,
 * not hammered).
 */
export class RepeatFilter {
  #last: { readonly text: string; readonly at: number } | undefined;

  constructor(readonly windowMs = 3_000) {}

  /** True when `text` seen at `now` (ms) should be reported. */
  accept(text: string, now: number): boolean {
    const last = this.#last;
    if (last !== undefined && last.text === text && now - last.at >= 0 && now - last.at < this.windowMs) return false;
    this.#last = { text, at: now };
    return true;
  }

  /** Forgets the last text (a new scanning period starts; the text is not kept longer than needed). */
  reset(): void {
    this.#last = undefined;
  }
}
