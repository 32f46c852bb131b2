/**
 * Forwards the screen's own errors to the kiosk (`reportError`), where they are logged next to the main
 * side's events and counted in the diagnostics: script errors (`window` 'error'), promise rejections
 * nobody handled ('unhandledrejection'), and components that failed to render (the error boundary).
 * Texts are cut to the contract's bounds here; the host cleans and rate-limits them again. A report that
 * cannot be delivered is dropped quietly (never reported again, or an outage would loop).
 */
import { MAX_RENDERER_ERROR_MESSAGE, MAX_RENDERER_ERROR_STACK, type RendererError } from '../../common/kiosk-api.js';

export type ErrorKind = RendererError['kind'];
export type ReportError = (error: RendererError) => void;

/** At most this many reports a minute leave the screen (a render loop must not flood the IPC channel). */
export const MAX_REPORTS_PER_MINUTE = 30;

function cut(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

function describe(value: unknown): { message: string; stack?: string } {
  if (value instanceof Error)
    return { message: `${value.name}: ${value.message}`, ...(typeof value.stack === 'string' ? { stack: value.stack } : {}) };
  if (typeof value === 'string') return { message: value };
  if (value === undefined || value === null) return { message: String(value) };
  // An object's contents could be anything (a state, a reply): only its kind is sent.
  return {
    message: `non-error value (${typeof value === 'object' ? (Object.getPrototypeOf(value) === null ? 'object' : value.constructor.name || 'object') : typeof value})`,
  };
}

/** The `reportError` arguments for an error value, within the contract's bounds. */
export function rendererError(kind: ErrorKind, value: unknown, extraStack?: string | null): RendererError {
  const { message, stack } = describe(value);
  const fullStack = [stack, extraStack ? `component stack:${extraStack}` : undefined].filter((s) => s !== undefined && s !== '').join('\n');
  return {
    kind,
    message: cut(message === '' ? '(no message)' : message, MAX_RENDERER_ERROR_MESSAGE),
    ...(fullStack === '' ? {} : { stack: cut(fullStack, MAX_RENDERER_ERROR_STACK) }),
  };
}

/** A reporter that sends through `send`, at most {@link MAX_REPORTS_PER_MINUTE} a minute, swallowing failures. */
export function createErrorReporter(send: (error: RendererError) => Promise<unknown>, now: () => number = Date.now): ReportError {
  let windowStart = Number.NEGATIVE_INFINITY;
  let sent = 0;
  return (error) => {
    const at = now();
    if (at - windowStart >= 60_000) {
      windowStart = at;
      sent = 0;
    }
    if (sent >= MAX_REPORTS_PER_MINUTE) return;
    sent++;
    try {
      void send(error).catch(() => undefined);
    } catch {
      // Not connected: nothing to do.
    }
  };
}

interface ErrorEventLike {
  readonly message?: unknown;
  readonly error?: unknown;
  readonly filename?: unknown;
  readonly lineno?: unknown;
}
interface RejectionEventLike {
  readonly reason?: unknown;
}

/** The part of `window` this needs (an EventTarget in tests). */
export type ErrorEventSource = Pick<EventTarget, 'addEventListener' | 'removeEventListener'>;

/** Forwards `window`'s 'error' and 'unhandledrejection' events; returns the undo. */
export function forwardWindowErrors(target: ErrorEventSource, report: ReportError): () => void {
  const onError = (event: Event): void => {
    const e = event as Event & ErrorEventLike;
    if (e.error !== undefined && e.error !== null) {
      report(rendererError('error', e.error));
      return;
    }
    // No error object (a cross-origin script, or an error thrown as a string): the message and where.
    const where =
      typeof e.filename === 'string' && e.filename !== '' ? ` (${e.filename}${typeof e.lineno === 'number' ? `:${e.lineno}` : ''})` : '';
    report(rendererError('error', `${typeof e.message === 'string' ? e.message : 'script error'}${where}`));
  };
  const onRejection = (event: Event): void => {
    report(rendererError('unhandledrejection', (event as Event & RejectionEventLike).reason));
  };
  target.addEventListener('error', onError);
  target.addEventListener('unhandledrejection', onRejection);
  return () => {
    target.removeEventListener('error', onError);
    target.removeEventListener('unhandledrejection', onRejection);
  };
}
