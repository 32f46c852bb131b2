/**
 * noble-cache.ts: forgetting a peripheral keeps noble's cache bounded, and a GATT result that arrives
 * after the forgetting (an unsubscribe confirmation racing the disconnect, a stray packet) is dropped with
 * a warning instead of throwing out of the bindings' event — which in the kiosk ended the process (seen in
 * CI: `Cannot read properties of undefined` from noble's `_onNotify` after a verification over the link).
 */
import { EventEmitter } from 'node:events';
import { createRequire } from 'node:module';
import type { Noble } from '@stoprocent/noble';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { dropEventsForForgottenPeripherals, forgetPeripheral } from '../../../../src/devices/ble/noble-cache.js';

type NobleConstructor = new (bindings: EventEmitter) => Noble;
const NobleClass = createRequire(import.meta.url)('@stoprocent/noble/lib/noble') as NobleConstructor;

const ID = 'c0ffee000001';
const SERVICE = '0000fff000001000800000805f9b34fb';
const CHARACTERISTIC = '00000001a12348ce896b4c76973373e6';

/** A real noble on bare bindings that we drive by hand: one peripheral with one service and characteristic. */
function nobleWithOnePeripheral(): { noble: Noble; bindings: EventEmitter; warnings: string[] } {
  const bindings = Object.assign(new EventEmitter(), { start: (): void => undefined });
  const noble = new NobleClass(bindings);
  // Reading the state registers noble's listeners on the bindings and starts them.
  expect(noble.state).toBe('unknown');
  const warnings: string[] = [];
  // A second listener silences noble's default console.warn (it only prints when it is alone).
  noble.on('warning', (message: string) => warnings.push(message));
  bindings.emit('discover', ID, 'c0:ff:ee:00:00:01', 'random', true, { localName: undefined, serviceUuids: [] }, -40, false);
  bindings.emit('servicesDiscover', ID, [SERVICE]);
  bindings.emit('characteristicsDiscover', ID, SERVICE, [{ uuid: CHARACTERISTIC, properties: ['notify', 'writeWithoutResponse'] }]);
  return { noble, bindings, warnings };
}

describe('a GATT result for a forgotten peripheral', () => {
  it('throws out of noble without the guard (the defect this module closes)', () => {
    const { noble, bindings } = nobleWithOnePeripheral();
    forgetPeripheral(noble, ID);
    expect(() => bindings.emit('notify', ID, SERVICE, CHARACTERISTIC, false)).toThrow(TypeError);
  });

  it('is dropped with a warning that names no address once the guard is installed', () => {
    const { noble, bindings, warnings } = nobleWithOnePeripheral();
    dropEventsForForgottenPeripherals(noble);
    forgetPeripheral(noble, ID);
    expect(bindings.emit('notify', ID, SERVICE, CHARACTERISTIC, false)).toBe(false);
    expect(() => bindings.emit('read', ID, SERVICE, CHARACTERISTIC, Buffer.from([1]), true)).not.toThrow();
    expect(() => bindings.emit('valueWrite', ID, SERVICE, CHARACTERISTIC, '2902')).not.toThrow();
    expect(warnings).toHaveLength(3);
    expect(warnings[0]).toMatch(/late notify result/);
    expect(warnings.join('\n')).not.toMatch(/c0ffee|c0:ff:ee/i);
  });

  it('still reaches the characteristic while the peripheral is known', () => {
    const { noble, bindings, warnings } = nobleWithOnePeripheral();
    dropEventsForForgottenPeripherals(noble);
    dropEventsForForgottenPeripherals(noble); // installed twice: still one wrapper
    const table = Reflect.get(noble, '_characteristics') as Record<string, Record<string, Record<string, EventEmitter>>>;
    const characteristic = table[ID]?.[SERVICE]?.[CHARACTERISTIC];
    if (characteristic === undefined) throw new Error('the characteristic was not discovered');
    const seen: unknown[] = [];
    characteristic.on('notify', (state: boolean) => seen.push(state));
    characteristic.on('data', (data: Buffer) => seen.push(data.toString('hex')));
    bindings.emit('notify', ID, SERVICE, CHARACTERISTIC, true);
    bindings.emit('read', ID, SERVICE, CHARACTERISTIC, Buffer.from([0xab]), true);
    expect(seen).toEqual([true, 'ab']);
    expect(warnings).toEqual([]);
  });

  it('never throws, whatever ids a result names (fast-check)', () => {
    const { noble, bindings } = nobleWithOnePeripheral();
    dropEventsForForgottenPeripherals(noble);
    // Each event: how many ids lead its arguments, then the rest in the shape the bindings always give.
    const shapes: Record<string, [ids: number, rest: unknown[]]> = {
      includedServicesDiscover: [2, [[], undefined]],
      characteristicsDiscover: [2, [[], undefined]],
      characteristicsDiscovered: [2, [[]]],
      read: [3, [Buffer.alloc(1), true, undefined]],
      write: [3, [undefined]],
      broadcast: [3, [false]],
      notify: [3, [false, undefined]],
      descriptorsDiscover: [3, [[], undefined]],
      valueRead: [4, [Buffer.alloc(1), undefined]],
      valueWrite: [4, [undefined]],
    };
    const id = fc.oneof(fc.constantFrom(ID, SERVICE, CHARACTERISTIC, '2902'), fc.string({ maxLength: 8 }), fc.constant(undefined));
    fc.assert(
      fc.property(fc.constantFrom(...Object.keys(shapes)), fc.array(id, { minLength: 4, maxLength: 4 }), (event, ids) => {
        const [count, rest] = shapes[event] ?? [0, []];
        expect(() => bindings.emit(event, ...ids.slice(0, count), ...rest)).not.toThrow();
      }),
      // The case CI found: a service id that names a member every plain object inherits.
      {
        numRuns: 1_000,
        examples: [
          ['includedServicesDiscover', [ID, 'valueOf', ID, undefined]],
          ['read', [ID, SERVICE, 'toString', undefined]],
        ],
      },
    );
  });
});
