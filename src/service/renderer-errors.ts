/**
 * Errors the screen forwards (`reportError`): a script error, an unhandled rejection, a component that
 * failed to render. They are logged as `renderer_error` so a support person finds them next to the main
 * side's events, and counted in the diagnostics. The text comes from the renderer, so it is treated as
 * untrusted: ANSI escapes and control characters are removed (no log or terminal injection), a page token
 * that slipped into a message is masked, and both texts are bounded. A screen stuck in an error loop must
 * not flood the log: at most {@link MAX_PER_WINDOW} lines a minute, then one line saying how many were
 * dropped.
 */
import type { RendererError } from '../common/kiosk-api.js';
import type { Logger } from '../platform/log.js';

export const MAX_PER_WINDOW = 10;
export const WINDOW_MS = 60_000;
const MAX_MESSAGE = 500;
const MAX_STACK = 4_000;

// CSI sequences (colours, cursor moves) and the other escape sequences a terminal would act on.
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const ANSI = /\u001B(?:\[[0-?]*[ -/]*[@-~]|\][^\u0007\u001B]*(?:\u0007|\u001B\\)|[@-Z\\-_])/g;
// C0 and C1 controls, DEL, line/paragraph separators and bidirectional overrides (which can make a log
// line read differently from what it holds); newline and tab are handled by the caller.
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u0008\u000B-\u001F\u007F-\u009F\u2028\u2029\u202A-\u202E\u2066-\u2069]/g;
/** The browser host's per-launch token travels in the page address (`#token=…`). */
const TOKEN = /(token=)[^\s&#'"]+/gi;

/** A renderer text made safe for a log line: escapes and controls removed, a token masked, bounded. */
export function cleanRendererText(text: string, max: number, options: { keepNewlines?: boolean } = {}): string {
  let out = text.replace(ANSI, '').replace(CONTROL, '').replace(TOKEN, '$1[redacted]').replace(/\t/g, ' ');
  out = options.keepNewlines ? out.replace(/\r\n?/g, '\n') : out.replace(/[\r\n]+/g, ' ');
  return out.length > max ? `${out.slice(0, max - 1)}…` : out;
}

export class RendererErrorLog {
  private windowStart = Number.NEGATIVE_INFINITY;
  private inWindow = 0;
  private dropped = 0;
  private flushTimer: NodeJS.Timeout | undefined;

  constructor(private readonly options: { log: () => Logger; count: (key: string) => void; now: () => number }) {}

  report(error: RendererError): void {
    const now = this.options.now();
    this.options.count(`renderer.${error.kind}`);
    if (now - this.windowStart >= WINDOW_MS) {
      this.flushDropped();
      this.windowStart = now;
      this.inWindow = 0;
    }
    if (this.inWindow >= MAX_PER_WINDOW) {
      this.dropped++;
      this.options.count('renderer.dropped');
      // The "dropped" line is written when the window ends, even if no further error arrives.
      if (!this.flushTimer) {
        this.flushTimer = setTimeout(() => this.flushDropped(), Math.max(0, this.windowStart + WINDOW_MS - now));
        this.flushTimer.unref();
      }
      return;
    }
    this.inWindow++;
    const fields: Record<string, unknown> = {
      event: 'renderer_error',
      kind: error.kind,
      message: cleanRendererText(error.message, MAX_MESSAGE),
    };
    if (error.stack !== undefined) fields.stack = cleanRendererText(error.stack, MAX_STACK, { keepNewlines: true });
    this.options.log().error(fields, 'the screen reported an error');
  }

  private flushDropped(): void {
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    if (this.dropped === 0) return;
    this.options
      .log()
      .warn(
        { event: 'renderer_error_dropped', count: this.dropped },
        `dropped ${this.dropped} more screen errors (at most ${MAX_PER_WINDOW} a minute are logged)`,
      );
    this.dropped = 0;
  }

  /** Writes a pending "dropped" line and stops the timer. */
  dispose(): void {
    this.flushDropped();
  }
}
