/**
 * noble and bleno talk on the console: stoprocent's hci bindings `console.log` three lines when the
 * adapter is unsupported or unauthorized (stdout), noble's default `warning` listener and its hci layer
 * `console.warn` unknown handles and odd packets (stderr). On the relay CLI stdout carries exactly one JSON
 * line per verification, and in the kiosk service nobody reads the console, so that text belongs in the log.
 *
 * The libraries call the global `console` from their own module code, so it can only be caught there. The
 * wrapper installed here is as narrow as that allows: it looks at the function that called `console.*`
 * and takes the call only when that function lives in one of the libraries' files; every other call goes
 * to the console it replaced, unchanged. It is installed by the adapter factories while their adapters
 * live (ref-counted), not for the whole process.
 */
/* eslint-disable no-console -- wrapping the console is what this module is for */
import { format } from 'node:util';
import { escapePeerText } from '../../common/peer-text.js';

/** Structured log sink (pino's Logger fits). */
export interface LibraryLog {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

type ConsoleMethod = 'log' | 'info' | 'debug' | 'warn' | 'error';
const METHODS: readonly ConsoleMethod[] = ['log', 'info', 'debug', 'warn', 'error'];

/** The packages whose console output is taken (their own files, bindings included). */
const LIBRARY_FILE = /[\\/]node_modules[\\/]@stoprocent[\\/](noble|bleno|bluetooth-hci-socket)[\\/]/;

/** A library line is short text; bounded anyway, and escaped: it may quote what a peer advertised. */
const MAX_LINE_CHARS = 500;

interface Installed {
  readonly originals: Map<ConsoleMethod, (...args: unknown[]) => void>;
  readonly wrappers: Map<ConsoleMethod, (...args: unknown[]) => void>;
}

/** Sinks in installation order; the newest one takes the output. */
const sinks: LibraryLog[] = [];
let installed: Installed | undefined;

/** The package of the function that called the console method `wrapper`, when it is one of the libraries. */
function callingLibrary(wrapper: (...args: unknown[]) => void): string | undefined {
  // A property, not a method: put back as it was (possibly undefined) afterwards.
  const saved: unknown = Reflect.get(Error, 'prepareStackTrace');
  const savedLimit = Error.stackTraceLimit;
  try {
    // V8's structured stack: no text parsing, and only the one frame that matters is collected.
    Error.stackTraceLimit = 1;
    Error.prepareStackTrace = (_error, frames) => frames;
    const holder: { stack?: unknown } = {};
    Error.captureStackTrace(holder, wrapper);
    const frames = holder.stack;
    const file = Array.isArray(frames) ? (frames[0] as NodeJS.CallSite | undefined)?.getFileName() : undefined;
    return file === undefined || file === null ? undefined : LIBRARY_FILE.exec(file)?.[1];
  } catch {
    return undefined; // never let the console fail because of the stack
  } finally {
    Reflect.set(Error, 'prepareStackTrace', saved);
    Error.stackTraceLimit = savedLimit;
  }
}

function install(): Installed {
  const originals = new Map<ConsoleMethod, (...args: unknown[]) => void>();
  const wrappers = new Map<ConsoleMethod, (...args: unknown[]) => void>();
  for (const method of METHODS) {
    // Kept unbound: the very function is put back later (it is called with `console` as `this`).
    const original = Reflect.get(console, method) as (...args: unknown[]) => void;
    const wrapper = (...args: unknown[]): void => {
      const sink = sinks.at(-1);
      const library = sink ? callingLibrary(wrapper) : undefined;
      if (!sink || library === undefined) {
        original.apply(console, args);
        return;
      }
      const fields = { event: 'ble_library_output', library, stream: method };
      const text = escapePeerText(format(...args), MAX_LINE_CHARS);
      if (method === 'warn' || method === 'error') sink.warn(fields, text);
      else sink.info(fields, text);
    };
    originals.set(method, original);
    wrappers.set(method, wrapper);
    console[method] = wrapper;
  }
  return { originals, wrappers };
}

/**
 * Sends what noble, bleno and the hci socket print to `log` until the returned function is called
 * (idempotent). Calls nest: the newest sink takes the output; the console is restored after the last one,
 * except a method someone replaced again meanwhile (a test spy), which then keeps passing calls through.
 */
export function routeLibraryConsole(log: LibraryLog): () => void {
  sinks.push(log);
  installed ??= install();
  let removed = false;
  return () => {
    if (removed) return;
    removed = true;
    const at = sinks.lastIndexOf(log);
    if (at >= 0) sinks.splice(at, 1);
    if (sinks.length > 0 || !installed) return;
    for (const method of METHODS) {
      if (console[method] === installed.wrappers.get(method))
        console[method] = installed.originals.get(method) as (typeof console)[ConsoleMethod];
    }
    installed = undefined;
  };
}
