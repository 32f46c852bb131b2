/**
 * routeLibraryConsole (src/devices/ble/library-console.ts): console output whose caller is a file of noble,
 * bleno or the hci socket goes to the log; every other console call is untouched. The "libraries" here are
 * small modules written under a temporary `node_modules/@stoprocent/...` tree, so the caller check runs on
 * real file names, as it does for the installed packages.
 */
/* eslint-disable no-console -- the console is what these tests are about */
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { routeLibraryConsole, type LibraryLog } from '../../../../src/devices/ble/library-console.js';

type Chatty = (method: 'log' | 'info' | 'debug' | 'warn' | 'error', ...args: unknown[]) => void;

let root: string;
let noble: Chatty;
let bleno: Chatty;
let hciSocket: Chatty;
let other: Chatty;

/** A module at `<root>/<relative>` whose export calls console[method](...args) from its own code. */
function chattyModule(relative: string): Chatty {
  const file = path.join(root, relative);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, 'module.exports = (method, ...args) => { console[method](...args); };\n');
  return createRequire(import.meta.url)(file) as Chatty;
}

beforeAll(() => {
  root = mkdtempSync(path.join(tmpdir(), 'library-console-'));
  noble = chattyModule('node_modules/@stoprocent/noble/lib/hci-socket/bindings.js');
  bleno = chattyModule('node_modules/@stoprocent/bleno/lib/hci-socket/bindings.js');
  hciSocket = chattyModule('node_modules/@stoprocent/bluetooth-hci-socket/lib/native.js');
  other = chattyModule('node_modules/some-other-package/index.js');
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

class Sink implements LibraryLog {
  readonly records: { level: string; fields: Record<string, unknown>; message: string }[] = [];
  info(fields: object, message: string): void {
    this.records.push({ level: 'info', fields: fields as Record<string, unknown>, message });
  }
  warn(fields: object, message: string): void {
    this.records.push({ level: 'warn', fields: fields as Record<string, unknown>, message });
  }
}

const restore: (() => void)[] = [];
afterEach(() => {
  for (const undo of restore.splice(0)) undo();
});

/** Spies on the console's output methods (installed before the route, so the route's pass-through lands in them). */
function spyConsole(): Record<'log' | 'warn' | 'error', ReturnType<typeof vi.fn>> {
  const spies = { log: vi.fn(), warn: vi.fn(), error: vi.fn() };
  const saved = { log: console.log, warn: console.warn, error: console.error };
  console.log = spies.log;
  console.warn = spies.warn;
  console.error = spies.error;
  restore.push(() => Object.assign(console, saved));
  return spies;
}

describe('routeLibraryConsole', () => {
  it('takes what noble, bleno and the hci socket print (stdout and stderr) into the log, with the library named', () => {
    const printed = spyConsole();
    const sink = new Sink();
    restore.unshift(routeLibraryConsole(sink));
    noble('log', 'noble warning: adapter does not support Bluetooth Low Energy (BLE, Bluetooth Smart).');
    bleno('log', 'Bleno warning: adapter state %s', 'unauthorized');
    noble('warn', 'noble: unknown peripheral %s connected!', 'c0de00000001');
    hciSocket('error', new Error('EAFNOSUPPORT'));
    expect(printed.log).not.toHaveBeenCalled();
    expect(printed.warn).not.toHaveBeenCalled();
    expect(printed.error).not.toHaveBeenCalled();
    expect(sink.records.map((r) => [r.level, r.fields.library, r.fields.stream, r.message.split('\\u000a')[0]])).toEqual([
      ['info', 'noble', 'log', 'noble warning: adapter does not support Bluetooth Low Energy (BLE, Bluetooth Smart).'],
      ['info', 'bleno', 'log', 'Bleno warning: adapter state unauthorized'],
      ['warn', 'noble', 'warn', 'noble: unknown peripheral c0de00000001 connected!'],
      ['warn', 'bluetooth-hci-socket', 'error', 'Error: EAFNOSUPPORT'],
    ]);
    expect(sink.records.every((r) => r.fields.event === 'ble_library_output')).toBe(true);
  });

  it('leaves every other caller alone: this file, another package', () => {
    const printed = spyConsole();
    const sink = new Sink();
    restore.unshift(routeLibraryConsole(sink));
    console.log('the relay prints this');
    other('warn', 'another package warns');
    expect(printed.log).toHaveBeenCalledWith('the relay prints this');
    expect(printed.warn).toHaveBeenCalledWith('another package warns');
    expect(sink.records).toEqual([]);
  });

  it('after the last route is removed the console is the one it replaced; nested routes go to the newest sink', () => {
    const printed = spyConsole();
    const before = console.log;
    const outer = new Sink();
    const inner = new Sink();
    const unrouteOuter = routeLibraryConsole(outer);
    const unrouteInner = routeLibraryConsole(inner);
    noble('log', 'one');
    unrouteInner();
    unrouteInner(); // idempotent
    noble('log', 'two');
    unrouteOuter();
    expect(console.log).toBe(before);
    noble('log', 'three');
    expect([inner.records.map((r) => r.message), outer.records.map((r) => r.message)]).toEqual([['one'], ['two']]);
    expect(printed.log).toHaveBeenCalledWith('three');
  });

  it('any text a library prints reaches the log escaped and bounded, never the console (property)', () => {
    const printed = spyConsole();
    const sink = new Sink();
    restore.unshift(routeLibraryConsole(sink));
    fc.assert(
      fc.property(
        fc.string({ unit: 'binary', maxLength: 5_000 }),
        fc.constantFrom('log', 'warn', 'error', 'info', 'debug' as const),
        (text, method) => {
          sink.records.length = 0;
          noble(method, text);
          expect(sink.records).toHaveLength(1);
          const message = sink.records[0]?.message ?? '';
          expect(message.length).toBeLessThanOrEqual(501 + 5 * 500); // 500 characters, each at most a 6-character escape
          // eslint-disable-next-line no-control-regex -- the point: no control or bidi character survives
          expect(message).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/);
        },
      ),
      { numRuns: 200 },
    );
    expect(printed.log).not.toHaveBeenCalled();
    expect(printed.warn).not.toHaveBeenCalled();
  });
});
