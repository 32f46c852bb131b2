/**
 * "Bad input" properties: whatever the backend sends, in whatever order, at whatever point of a real flow,
 * and whatever the phone and the socket do meanwhile, the kiosk does not crash, leaves no rejection
 * unhandled, never hangs, returns to `ready` and can then complete a normal verification.
 *
 * - The bulk runs against the in-memory backend (`test/support/memory-backend.ts`) with a `Kiosk`
 *   constructed directly and tiny timeouts, so that thousands of runs finish quickly and the watchdogs
 *   fire too. A run: a valid flow of spec §3/§4 (NFC or QR, APDUs with re-taps, BLE central or peripheral,
 *   writes, notifications, reads, `complete`) is generated, then mutated (bad frames and random valid
 *   messages inserted, frames corrupted, steps dropped, duplicated, swapped or cut, device and socket
 *   chaos inserted), executed, and followed by a normal verification with relaxed timeouts.
 * - A smaller property feeds invalid frames over the real `ws` stack (fake HTTP/WS backend) and checks
 *   the close code, the error view and the return to `ready`.
 *
 * Seeds are random; fast-check prints the seed and the shrunk counterexample on failure.
 */
import { Writable } from 'node:stream';
import fc from 'fast-check';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { KioskView } from '../../src/common/kiosk-view.js';
import { QrScanQueue } from '../../src/devices/qr/qr-scan-queue.js';
import { parseConfig, type KioskConfig } from '../../src/platform/config.js';
import { Kiosk, type VerificationReport } from '../../src/kiosk/kiosk.js';
import { createLogger, type Logger } from '../../src/platform/log.js';
import type { HandshakeFailureKind, InboundFrame } from '../../src/kiosk/relay-link.js';
import type { SessionApiErrorKind } from '../../src/kiosk/session-client.js';
import type { FakeConnection } from '../support/fake-backend.js';
import {
  BleSetupError,
  FakeBleCentral,
  FakeBlePeripheral,
  FakeNfcReader,
  NfcTransmitError,
  type ApduAnswer,
} from '../support/fake-devices.js';
import { startHarness, TEST_TIMEOUTS, type Harness } from '../support/harness.js';
import { MemoryBackend, type MemoryConnection, type ResultBehaviour } from '../support/memory-backend.js';

type Json = fc.JsonValue;
type JsonObject = { [key in string]?: Json };
type Role = 'central' | 'peripheral';

// =====================================================================================================
// Process-level failures: any unhandled rejection or uncaught exception fails the run that saw it.
// =====================================================================================================

/**
 * Runs in progress; a process-level failure is charged to each of them (several properties run
 * concurrently, and a rejection does not say where it came from). After the first one, runs take
 * turns, so that shrinking replays each counterexample alone.
 */
interface RunRecord {
  readonly errors: string[];
}

const activeRuns = new Set<RunRecord>();
/** Failures seen while no run was in progress. */
const orphanErrors: string[] = [];
let exclusive = false;
let turn: Promise<void> = Promise.resolve();

function describeError(e: unknown): string {
  if (e instanceof Error) {
    const text = e.stack ?? `${e.name}: ${e.message}`;
    return e.cause === undefined ? text : `${text}\nCaused by: ${describeError(e.cause)}`;
  }
  try {
    return `non-error: ${JSON.stringify(e)}`;
  } catch {
    return 'non-error value';
  }
}

function processError(text: string): void {
  exclusive = true;
  if (activeRuns.size === 0) orphanErrors.push(text);
  for (const run of activeRuns) run.errors.push(text);
}

const onUnhandledRejection = (reason: unknown): void => {
  processError(`unhandledRejection: ${describeError(reason)}`);
};
const onUncaughtException = (error: Error): void => {
  processError(`uncaughtException: ${describeError(error)}`);
};

/** Runs `body` as one tracked run; it fails if a process-level failure happened meanwhile. */
async function trackedRun(body: (record: RunRecord) => Promise<void>): Promise<void> {
  let release: (() => void) | undefined;
  if (exclusive) {
    const previous = turn;
    turn = new Promise<void>((resolve) => (release = resolve));
    await previous;
  }
  const record: RunRecord = { errors: [] };
  activeRuns.add(record);
  try {
    await body(record);
    // Let late rejections surface before looking.
    for (let i = 0; i < 3; i++) await tick();
    if (record.errors.length > 0) throw new Error(`process-level failure during the run:\n${record.errors.join('\n')}`);
  } finally {
    activeRuns.delete(record);
    release?.();
  }
}

beforeAll(() => {
  process.on('unhandledRejection', onUnhandledRejection);
  process.on('uncaughtException', onUncaughtException);
});

afterAll(() => {
  process.off('unhandledRejection', onUnhandledRejection);
  process.off('uncaughtException', onUncaughtException);
});

// =====================================================================================================
// Small async helpers
// =====================================================================================================

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Generous bound on waits that must end by themselves; hitting it means the kiosk (or the test) hangs. */
const HANG_MS = 15_000;

class HangError extends Error {
  override readonly name = 'HangError';
}

async function bounded<T>(promise: Promise<T>, what: string, diagnostics: () => string = () => ''): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const hang = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new HangError(`hang: ${what} did not happen within ${HANG_MS} ms\n${diagnostics()}`)), HANG_MS);
  });
  try {
    return await Promise.race([promise, hang]);
  } finally {
    clearTimeout(timer);
  }
}

// =====================================================================================================
// Wire vocabulary: characteristic UUIDs, modes, messages
// =====================================================================================================

const MDL_NS = 'org.iso.18013.5.1';

/** ISO 18013-5 characteristic UUIDs: mdoc peripheral server mode (kiosk central) and mdoc reader peripheral server mode. */
const UUIDS = {
  central: {
    state: '00000001-a123-48ce-896b-4c76973373e6',
    c2s: '00000002-a123-48ce-896b-4c76973373e6',
    s2c: '00000003-a123-48ce-896b-4c76973373e6',
  },
  peripheral: {
    state: '00000005-a123-48ce-896b-4c76973373e6',
    c2s: '00000006-a123-48ce-896b-4c76973373e6',
    s2c: '00000007-a123-48ce-896b-4c76973373e6',
    ident: '00000008-a123-48ce-896b-4c76973373e6',
  },
} as const;

const ALL_CHAR_UUIDS = [...Object.values(UUIDS.central), ...Object.values(UUIDS.peripheral)];

/** How a UUID is spelled: the spec says comparisons are case-insensitive. */
interface Spelling {
  readonly style: 'lower' | 'upper' | 'mixed';
  readonly mask: number;
}

function spell(uuid: string, s: Spelling): string {
  if (s.style === 'lower') return uuid.toLowerCase();
  if (s.style === 'upper') return uuid.toUpperCase();
  let i = 0;
  return uuid.replace(/[a-f]/gi, (ch) => (((s.mask >>> (i++ % 31)) & 1) === 1 ? ch.toUpperCase() : ch.toLowerCase()));
}

function modeJson(role: Role, serviceUuid: string, s: Spelling): JsonObject {
  const u = UUIDS[role];
  const ch = (uuid: string, operations: string[], permissions: string[]): JsonObject => ({ uuid: spell(uuid, s), operations, permissions });
  const characteristics: JsonObject = {
    state: ch(u.state, ['notify', 'write_without_response'], ['writeable']),
    c2s: ch(u.c2s, ['write_without_response'], ['writeable']),
    s2c: ch(u.s2c, ['notify'], role === 'central' ? [] : ['readable']),
  };
  if (role === 'peripheral') characteristics.ident = ch(UUIDS.peripheral.ident, ['read'], ['readable']);
  return { role, service_uuid: spell(serviceUuid, s), characteristics };
}

const stepRequest = (op: string, params: JsonObject): JsonObject => ({ type: 'step_request', op, params });
const b64 = (bytes: Uint8Array | readonly number[]): string => Buffer.from(Uint8Array.from(bytes)).toString('base64');
const isCanonicalBase64 = (s: string): boolean => Buffer.from(s, 'base64').toString('base64') === s;

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

const VERIFIED_OUTCOME: JsonObject = {
  response: { [MDL_NS]: { age_over_21: true } },
  doc_types: ['org.iso.18013.5.1.mDL'],
  issuer_authentication: 'Valid',
  device_authentication: 'Valid',
  errors: {},
  warnings: {},
};

// =====================================================================================================
// Frames
// =====================================================================================================

type HugeRecipe = 'error_message' | 'apdu' | 'ble_write' | 'deep_array' | 'deep_outcome' | 'many_keys';

/** A frame from the backend. Huge ones are built when sent, so counterexamples stay readable. */
type FrameSpec =
  | { readonly f: 'text'; readonly text: string }
  | { readonly f: 'binary'; readonly size: number }
  | { readonly f: 'huge'; readonly recipe: HugeRecipe; readonly size: number };

const textFrame = (text: string): FrameSpec => ({ f: 'text', text });
const jsonFrame = (value: Json): FrameSpec => textFrame(JSON.stringify(value));

function hugeText(recipe: HugeRecipe, size: number): string {
  switch (recipe) {
    case 'error_message':
      return JSON.stringify({ type: 'error', message: 'E'.repeat(size) });
    case 'apdu':
      return JSON.stringify(stepRequest('nfc_apdu', { data: b64(Buffer.alloc(size, 0x5a)) }));
    case 'ble_write':
      return JSON.stringify(stepRequest('ble_write', { char: UUIDS.central.c2s, data: b64(Buffer.alloc(size, 0xa5)) }));
    case 'deep_array':
      return '['.repeat(size) + ']'.repeat(size);
    case 'deep_outcome': {
      const outcome = { ...VERIFIED_OUTCOME, response: { [MDL_NS]: { deep: '<deep>' } } };
      return JSON.stringify({ type: 'complete', outcome }).replace('"<deep>"', '{"a":'.repeat(size) + '1' + '}'.repeat(size));
    }
    case 'many_keys': {
      const params: JsonObject = {};
      for (let i = 0; i < size; i++) params[`k${i}`] = i;
      return JSON.stringify(stepRequest('nfc_await_card', params));
    }
  }
}

function inboundFrame(frame: FrameSpec): Exclude<InboundFrame, { kind: 'oversize' }> {
  switch (frame.f) {
    case 'text':
      return { kind: 'text', text: frame.text };
    case 'binary':
      return { kind: 'binary', size: frame.size };
    case 'huge':
      return { kind: 'text', text: hugeText(frame.recipe, frame.size) };
  }
}

// =====================================================================================================
// Arbitraries: valid backend messages (spec §4.4) and their mutations
// =====================================================================================================

const spellingArb: fc.Arbitrary<Spelling> = fc.record({ style: fc.constantFrom('lower', 'upper', 'mixed'), mask: fc.nat() });
const bytesArb = fc.uint8Array({ maxLength: 40 });

const invalidBase64Arb: fc.Arbitrary<string> = fc
  .oneof(
    fc.constantFrom(
      'AQ',
      'AQI',
      'A',
      '=',
      '====',
      'A===',
      'AR==',
      'AQJ=',
      'QUJD RA==',
      'QUJD\nRA==',
      'QU=JRA==',
      '-_8=',
      'QUJD?A==',
      ' AQ==',
      'AQ== ',
      'Zg',
      'ＡＱ==',
      'AQ==AQ==',
    ),
    fc
      .tuple(
        fc.uint8Array({ minLength: 1, maxLength: 24 }),
        fc.nat(),
        fc.constantFrom('-', '_', '.', '!', ' ', '\t', '=', '*', 'é', '\u0000'),
      )
      .map(([bytes, at, ch]) => {
        const s = b64(bytes);
        const i = at % s.length;
        return s.slice(0, i) + ch + s.slice(i + 1);
      }),
    fc.uint8Array({ minLength: 1, maxLength: 24 }).map((bytes) => b64(bytes).replace(/=+$/, '')),
  )
  .filter((s) => !isCanonicalBase64(s));

/** A base64 field of a message: mostly valid, sometimes not. */
const dataArb = fc.oneof({ weight: 9, arbitrary: bytesArb.map(b64) }, { weight: 1, arbitrary: invalidBase64Arb });

const authArb = fc.constantFrom('Valid', 'Invalid', 'Unchecked');
const issuesArb: fc.Arbitrary<Json> = fc.oneof(
  { weight: 3, arbitrary: fc.constant({}) },
  { weight: 1, arbitrary: fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 2 }) },
);
const outcomeArb: fc.Arbitrary<Json> = fc.record({
  response: fc.dictionary(
    fc.constantFrom(MDL_NS, 'org.iso.18013.5.1.aamva', 'x'),
    fc.dictionary(fc.string({ minLength: 1, maxLength: 12 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }),
    { maxKeys: 2 },
  ),
  doc_types: fc.array(fc.constantFrom('org.iso.18013.5.1.mDL', 'other'), { maxLength: 2 }),
  issuer_authentication: authArb,
  device_authentication: authArb,
  errors: issuesArb,
  warnings: issuesArb,
});

const modesArb: fc.Arbitrary<Json> = fc
  .tuple(fc.uniqueArray(fc.constantFrom<Role>('central', 'peripheral'), { minLength: 1, maxLength: 2 }), fc.uuid(), spellingArb)
  .map(([roles, service, s]) => roles.map((role) => modeJson(role, service, s)));

const anyCharArb: fc.Arbitrary<string> = fc.oneof(
  { weight: 8, arbitrary: fc.tuple(fc.constantFrom(...ALL_CHAR_UUIDS), spellingArb).map(([u, s]) => spell(u, s)) },
  { weight: 1, arbitrary: fc.uuid() },
);

/** Any message of spec §4.4 with random content. */
const validMessageArb: fc.Arbitrary<Json> = fc.oneof(
  dataArb.map((data) => stepRequest('nfc_apdu', { data })),
  fc.constant(stepRequest('nfc_await_card', {})),
  modesArb.map((modes) => stepRequest('ble_exchange', { modes })),
  fc.tuple(anyCharArb, dataArb).map(([char, data]) => stepRequest('ble_write', { char, data })),
  dataArb.map((data) => stepRequest('ble_read_response', { data })),
  outcomeArb.map((outcome) => ({ type: 'complete', outcome })),
  fc.string({ maxLength: 40 }).map((message) => ({ type: 'error', message })),
);

type Mutation =
  | { readonly m: 'drop'; readonly at: number }
  | { readonly m: 'extra'; readonly at: number; readonly key: string; readonly value: Json }
  | { readonly m: 'retype'; readonly at: number; readonly value: Json }
  | { readonly m: 'type'; readonly value: Json }
  | { readonly m: 'op'; readonly value: Json }
  | { readonly m: 'base64'; readonly at: number; readonly value: string };

type TextMutation =
  | { readonly m: 'none' }
  | { readonly m: 'truncate'; readonly cut: number }
  | { readonly m: 'wrap'; readonly prefix: string; readonly suffix: string }
  | { readonly m: 'duplicate_key' };

const typeValueArb: fc.Arbitrary<Json> = fc.oneof(
  fc.constantFrom(
    'step_result',
    'Step_Request',
    'STEP_REQUEST',
    'step_request ',
    'complete',
    'error',
    '',
    'constructor',
    '__proto__',
    'toString',
  ),
  fc.string({ maxLength: 12 }),
  fc.constantFrom(null, 0, true, [], {}),
);
const opValueArb: fc.Arbitrary<Json> = fc.oneof(
  fc.constantFrom(
    'nfc_apdu',
    'nfc_await_card',
    'ble_exchange',
    'ble_write',
    'ble_read_response',
    'engage',
    'nfc_rapdu',
    'ble_connected',
    'NFC_APDU',
    'constructor',
    '__proto__',
    'hasOwnProperty',
    'valueOf',
    '',
  ),
  fc.string({ maxLength: 12 }),
  fc.constantFrom(null, 1, false, ['nfc_apdu']),
);

const mutationArb: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ m: fc.constant('drop' as const), at: fc.nat() }),
  fc.record({
    m: fc.constant('extra' as const),
    at: fc.nat(),
    key: fc.oneof(fc.constantFrom('__proto__', 'type', 'op', 'params', 'data'), fc.string({ maxLength: 8 })),
    value: fc.jsonValue({ maxDepth: 2 }),
  }),
  fc.record({ m: fc.constant('retype' as const), at: fc.nat(), value: fc.jsonValue({ maxDepth: 1 }) }),
  fc.record({ m: fc.constant('type' as const), value: typeValueArb }),
  fc.record({ m: fc.constant('op' as const), value: opValueArb }),
  fc.record({ m: fc.constant('base64' as const), at: fc.nat(), value: invalidBase64Arb }),
);

const textMutationArb: fc.Arbitrary<TextMutation> = fc.oneof(
  { weight: 4, arbitrary: fc.constant({ m: 'none' as const }) },
  { weight: 3, arbitrary: fc.record({ m: fc.constant('truncate' as const), cut: fc.nat() }) },
  {
    weight: 1,
    arbitrary: fc.record({
      m: fc.constant('wrap' as const),
      prefix: fc.constantFrom('', ' ', '\n', '\uFEFF', '[', 'x', '{"a":'),
      suffix: fc.constantFrom('', ' \n', ']', '}', ',', 'x', '\u0000'),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ m: 'duplicate_key' as const }) },
);

interface Slot {
  readonly value: Json;
  set(value: Json): void;
  remove(): void;
}

/** Every position below the root, depth first. */
function slotsOf(root: Json): Slot[] {
  const out: Slot[] = [];
  const visit = (value: Json): void => {
    if (Array.isArray(value)) {
      value.forEach((item, i) => {
        out.push({ value: item, set: (v) => (value[i] = v), remove: () => value.splice(i, 1) });
        visit(item);
      });
    } else if (value !== null && typeof value === 'object') {
      for (const key of Object.keys(value)) {
        const item = value[key] as Json;
        out.push({
          value: item,
          set: (v) => (value[key] = v),
          remove: () => {
            // eslint-disable-next-line @typescript-eslint/no-dynamic-delete -- the point is to drop any field
            delete value[key];
          },
        });
        visit(item);
      }
    }
  };
  visit(root);
  return out;
}

function objectsOf(root: Json): JsonObject[] {
  const out: JsonObject[] = [];
  const visit = (value: Json | undefined): void => {
    if (Array.isArray(value)) value.forEach(visit);
    else if (value !== null && typeof value === 'object') {
      out.push(value);
      Object.values(value).forEach(visit);
    }
  };
  visit(root);
  return out;
}

function mutateJson(message: Json, mutations: readonly Mutation[]): Json {
  const root = structuredClone(message);
  for (const mutation of mutations) {
    const slots = slotsOf(root);
    switch (mutation.m) {
      case 'drop':
        if (slots.length > 0) slots[mutation.at % slots.length]?.remove();
        break;
      case 'extra': {
        const objects = objectsOf(root);
        const target = objects[mutation.at % Math.max(1, objects.length)];
        if (target)
          Object.defineProperty(target, mutation.key, { value: mutation.value, enumerable: true, writable: true, configurable: true });
        break;
      }
      case 'retype':
        if (slots.length > 0) slots[mutation.at % slots.length]?.set(mutation.value);
        break;
      case 'type':
      case 'op':
        if (root !== null && typeof root === 'object' && !Array.isArray(root)) root[mutation.m] = mutation.value;
        break;
      case 'base64': {
        const strings = slots.filter((s) => typeof s.value === 'string');
        if (strings.length > 0) strings[mutation.at % strings.length]?.set(mutation.value);
        break;
      }
    }
  }
  return root;
}

function mutateText(text: string, mutation: TextMutation): string {
  switch (mutation.m) {
    case 'none':
      return text;
    case 'truncate':
      return text.slice(0, mutation.cut % Math.max(1, text.length));
    case 'wrap':
      return mutation.prefix + text + mutation.suffix;
    case 'duplicate_key':
      return text.replace(/^\{/, '{"type":"error","message":"duplicate key",');
  }
}

const mutatedMessageArb: fc.Arbitrary<FrameSpec> = fc
  .tuple(validMessageArb, fc.array(mutationArb, { minLength: 1, maxLength: 3 }), textMutationArb)
  .map(([message, mutations, text]) => textFrame(mutateText(JSON.stringify(mutateJson(message, mutations)), text)));

const hugeArb: fc.Arbitrary<FrameSpec> = fc.oneof(
  fc.record({
    f: fc.constant('huge' as const),
    recipe: fc.constant<HugeRecipe>('error_message'),
    size: fc.integer({ min: 10_000, max: 300_000 }),
  }),
  fc.record({
    f: fc.constant('huge' as const),
    recipe: fc.constantFrom<HugeRecipe>('apdu', 'ble_write'),
    size: fc.integer({ min: 10_000, max: 200_000 }),
  }),
  fc.record({
    f: fc.constant('huge' as const),
    recipe: fc.constantFrom<HugeRecipe>('deep_array', 'deep_outcome'),
    size: fc.integer({ min: 100, max: 3_000 }),
  }),
  fc.record({ f: fc.constant('huge' as const), recipe: fc.constant<HugeRecipe>('many_keys'), size: fc.integer({ min: 100, max: 20_000 }) }),
);

/** A frame that is wrong in some way (or, rarely, accidentally right). */
const badFrameArb: fc.Arbitrary<FrameSpec> = fc.oneof(
  { weight: 10, arbitrary: mutatedMessageArb },
  { weight: 2, arbitrary: fc.nat({ max: 70_000 }).map((size): FrameSpec => ({ f: 'binary', size })) },
  { weight: 2, arbitrary: fc.string({ maxLength: 64, unit: 'grapheme' }).map(textFrame) },
  {
    weight: 2,
    arbitrary: fc
      .oneof(fc.jsonValue({ maxDepth: 2 }), fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }))
      .map(jsonFrame),
  },
  { weight: 1, arbitrary: hugeArb },
);

const anyFrameArb: fc.Arbitrary<FrameSpec> = fc.oneof(
  { weight: 3, arbitrary: validMessageArb.map(jsonFrame) },
  { weight: 5, arbitrary: badFrameArb },
);

// =====================================================================================================
// Steps: what the backend, the phone and the staff do, in order
// =====================================================================================================

/** What the phone on the reader answers to the next APDU. */
type CardAnswer =
  | { readonly a: 'ok'; readonly data: Uint8Array }
  | { readonly a: 'error'; readonly reason: string }
  | { readonly a: 'short'; readonly data: Uint8Array }
  | { readonly a: 'slow'; readonly ms: number; readonly then: 'ok' | 'Timeout' }
  | { readonly a: 'throw' }
  | { readonly a: 'mute' };

type CentralMode = 'normal' | 'fail' | 'hang' | 'delay' | 'write_throws' | 'write_slow';
type PeripheralMode = 'normal' | 'fail' | 'needs_subscription' | 'notify_throws' | 'notify_slow';
type GattEvent = 'connect' | 'subscribe' | 'write' | 'read' | 'disconnect';

type Step =
  | { readonly t: 'send'; readonly frame: FrameSpec }
  | { readonly t: 'burst'; readonly frames: readonly FrameSpec[] }
  /** Wait (a bounded number of event-loop turns) for the kiosk's next message on the current socket. */
  | { readonly t: 'await' }
  | { readonly t: 'ticks'; readonly n: number }
  | { readonly t: 'sleep'; readonly ms: number }
  | { readonly t: 'close'; readonly code: number }
  | { readonly t: 'drop' }
  | { readonly t: 'tap' }
  | { readonly t: 'lift' }
  | { readonly t: 'scan'; readonly text: string }
  | { readonly t: 'card'; readonly answers: readonly CardAnswer[] }
  | { readonly t: 'notify'; readonly char: string; readonly data: Uint8Array }
  | { readonly t: 'central_drop' }
  | { readonly t: 'central_mode'; readonly mode: CentralMode }
  | { readonly t: 'gatt'; readonly event: GattEvent; readonly char: string; readonly data: Uint8Array }
  /** Wait (a bounded number of event-loop turns) until the kiosk advertises its GATT service. */
  | { readonly t: 'advertised' }
  /** Wait until every frame sent so far reached the kiosk. */
  | { readonly t: 'flush' }
  | { readonly t: 'peripheral_mode'; readonly mode: PeripheralMode }
  | { readonly t: 'usable'; readonly device: Role; readonly usable: boolean }
  | { readonly t: 'kiosk'; readonly action: 'cancel' | 'dismiss' | 'retry' }
  | { readonly t: 'profile'; readonly name: string }
  | { readonly t: 'handshake_fails'; readonly kinds: readonly HandshakeFailureKind[] }
  /** What the backend sends the moment the next socket opens. */
  | { readonly t: 'greet'; readonly frames: readonly FrameSpec[] | 'close' }
  | { readonly t: 'create_fails'; readonly kinds: readonly SessionApiErrorKind[] };

const RECOVERABLE = ['RemovedCard', 'ResetCard', 'UnpoweredCard', 'UnresponsiveCard', 'NotTransacted', 'CommError'] as const;

const cardAnswerArb: fc.Arbitrary<CardAnswer> = fc.oneof(
  { weight: 80, arbitrary: fc.record({ a: fc.constant('ok' as const), data: bytesArb }) },
  {
    weight: 80,
    arbitrary: fc.record({
      a: fc.constant('error' as const),
      reason: fc.oneof(
        fc.constantFrom(...RECOVERABLE, 'InvalidHandle', 'Timeout', 'NoSmartcard'),
        fc.string({ minLength: 1, maxLength: 16 }),
      ),
    }),
  },
  { weight: 20, arbitrary: fc.record({ a: fc.constant('short' as const), data: fc.uint8Array({ maxLength: 1 }) }) },
  {
    weight: 40,
    arbitrary: fc.record({
      a: fc.constant('slow' as const),
      ms: fc.integer({ min: 0, max: 5 }),
      then: fc.constantFrom('ok' as const, 'Timeout' as const),
    }),
  },
  { weight: 20, arbitrary: fc.constant({ a: 'throw' as const }) },
  // A card (adapter) that ignores its own timeout: the kiosk's guard fires after apduMs + 500 ms, so keep it rare.
  { weight: 1, arbitrary: fc.constant({ a: 'mute' as const }) },
);

const qrTextArb: fc.Arbitrary<string> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc
      .base64String({ minLength: 4, maxLength: 40 })
      .map((s) => `mdoc:${s.replaceAll('+', '-').replaceAll('/', '_').replaceAll('=', '')}`),
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 20 }) },
  { weight: 1, arbitrary: fc.constantFrom('MDOC:owBjMS4w\r\n', 'mdoc:\n', 'https://example.invalid/not-an-engagement', '\r\n') },
);

const closeCodeArb = fc.constantFrom(1000, 1001, 1002, 1003, 1007, 1008, 1009, 1011, 3000, 4000, 4008, 4999);
const charForChaosArb = fc.oneof({ weight: 6, arbitrary: fc.constantFrom(...ALL_CHAR_UUIDS) }, { weight: 1, arbitrary: fc.uuid() });

/** A step inserted at a random point of a flow. */
const chaosStepArb: fc.Arbitrary<Step> = fc.oneof(
  { weight: 16, arbitrary: anyFrameArb.map((frame): Step => ({ t: 'send', frame })) },
  { weight: 4, arbitrary: fc.array(anyFrameArb, { minLength: 2, maxLength: 4 }).map((frames): Step => ({ t: 'burst', frames })) },
  { weight: 4, arbitrary: fc.constant<Step>({ t: 'await' }) },
  { weight: 4, arbitrary: fc.integer({ min: 1, max: 30 }).map((n): Step => ({ t: 'ticks', n })) },
  { weight: 2, arbitrary: fc.integer({ min: 0, max: 4 }).map((ms): Step => ({ t: 'sleep', ms })) },
  { weight: 2, arbitrary: closeCodeArb.map((code): Step => ({ t: 'close', code })) },
  { weight: 2, arbitrary: fc.constant<Step>({ t: 'drop' }) },
  { weight: 2, arbitrary: fc.constant<Step>({ t: 'tap' }) },
  { weight: 2, arbitrary: fc.constant<Step>({ t: 'lift' }) },
  { weight: 2, arbitrary: qrTextArb.map((text): Step => ({ t: 'scan', text })) },
  { weight: 4, arbitrary: fc.array(cardAnswerArb, { minLength: 1, maxLength: 3 }).map((answers): Step => ({ t: 'card', answers })) },
  { weight: 4, arbitrary: fc.tuple(charForChaosArb, bytesArb).map(([char, data]): Step => ({ t: 'notify', char, data })) },
  { weight: 2, arbitrary: fc.constant<Step>({ t: 'central_drop' }) },
  {
    weight: 2,
    arbitrary: fc
      .constantFrom<CentralMode>('normal', 'fail', 'hang', 'delay', 'write_throws', 'write_slow')
      .map((mode): Step => ({ t: 'central_mode', mode })),
  },
  {
    weight: 6,
    arbitrary: fc
      .tuple(fc.constantFrom<GattEvent>('connect', 'subscribe', 'write', 'read', 'disconnect'), charForChaosArb, bytesArb)
      .map(([event, char, data]): Step => ({ t: 'gatt', event, char, data })),
  },
  {
    weight: 2,
    arbitrary: fc
      .constantFrom<PeripheralMode>('normal', 'fail', 'needs_subscription', 'notify_throws', 'notify_slow')
      .map((mode): Step => ({ t: 'peripheral_mode', mode })),
  },
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.constantFrom<Role>('central', 'peripheral'), fc.boolean())
      .map(([device, usable]): Step => ({ t: 'usable', device, usable })),
  },
  {
    weight: 2,
    arbitrary: fc.constantFrom('cancel' as const, 'dismiss' as const, 'retry' as const).map((action): Step => ({ t: 'kiosk', action })),
  },
  { weight: 1, arbitrary: fc.constantFrom('age_over_18', 'age_over_21', 'identity').map((name): Step => ({ t: 'profile', name })) },
  {
    weight: 1,
    arbitrary: fc
      .oneof(fc.array(anyFrameArb, { minLength: 1, maxLength: 2 }), fc.constant('close' as const))
      .map((frames): Step => ({ t: 'greet', frames })),
  },
  {
    weight: 1,
    arbitrary: fc
      .array(fc.constantFrom<HandshakeFailureKind>('session_gone', 'conflict', 'network', 'timeout', 'http'), {
        minLength: 1,
        maxLength: 3,
      })
      .map((kinds): Step => ({ t: 'handshake_fails', kinds })),
  },
  {
    weight: 1,
    arbitrary: fc
      .array(fc.constantFrom<SessionApiErrorKind>('server', 'network', 'timeout', 'rate_limited', 'bad_response'), {
        minLength: 1,
        maxLength: 2,
      })
      .map((kinds): Step => ({ t: 'create_fails', kinds })),
  },
);

// =====================================================================================================
// A valid flow (spec §3, §4.3–4.5) as steps
// =====================================================================================================

type TransferItem =
  | { readonly k: 'write'; readonly toState: boolean; readonly spelling: Spelling; readonly data: Uint8Array }
  | { readonly k: 'phone'; readonly toState: boolean; readonly data: Uint8Array }
  | { readonly k: 'read'; readonly data: Uint8Array };

interface FlowPlan {
  readonly transport: 'nfc' | 'qr';
  readonly qrText: string;
  readonly apdus: readonly { readonly command: Uint8Array; readonly response: Uint8Array; readonly retap: string | null }[];
  /** Modes of `ble_exchange` in preference order; the first one is used. */
  readonly roles: readonly Role[];
  readonly serviceUuid: string;
  readonly spelling: Spelling;
  readonly transfer: readonly TransferItem[];
  readonly outcome: Json;
}

const transferItemArb: fc.Arbitrary<TransferItem> = fc.oneof(
  fc.record({
    k: fc.constant('write' as const),
    toState: fc.boolean(),
    spelling: spellingArb,
    data: fc.uint8Array({ minLength: 1, maxLength: 40 }),
  }),
  fc.record({ k: fc.constant('phone' as const), toState: fc.boolean(), data: fc.uint8Array({ minLength: 1, maxLength: 40 }) }),
  fc.record({ k: fc.constant('read' as const), data: bytesArb }),
);

const flowPlanArb: fc.Arbitrary<FlowPlan> = fc.record({
  transport: fc.constantFrom('nfc' as const, 'qr' as const),
  qrText: fc.base64String({ minLength: 4, maxLength: 32 }).map((s) => `mdoc:${s}`),
  apdus: fc.array(
    fc.record({
      command: fc.uint8Array({ minLength: 4, maxLength: 32 }),
      response: bytesArb,
      retap: fc.option(fc.constantFrom(...RECOVERABLE), { freq: 5, nil: null }),
    }),
    { maxLength: 4 },
  ),
  roles: fc.uniqueArray(fc.constantFrom<Role>('central', 'peripheral'), { minLength: 1, maxLength: 2 }),
  serviceUuid: fc.uuid(),
  spelling: spellingArb,
  transfer: fc.array(transferItemArb, { maxLength: 6 }),
  outcome: fc.oneof({ weight: 3, arbitrary: fc.constant<Json>(VERIFIED_OUTCOME) }, { weight: 1, arbitrary: outcomeArb }),
});

const EMPTY = new Uint8Array(0);

/** The steps of a flow, and the ops the kiosk sends during it (after `engage`). */
function buildFlow(plan: FlowPlan): { steps: Step[]; ops: string[] } {
  const steps: Step[] = [];
  const ops: string[] = [];
  const role = plan.roles[0] ?? 'central';
  if (plan.transport === 'nfc') {
    const answers: CardAnswer[] = [];
    for (const apdu of plan.apdus) {
      if (apdu.retap) answers.push({ a: 'error', reason: apdu.retap });
      answers.push({ a: 'ok', data: apdu.response });
    }
    steps.push({ t: 'card', answers }, { t: 'tap' }, { t: 'await' });
    ops.push('nfc_card_present');
    for (const apdu of plan.apdus) {
      const send: Step = { t: 'send', frame: jsonFrame(stepRequest('nfc_apdu', { data: b64(apdu.command) })) };
      steps.push(send, { t: 'await' });
      ops.push('nfc_rapdu');
      if (apdu.retap) {
        steps.push({ t: 'send', frame: jsonFrame(stepRequest('nfc_await_card', {})) }, { t: 'lift' }, { t: 'tap' }, { t: 'await' }, send, {
          t: 'await',
        });
        ops.push('nfc_card_present', 'nfc_rapdu');
      }
    }
  } else {
    steps.push({ t: 'scan', text: plan.qrText }, { t: 'await' });
    ops.push('qr_scanned');
  }
  steps.push({
    t: 'send',
    frame: jsonFrame(stepRequest('ble_exchange', { modes: plan.roles.map((r) => modeJson(r, plan.serviceUuid, plan.spelling)) })),
  });
  const u = UUIDS[role];
  if (role === 'peripheral') steps.push({ t: 'advertised' }, { t: 'gatt', event: 'subscribe', char: UUIDS.peripheral.s2c, data: EMPTY });
  steps.push({ t: 'await' });
  ops.push('ble_connected');
  const bleWrite = (char: string, data: string): Step => ({ t: 'send', frame: jsonFrame(stepRequest('ble_write', { char, data })) });
  for (const item of plan.transfer) {
    switch (item.k) {
      case 'write': {
        const char = item.toState ? u.state : role === 'central' ? u.c2s : u.s2c;
        steps.push(bleWrite(spell(char, item.spelling), b64(item.data)));
        break;
      }
      case 'phone': {
        const char = item.toState ? u.state : role === 'central' ? u.s2c : u.c2s;
        steps.push(role === 'central' ? { t: 'notify', char, data: item.data } : { t: 'gatt', event: 'write', char, data: item.data }, {
          t: 'await',
        });
        ops.push(role === 'central' ? 'ble_notified' : 'ble_written');
        break;
      }
      case 'read':
        if (role === 'peripheral') {
          // The backend answers a read at once and sends nothing in between (spec §4.5): its earlier
          // frames must not cross the ble_read_request.
          steps.push(
            { t: 'flush' },
            { t: 'gatt', event: 'read', char: UUIDS.peripheral.ident, data: EMPTY },
            { t: 'await' },
            { t: 'send', frame: jsonFrame(stepRequest('ble_read_response', { data: b64(item.data) })) },
          );
          ops.push('ble_read_request');
        }
        break;
    }
  }
  steps.push(bleWrite(u.state, b64([0x02])), { t: 'send', frame: jsonFrame({ type: 'complete', outcome: plan.outcome }) }, { t: 'await' });
  return { steps, ops };
}

// =====================================================================================================
// Chaos: mutations of a flow's steps
// =====================================================================================================

type Chaos =
  | { readonly c: 'insert'; readonly at: number; readonly steps: readonly Step[] }
  | { readonly c: 'corrupt'; readonly at: number; readonly mutations: readonly Mutation[]; readonly text: TextMutation }
  | { readonly c: 'delete'; readonly at: number }
  | { readonly c: 'duplicate'; readonly at: number }
  | { readonly c: 'swap'; readonly at: number }
  | { readonly c: 'cut'; readonly at: number };

const chaosArb: fc.Arbitrary<Chaos> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      c: fc.constant('insert' as const),
      at: fc.nat(),
      steps: fc.array(chaosStepArb, { minLength: 1, maxLength: 3 }),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      c: fc.constant('corrupt' as const),
      at: fc.nat(),
      mutations: fc.array(mutationArb, { maxLength: 2 }),
      text: textMutationArb,
    }),
  },
  { weight: 2, arbitrary: fc.record({ c: fc.constant('delete' as const), at: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ c: fc.constant('duplicate' as const), at: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ c: fc.constant('swap' as const), at: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ c: fc.constant('cut' as const), at: fc.nat() }) },
);

function applyChaos(flow: readonly Step[], chaos: readonly Chaos[]): Step[] {
  const steps = [...flow];
  for (const change of chaos) {
    const n = steps.length;
    switch (change.c) {
      case 'insert':
        steps.splice(change.at % (n + 1), 0, ...change.steps);
        break;
      case 'corrupt': {
        // The first text frame sent at or after the position (wrapping round).
        for (let k = 0; k < n; k++) {
          const i = (change.at + k) % n;
          const step = steps[i];
          if (step?.t !== 'send' || step.frame.f !== 'text' || !isJson(step.frame.text)) continue;
          const json = JSON.parse(step.frame.text) as Json;
          steps[i] = { t: 'send', frame: textFrame(mutateText(JSON.stringify(mutateJson(json, change.mutations)), change.text)) };
          break;
        }
        break;
      }
      case 'delete':
        if (n > 0) steps.splice(change.at % n, 1);
        break;
      case 'duplicate': {
        const step = steps[change.at % Math.max(1, n)];
        if (step) steps.splice(change.at % n, 0, step);
        break;
      }
      case 'swap': {
        if (n < 2) break;
        const i = change.at % (n - 1);
        const [a, b] = [steps[i], steps[i + 1]];
        if (a && b) {
          steps[i] = b;
          steps[i + 1] = a;
        }
        break;
      }
      case 'cut':
        steps.length = change.at % (n + 1);
        break;
    }
  }
  return steps;
}

// =====================================================================================================
// The world of one run: a Kiosk on the in-memory backend with fake devices
// =====================================================================================================

/** Captures the kiosk's log lines of the current run; error- and fatal-level lines are failures. */
class LogSink extends Writable {
  lines: string[] = [];
  starts = 0;
  bad: string[] = [];

  reset(): void {
    this.lines = [];
    this.starts = 0;
    this.bad = [];
  }

  override _write(chunk: Buffer | string, _encoding: BufferEncoding, callback: () => void): void {
    for (const line of chunk.toString().split('\n')) {
      if (line === '') continue;
      this.lines.push(line);
      if (line.includes('"event":"verification_start"')) this.starts++;
      if (/"level":(?:50|60)\b/.test(line)) this.bad.push(line);
    }
    callback();
  }
}

/** A log destination and its logger; one per concurrent lane, reset for each run. */
interface LogLane {
  readonly sink: LogSink;
  readonly log: Logger;
}

function logLane(): LogLane {
  const sink = new LogSink();
  return { sink, log: createLogger({ level: 'debug' }, sink) };
}

type TinyTimeouts = Pick<
  KioskConfig['timeouts'],
  | 'backendReplyMs'
  | 'apduMs'
  | 'awaitCardMs'
  | 'bleSetupMs'
  | 'bleIdleMs'
  | 'bleWriteMs'
  | 'bleReadResponseMs'
  | 'bleLinkLossGraceMs'
  | 'completionFlushMs'
  | 'verificationMs'
  | 'socketCloseMs'
  | 'armWaitMs'
  | 'recoverResultMs'
  | 'resultDisplayMs'
  | 'errorDisplayMs'
  | 'removePhoneMs'
>;

const ms = (min: number, max: number): fc.Arbitrary<number> => fc.integer({ min, max });

/** Tiny watchdogs, so that the timeout paths run too; the config schema's consistency rules still hold. */
const tinyTimeoutsArb: fc.Arbitrary<TinyTimeouts> = fc.record({
  backendReplyMs: ms(1, 6),
  apduMs: ms(1, 5),
  awaitCardMs: ms(1, 6),
  bleSetupMs: ms(1, 6),
  bleIdleMs: ms(1, 8),
  bleWriteMs: ms(1, 4),
  bleReadResponseMs: ms(1, 4),
  bleLinkLossGraceMs: ms(1, 4),
  completionFlushMs: ms(1, 4),
  verificationMs: ms(3, 15),
  socketCloseMs: ms(1, 4),
  armWaitMs: ms(1, 10),
  recoverResultMs: ms(1, 5),
  resultDisplayMs: ms(1, 3),
  errorDisplayMs: ms(1, 3),
  removePhoneMs: ms(1, 4),
});

/** Timeouts for a normal verification: long enough that a loaded machine cannot trip them by accident. */
const RELAXED_TIMEOUTS: TinyTimeouts = {
  ...TEST_TIMEOUTS,
  verificationMs: 10_000,
  resultDisplayMs: 1,
  errorDisplayMs: 1,
  removePhoneMs: 1,
};

const SESSION_CONFIG = { conflictRetries: 2, conflictBackoffMs: 1, offlineBackoffMinMs: 1, offlineBackoffMaxMs: 8 };

interface World {
  readonly backend: MemoryBackend;
  readonly kiosk: Kiosk;
  readonly config: KioskConfig;
  readonly nfc: FakeNfcReader;
  readonly qr: QrScanQueue;
  readonly central: FakeBleCentral;
  readonly peripheral: FakeBlePeripheral;
  /** Answers for the next APDUs of whatever phone is tapped; empty means 90 00. */
  readonly cardPlan: CardAnswer[];
  readonly views: KioskView[];
  readonly reports: VerificationReport[];
  readonly listeners: Set<() => void>;
  readonly droppedLinks: WeakSet<object>;
  readonly sink: LogSink;
}

function createWorld(timeouts: TinyTimeouts, lane: LogLane): World {
  lane.sink.reset();
  const config = parseConfig({ timeouts: { ...timeouts }, session: SESSION_CONFIG });
  const backend = new MemoryBackend({ conflicts: true });
  const nfc = new FakeNfcReader();
  const qr = new QrScanQueue({ freshMs: config.qr.scanFreshMs });
  const central = new FakeBleCentral();
  const peripheral = new FakeBlePeripheral();
  const kiosk = new Kiosk({
    config,
    devices: { nfc, qr, bleCentral: central, blePeripheral: peripheral },
    sessions: backend,
    connector: backend,
    log: lane.log,
  });
  const world: World = {
    backend,
    kiosk,
    config,
    nfc,
    qr,
    central,
    peripheral,
    cardPlan: [],
    views: [],
    reports: [],
    listeners: new Set(),
    droppedLinks: new WeakSet(),
    sink: lane.sink,
  };
  const changed = (): void => {
    for (const listener of [...world.listeners]) listener();
  };
  kiosk.onView((view) => {
    world.views.push(view);
    changed();
  });
  kiosk.onVerification((report) => {
    world.reports.push(report);
    changed();
  });
  return world;
}

/** Resolves once `probe` gives a value, re-checked on every view and report. */
function whenWorld<T>(w: World, probe: () => T | undefined): Promise<T> {
  const now = probe();
  if (now !== undefined) return Promise.resolve(now);
  return new Promise((resolve) => {
    const check = (): void => {
      const value = probe();
      if (value === undefined) return;
      w.listeners.delete(check);
      resolve(value);
    };
    w.listeners.add(check);
  });
}

const isSettled = (w: World): true | undefined =>
  w.kiosk.currentView.phase === 'ready' && w.sink.starts === w.reports.length ? true : undefined;

/** Idle, armed and every verification reported, and still so a few event-loop turns later. */
async function settle(w: World): Promise<void> {
  for (;;) {
    await whenWorld(w, () => isSettled(w));
    await tick();
    await tick();
    if (isSettled(w)) return;
  }
}

function diagnostics(w: World): string {
  const views = w.views.slice(-8).map((v) => `${v.phase}${v.error ? `(${v.error.code}: ${v.error.detail})` : ''}`);
  const conns = w.backend.connections.map(
    (c) => `#${c.index}:${c.isClosed ? `closed ${c.closeInfo?.code ?? '?'}` : 'open'}[${c.received.map((f) => f.op ?? '?').join(',')}]`,
  );
  return [
    `views: ${views.join(' → ')}`,
    `reports: ${w.reports.map((r) => r.result).join(', ')}`,
    `connections: ${conns.join(' ')}`,
    `log tail:\n${w.sink.lines.slice(-25).join('\n')}`,
  ].join('\n');
}

function answerApdu(w: World): ApduAnswer | Promise<ApduAnswer> {
  const answer = w.cardPlan.shift();
  const ok = (data: Uint8Array): Uint8Array => Uint8Array.from([...data, 0x90, 0x00]);
  if (!answer) return Uint8Array.from([0x90, 0x00]);
  switch (answer.a) {
    case 'ok':
      return ok(answer.data);
    case 'error':
      return new NfcTransmitError(answer.reason);
    case 'short':
      return answer.data;
    case 'slow':
      return sleep(answer.ms).then(() => (answer.then === 'ok' ? ok(EMPTY) : new NfcTransmitError('Timeout')));
    case 'throw':
      throw new Error('reader fault');
    case 'mute':
      return 'mute';
  }
}

function centralBehaviour(mode: CentralMode): FakeBleCentral['behaviour'] {
  switch (mode) {
    case 'normal':
      return {};
    case 'fail':
      return { failWith: new BleSetupError('peripheral not found') };
    case 'hang':
      return { hang: true };
    case 'delay':
      return { delayMs: 2 };
    case 'write_throws':
      return {
        onWrite: () => {
          throw new Error('GATT write failed');
        },
      };
    case 'write_slow':
      return { onWrite: () => sleep(2) };
  }
}

function peripheralBehaviour(mode: PeripheralMode): FakeBlePeripheral['behaviour'] {
  switch (mode) {
    case 'normal':
      return {};
    case 'fail':
      return { failWith: new BleSetupError('advertising failed') };
    case 'needs_subscription':
      return { notifyNeedsSubscription: true };
    case 'notify_throws':
      return {
        onNotify: () => {
          throw new Error('notification failed');
        },
      };
    case 'notify_slow':
      return { onNotify: () => sleep(2) };
  }
}

/** Event-loop turns an `await` step waits for the kiosk's next message before moving on regardless. */
const AWAIT_TURNS = 40;

async function awaitKiosk(conn: MemoryConnection | undefined): Promise<void> {
  if (!conn) return;
  for (let i = 0; i < AWAIT_TURNS; i++) {
    if (conn.unread > 0) {
      await conn.next();
      return;
    }
    if (conn.isClosed) return;
    await tick();
  }
}

async function drainUnread(conn: MemoryConnection | undefined): Promise<void> {
  while (conn && conn.unread > 0) await conn.next();
}

function sendFrame(conn: MemoryConnection, frame: FrameSpec): void {
  const inbound = inboundFrame(frame);
  if (inbound.kind === 'binary') conn.sendBinary(inbound.size);
  else conn.sendText(inbound.text);
}

async function execute(w: World, step: Step): Promise<void> {
  const conn = w.backend.latest;
  switch (step.t) {
    case 'send':
      if (conn) sendFrame(conn, step.frame);
      return;
    case 'burst':
      conn?.sendBurst(step.frames.map(inboundFrame));
      return;
    case 'await':
      await awaitKiosk(conn);
      return;
    case 'ticks':
      for (let i = 0; i < step.n; i++) await tick();
      return;
    case 'sleep':
      await sleep(step.ms);
      return;
    case 'close':
      conn?.close(step.code, 'backend closes');
      return;
    case 'drop':
      conn?.drop();
      return;
    case 'tap':
      w.nfc.tap(() => answerApdu(w));
      return;
    case 'lift':
      w.nfc.lift();
      return;
    case 'scan':
      w.qr.push(step.text);
      return;
    case 'card':
      w.cardPlan.splice(0, w.cardPlan.length, ...step.answers);
      return;
    case 'notify': {
      const link = w.central.links.at(-1);
      if (link && !link.closed && !w.droppedLinks.has(link)) link.notify(step.char, step.data);
      return;
    }
    case 'central_drop': {
      const link = w.central.links.at(-1);
      // The port calls onDisconnect at most once per link.
      if (link && !w.droppedLinks.has(link)) {
        w.droppedLinks.add(link);
        link.drop();
      }
      return;
    }
    case 'central_mode':
      w.central.behaviour = centralBehaviour(step.mode);
      return;
    case 'gatt': {
      const session = w.peripheral.sessions.at(-1);
      if (!session) return;
      switch (step.event) {
        case 'connect':
          session.connect();
          return;
        case 'subscribe':
          session.subscribe(step.char);
          return;
        case 'write':
          session.write(step.char, step.data);
          return;
        case 'read':
          void session.read(step.char).catch(() => undefined);
          return;
        case 'disconnect':
          session.drop();
          return;
      }
      return;
    }
    case 'flush':
      for (let i = 0; i < AWAIT_TURNS && conn && conn.undelivered > 0; i++) await tick();
      return;
    case 'advertised':
      for (let i = 0; i < AWAIT_TURNS; i++) {
        const session = w.peripheral.sessions.at(-1);
        if (session && !session.closed) return;
        await tick();
      }
      return;
    case 'peripheral_mode':
      w.peripheral.behaviour = peripheralBehaviour(step.mode);
      return;
    case 'usable':
      (step.device === 'central' ? w.central : w.peripheral).usable = step.usable;
      return;
    case 'kiosk':
      if (step.action === 'cancel') w.kiosk.cancel();
      else if (step.action === 'dismiss') w.kiosk.dismiss();
      else w.kiosk.retry();
      return;
    case 'profile':
      w.kiosk.setProfile(step.name);
      return;
    case 'handshake_fails':
      w.backend.handshakeFailures.push(...step.kinds);
      return;
    case 'create_fails':
      w.backend.createFailures.push(...step.kinds);
      return;
    case 'greet':
      w.backend.greetings.push(step.frames === 'close' ? 'close' : step.frames.map(inboundFrame));
      return;
  }
}

/** The end of the bad input: the phone is lifted, devices behave, the backend stops failing. */
function calmDown(w: World): void {
  w.nfc.lift();
  w.cardPlan.length = 0;
  w.central.behaviour = {};
  w.peripheral.behaviour = {};
  w.central.usable = true;
  w.peripheral.usable = true;
  w.backend.handshakeFailures.length = 0;
  w.backend.createFailures.length = 0;
  w.backend.greetings.length = 0;
}

// =====================================================================================================
// A normal verification, driven by a cooperative backend
// =====================================================================================================

type NormalKind = 'nfc_central' | 'nfc_peripheral' | 'qr_central' | 'qr_peripheral';

const NORMAL_SERVICE_UUID = '6c1e2f3a-9b8d-4e5f-a1b2-c3d4e5f60718';

/** Reads one connection's messages in order from an index. */
class Reader {
  constructor(
    private readonly backend: MemoryBackend,
    private readonly conn: MemoryConnection,
    private index: number,
  ) {}

  async next(): Promise<Readonly<Record<string, unknown>>> {
    const i = this.index++;
    const frame = await this.backend.until(() => this.conn.received[i] ?? (this.conn.isClosed ? null : undefined));
    if (!frame) throw new Error(`the kiosk closed the socket (${this.conn.closeInfo?.code ?? '?'}) instead of sending message #${i}`);
    return frame.message ?? {};
  }
}

/** Cheap field check (thousands of runs): throws with the whole message when a field differs. */
function expectFields(message: Readonly<Record<string, unknown>>, fields: Readonly<Record<string, unknown>>): void {
  for (const [key, value] of Object.entries(fields)) {
    if (message[key] !== value) throw new Error(`expected ${JSON.stringify(fields)}, the kiosk sent ${JSON.stringify(message)}`);
  }
}

async function normalVerification(w: World, kind: NormalKind): Promise<void> {
  const [transport, role] = kind.split('_') as ['nfc' | 'qr', Role];
  const seen = new Map(w.backend.connections.map((c) => [c, c.received.length]));
  const reportsBefore = w.reports.length;
  const linksBefore = w.central.links.length;
  const sessionsBefore = w.peripheral.sessions.length;
  const op = transport === 'nfc' ? 'nfc_card_present' : 'qr_scanned';
  if (transport === 'nfc') w.nfc.tap(() => answerApdu(w));
  else w.qr.push('mdoc:owBjMS4wAYIB2BhYS6QBAiABIVgg');
  // The kiosk's first message, or (wrongly) the end of the verification without it.
  const found = await Promise.race([
    w.backend.until(() => {
      for (const conn of w.backend.connections) {
        const from = seen.get(conn) ?? 0;
        const index = conn.received.findIndex((f, i) => i >= from && f.op === op);
        if (index >= 0) return { conn, index };
      }
      return undefined;
    }),
    whenWorld(w, () => w.reports[reportsBefore]),
  ]);
  if (!found || !('conn' in found)) {
    throw new Error(`the verification ended before ${op}: ${JSON.stringify(found)}\n${diagnostics(w)}`);
  }
  const { conn } = found;
  const r = new Reader(w.backend, conn, found.index + 1);
  if (transport === 'nfc') {
    conn.send(stepRequest('nfc_apdu', { data: b64([0x00, 0xa4, 0x04, 0x00]) }));
    expectFields(await r.next(), { op: 'nfc_rapdu', status: 'ok', data: b64([0x90, 0x00]) });
  }
  const u = UUIDS[role];
  conn.send(stepRequest('ble_exchange', { modes: [modeJson(role, NORMAL_SERVICE_UUID, { style: 'lower', mask: 0 })] }));
  let delivered: () => number[][] | undefined;
  if (role === 'central') {
    expectFields(await r.next(), { op: 'ble_connected', status: 'ok', role: 'central' });
    // This verification's link: a connect the chaos abandoned may still deliver a late link (which the
    // kiosk closes) after `linksBefore` was counted, so pick the open one for this service.
    const link = w.central.links.slice(linksBefore).find((l) => !l.closed && l.profile.serviceUuid.toLowerCase() === NORMAL_SERVICE_UUID);
    if (!link) throw new Error('no central link');
    conn.send(stepRequest('ble_write', { char: u.c2s, data: b64([1, 2, 3]) }));
    link.notify(u.s2c, Uint8Array.from([4, 5, 6]));
    expectFields(await r.next(), { op: 'ble_notified', char: u.s2c, data: b64([4, 5, 6]) });
    delivered = () => link.writes.map((x) => Array.from(x.data));
  } else {
    const session = await w.peripheral.nextSession();
    if (w.peripheral.sessions.length !== sessionsBefore + 1) throw new Error('no new GATT service advertised');
    session.subscribe(u.s2c);
    expectFields(await r.next(), { op: 'ble_connected', status: 'ok', role: 'peripheral' });
    session.write(u.c2s, Uint8Array.from([7, 8]));
    expectFields(await r.next(), { op: 'ble_written', char: u.c2s, data: b64([7, 8]) });
    const read = session.read(UUIDS.peripheral.ident);
    expectFields(await r.next(), { op: 'ble_read_request', char: UUIDS.peripheral.ident });
    conn.send(stepRequest('ble_read_response', { data: b64([9, 9, 9]) }));
    if (b64(await read) !== b64([9, 9, 9])) throw new Error('the phone read the wrong value');
    conn.send(stepRequest('ble_write', { char: u.s2c, data: b64([1, 2, 3]) }));
    delivered = () => session.notifications.map((x) => Array.from(x.data));
  }
  conn.send(stepRequest('ble_write', { char: u.state, data: b64([0x02]) }));
  conn.send({ type: 'complete', outcome: VERIFIED_OUTCOME });
  const report = await whenWorld(w, () => w.reports[reportsBefore]);
  const closed = await conn.closed;
  const summary = {
    result: report.result,
    verdict: report.outcome?.verdict,
    reports: w.reports.length,
    closeCode: closed.code,
    delivered: delivered(),
  };
  if (
    summary.result !== 'complete' ||
    summary.verdict !== 'verified' ||
    summary.closeCode !== 1000 ||
    summary.reports !== reportsBefore + 1
  ) {
    expect(summary).toEqual({
      result: 'complete',
      verdict: 'verified',
      reports: reportsBefore + 1,
      closeCode: 1000,
      delivered: [[1, 2, 3], [2]],
    });
  }
  expect(summary.delivered).toEqual([[1, 2, 3], [2]]);
}

// =====================================================================================================
// Checks shared by the runs
// =====================================================================================================

/** Screens that tell a customer why no verification ran: a tap on them keeps them (docs/kiosk-screen.md). */
const REFUSING_PHASES: ReadonlySet<string> = new Set(['offline', 'config_error', 'cannot_verify']);

/**
 * Every failed verification showed its error (a tap refused while the kiosk is offline or needs staff: the
 * screen that says so, with the same code); none ended inside the kiosk.
 */
function checkReports(w: World): void {
  for (const report of w.reports) {
    if (report.result === 'internal_error') throw new Error(`the verification ended inside the kiosk\n${diagnostics(w)}`);
    const code = report.error?.code;
    const shows = (v: KioskView): boolean =>
      (v.phase === 'error' || (report.result === 'not_ready' && REFUSING_PHASES.has(v.phase))) && v.error?.code === code;
    if (code !== undefined && !w.views.some(shows)) {
      throw new Error(`no error view for ${code}\n${diagnostics(w)}`);
    }
  }
}

/** Stops the kiosk and checks it let go of every socket and logged no error; after a failure, only stops. */
async function stopAndCheck(w: World, failed: boolean): Promise<void> {
  if (failed) {
    await bounded(w.kiosk.stop(), 'kiosk.stop()').catch(() => undefined);
    return;
  }
  await bounded(w.kiosk.stop(), 'kiosk.stop()', () => diagnostics(w));
  await bounded(
    w.backend.until(() => (w.backend.connections.every((c) => c.isClosed) ? true : undefined)),
    'every session socket closed after stop',
    () => diagnostics(w),
  );
  if (w.sink.bad.length > 0) expect(w.sink.bad, diagnostics(w)).toEqual([]);
}

type ResultPlan = 'success' | 'not_found' | 'pending' | 'server' | 'forbidden';

function configureResult(backend: MemoryBackend, plan: ResultPlan, recoverResultMs: number): void {
  const behaviours: Record<ResultPlan, ResultBehaviour> = {
    success: { kind: 'result', result: { status: 'success', response: { [MDL_NS]: { age_over_21: true } }, errors: {}, warnings: {} } },
    pending: { kind: 'result', result: { status: 'pending' } },
    not_found: { kind: 'error', error: 'not_found' },
    server: { kind: 'error', error: 'server' },
    forbidden: { kind: 'error', error: 'forbidden' },
  };
  backend.result = behaviours[plan];
  // Answers the kiosk would poll again for come slowly: its polling deadline passes during the first
  // request, so no run spends the 500 ms pause between polls.
  backend.resultDelayMs = plan === 'success' || plan === 'forbidden' ? 0 : recoverResultMs + 1;
}

interface Scenario {
  readonly flow: FlowPlan;
  readonly chaos: readonly Chaos[];
  readonly timeouts: TinyTimeouts;
  readonly result: ResultPlan;
  readonly normal: NormalKind;
}

const scenarioArb: fc.Arbitrary<Scenario> = fc.record({
  flow: flowPlanArb,
  chaos: fc.array(chaosArb, { minLength: 1, maxLength: 6 }),
  timeouts: tinyTimeoutsArb,
  result: fc.constantFrom<ResultPlan>('success', 'not_found', 'pending', 'server', 'forbidden'),
  normal: fc.constantFrom<NormalKind>('nfc_central', 'nfc_peripheral', 'qr_central', 'qr_peripheral'),
});

async function runScenario(s: Scenario, lane: LogLane): Promise<void> {
  const w = createWorld(s.timeouts, lane);
  configureResult(w.backend, s.result, s.timeouts.recoverResultMs);
  const diag = (): string => diagnostics(w);
  let failed = true;
  try {
    w.kiosk.start();
    await bounded(settle(w), 'ready after start', diag);
    await drainUnread(w.backend.latest);
    const steps = applyChaos(buildFlow(s.flow).steps, s.chaos);
    for (const step of steps) await bounded(execute(w, step), `step ${step.t}`, diag);
    calmDown(w);
    await bounded(settle(w), 'back to ready after the bad input', diag);
    checkReports(w);
    // The same kiosk, with watchdogs a loaded machine cannot trip by accident (timeouts are read at use).
    Object.assign(w.config.timeouts, RELAXED_TIMEOUTS);
    await bounded(normalVerification(w, s.normal), 'a normal verification after the bad input', diag);
    w.nfc.lift();
    w.kiosk.dismiss(); // "next customer"; the result screen's own timeout is exercised by the bad-input phase
    await bounded(settle(w), 'back to ready after the normal verification', diag);
    failed = false;
  } finally {
    await stopAndCheck(w, failed);
  }
}

async function runValidFlow(plan: FlowPlan, lane: LogLane): Promise<void> {
  const w = createWorld(RELAXED_TIMEOUTS, lane);
  const diag = (): string => diagnostics(w);
  let failed = true;
  try {
    w.kiosk.start();
    await bounded(settle(w), 'ready after start', diag);
    const conn = w.backend.latest;
    if (!conn) throw new Error('no connection');
    await drainUnread(conn);
    const { steps, ops } = buildFlow(plan);
    for (const step of steps) await bounded(execute(w, step), `step ${step.t}`, diag);
    const report = await bounded(
      whenWorld(w, () => w.reports[0]),
      'the verification report',
      diag,
    );
    expect(report.result, diag()).toBe('complete');
    if (plan.outcome === VERIFIED_OUTCOME) expect(report.outcome?.verdict).toBe('verified');
    expect(conn.received.map((f) => f.op)).toEqual(['engage', ...ops]);
    expect((await conn.closed).code).toBe(1000);
    // Each phone-side message carries the bytes and the UUID as the backend spelled it in ble_exchange.
    const role = plan.roles[0] ?? 'central';
    const u = UUIDS[role];
    const phone = plan.transfer.filter((t) => t.k === 'phone');
    const forwarded = conn.received.filter((f) => f.op === 'ble_notified' || f.op === 'ble_written').map((f) => f.message);
    expect(forwarded).toEqual(
      phone.map((t) => ({
        type: 'step_result',
        op: role === 'central' ? 'ble_notified' : 'ble_written',
        char: spell(t.toState ? u.state : role === 'central' ? u.s2c : u.c2s, plan.spelling),
        data: b64(t.data),
      })),
    );
    // Every ble_write reached the phone, in order, ending with the 0x02 end byte.
    const written = plan.transfer.filter((t) => t.k === 'write').map((t) => Array.from(t.data));
    const delivered = role === 'central' ? w.central.links.at(-1)?.writes : w.peripheral.sessions.at(-1)?.notifications;
    expect(delivered?.map((x) => Array.from(x.data))).toEqual([...written, [0x02]]);
    w.nfc.lift();
    await bounded(settle(w), 'back to ready', diag);
    failed = false;
  } finally {
    await stopAndCheck(w, failed);
  }
}

// =====================================================================================================
// Properties over the in-memory relay
// =====================================================================================================

/** Several properties run side by side: most of a run is spent waiting on the kiosk's tiny timers. */
const LANES = 4;
const BAD_INPUT_RUNS = 10_000;

/** Waits for every lane, then fails with all of their failures (fast-check's messages carry seed and path). */
async function allLanes(lanes: Promise<void>[]): Promise<void> {
  const results = await Promise.allSettled(lanes);
  const failures: unknown[] = [];
  for (const result of results) if (result.status === 'rejected') failures.push(result.reason);
  if (failures.length === 1) throw failures[0];
  if (failures.length > 1) {
    const note =
      'Several lanes failed. A process-level failure (unhandled rejection, uncaught exception) is charged to every run in progress, ' +
      'so a lane whose counterexample did not shrink may only have been running beside the real one.';
    throw new Error([note, ...failures.map((f, i) => `lane failure ${i + 1}:\n${describeError(f)}`)].join('\n\n'));
  }
}

describe('bad input from the backend (in-memory relay)', () => {
  it('generated valid flows complete, forwarding every byte as spelled (sanity of the generator)', async () => {
    const lane = logLane();
    await fc.assert(
      fc.asyncProperty(flowPlanArb, (plan) => trackedRun(() => runValidFlow(plan, lane))),
      { numRuns: 300 },
    );
    expect(orphanErrors).toEqual([]);
  }, 120_000);

  it('random and mutated backend sequences: no crash, no unhandled rejection, no hang; ready again, then a normal verification', async () => {
    await allLanes(
      Array.from({ length: LANES }, () => {
        const lane = logLane();
        return fc.assert(
          fc.asyncProperty(scenarioArb, (s) => trackedRun(() => runScenario(s, lane))),
          // A hang is found within HANG_MS, but shrinking it can take many times that: stop in time to
          // report the failure with its seed instead of being cut off by the test timeout.
          { numRuns: BAD_INPUT_RUNS / LANES, interruptAfterTimeLimit: 240_000, markInterruptAsFailure: true },
        );
      }),
    );
    expect(orphanErrors).toEqual([]);
  }, 300_000);
});

// =====================================================================================================
// Property over the real ws stack: invalid frames close the socket with a fitting code
// =====================================================================================================

/** Where the frame arrives: `greeting` is the moment the socket opens (in the same TCP flight as the 101). */
type WsPoint = 'greeting' | 'idle' | 'nfc' | 'apdu' | 'central' | 'peripheral' | 'read';
type ViolationCode = 1002 | 1003 | 1007;

interface WsCase {
  readonly point: WsPoint;
  readonly frame: FrameSpec;
  /** Close code the frame calls for (RFC 6455 §7.4.1): 1003 binary, 1007 not JSON or bad base64, 1002 anything else. */
  readonly code: ViolationCode;
}

const SERVICE_UUID = '6c1e2f3a-9b8d-4e5f-a1b2-c3d4e5f60718';
const LOWER: Spelling = { style: 'lower', mask: 0 };

const withCode =
  (code: ViolationCode) =>
  (frame: FrameSpec): [FrameSpec, ViolationCode] => [frame, code];

/** Frames that are wrong whatever the phase, with the close code each calls for. */
const invalidFrameArb: fc.Arbitrary<[FrameSpec, ViolationCode]> = fc.oneof(
  fc.nat({ max: 4096 }).map((size) => withCode(1003)({ f: 'binary', size })),
  fc
    .oneof(
      fc.string({ maxLength: 60 }),
      fc.tuple(validMessageArb, fc.nat()).map(([message, cut]) => {
        const text = JSON.stringify(message);
        return text.slice(0, cut % text.length);
      }),
      validMessageArb.map((message) => `\uFEFF${JSON.stringify(message)}`),
    )
    .filter((text) => !isJson(text))
    .map((text) => withCode(1007)(textFrame(text))),
  fc
    .tuple(fc.constantFrom('nfc_apdu', 'ble_write', 'ble_read_response'), invalidBase64Arb)
    .map(([op, data]) => withCode(1007)(jsonFrame(stepRequest(op, op === 'ble_write' ? { char: UUIDS.central.c2s, data } : { data })))),
  fc
    .oneof(
      fc.jsonValue({ maxDepth: 2 }).filter((v) => v === null || typeof v !== 'object' || Array.isArray(v)),
      typeValueArb
        .filter((t) => t !== 'step_request' && t !== 'complete' && t !== 'error')
        .map((type) => ({ type, op: 'nfc_apdu', params: { data: 'AA==' } })),
      opValueArb
        .filter(
          (op) => typeof op !== 'string' || !['nfc_apdu', 'nfc_await_card', 'ble_exchange', 'ble_write', 'ble_read_response'].includes(op),
        )
        .map((op) => ({ type: 'step_request', op, params: {} })),
      fc.constantFrom<Json>(
        { type: 'step_request', op: 'nfc_apdu' },
        { type: 'step_request', op: 'nfc_apdu', params: [] },
        { type: 'step_request', op: 'nfc_apdu', params: { data: 42 } },
        { type: 'step_request', op: 'nfc_apdu', params: {} },
        { type: 'step_request', op: 'nfc_await_card', params: null },
        { type: 'step_request', op: 'ble_exchange', params: { modes: [] } },
        { type: 'step_request', op: 'ble_exchange', params: { modes: [{ ...modeJson('central', SERVICE_UUID, LOWER), role: 'both' }] } },
        {
          type: 'step_request',
          op: 'ble_exchange',
          params: { modes: [{ ...modeJson('central', SERVICE_UUID, LOWER), service_uuid: 'not-a-uuid' }] },
        },
        {
          type: 'step_request',
          op: 'ble_exchange',
          params: { modes: [{ role: 'central', service_uuid: SERVICE_UUID, characteristics: {} }] },
        },
        { type: 'step_request', op: 'ble_write', params: { char: 'state', data: 'Ag==' } },
        { type: 'step_request', op: 'ble_write', params: { char: UUIDS.central.state } },
        { type: 'step_request', op: 'ble_read_response', params: { data: null } },
        { type: 'complete' },
        { type: 'complete', outcome: { ...VERIFIED_OUTCOME, issuer_authentication: 'valid' } },
        { type: 'complete', outcome: { ...VERIFIED_OUTCOME, response: [] } },
        { type: 'complete', outcome: { response: {} } },
        { type: 'error' },
        { type: 'error', message: 404 },
      ),
    )
    .map((value) => withCode(1002)(jsonFrame(value))),
);

/** Valid messages that are out of sequence at a point of the flow (→ 1002). */
function outOfSequenceArb(point: WsPoint): fc.Arbitrary<[FrameSpec, ViolationCode]> {
  const apdu = dataArb.filter(isCanonicalBase64).map((data) => stepRequest('nfc_apdu', { data }));
  const awaitCard = fc.constant(stepRequest('nfc_await_card', {}));
  const exchange = modesArb.map((modes) => stepRequest('ble_exchange', { modes }));
  const readResponse = bytesArb.map((bytes) => stepRequest('ble_read_response', { data: b64(bytes) }));
  const anyWrite = fc.tuple(anyCharArb, bytesArb).map(([char, bytes]) => stepRequest('ble_write', { char, data: b64(bytes) }));
  const strayWrite = fc
    .tuple(fc.oneof(fc.uuid(), fc.constantFrom(UUIDS.peripheral.ident, UUIDS.central.s2c)), bytesArb)
    .map(([char, bytes]) => stepRequest('ble_write', { char, data: b64(bytes) }));
  const complete = outcomeArb.map((outcome) => ({ type: 'complete', outcome }));
  const options: Record<WsPoint, fc.Arbitrary<Json>[]> = {
    greeting: [apdu, awaitCard, exchange, anyWrite, readResponse, complete],
    idle: [apdu, awaitCard, exchange, anyWrite, readResponse, complete],
    nfc: [anyWrite, readResponse],
    apdu: [anyWrite, readResponse],
    central: [apdu, awaitCard, exchange, readResponse, strayWrite],
    peripheral: [apdu, awaitCard, exchange, readResponse, strayWrite],
    read: [apdu, awaitCard, exchange, anyWrite, complete],
  };
  return fc.oneof(...options[point]).map((message) => withCode(1002)(jsonFrame(message)));
}

const wsCaseArb: fc.Arbitrary<WsCase> = fc
  .constantFrom<WsPoint>('greeting', 'idle', 'nfc', 'apdu', 'central', 'peripheral', 'read')
  .chain((point) =>
    fc
      .oneof({ weight: 3, arbitrary: invalidFrameArb }, { weight: 1, arbitrary: outOfSequenceArb(point) })
      .map(([frame, code]): WsCase => ({ point, frame, code })),
  );

function currentView(kiosk: Kiosk, predicate: (v: KioskView) => boolean): Promise<KioskView> {
  if (predicate(kiosk.currentView)) return Promise.resolve(kiosk.currentView);
  return new Promise((resolve) => {
    const off = kiosk.onView((v) => {
      if (!predicate(v)) return;
      off();
      resolve(v);
    });
  });
}

async function driveTo(h: Harness, conn: FakeConnection, point: Exclude<WsPoint, 'idle' | 'greeting'>): Promise<void> {
  if (point === 'nfc' || point === 'apdu') {
    h.nfc.tap(() => Uint8Array.from([0x6a, 0x82]));
    await conn.expect('nfc_card_present');
    if (point === 'apdu') {
      conn.stepRequest('nfc_apdu', { data: b64([0x00, 0xa4, 0x04, 0x00]) });
      await conn.expect('nfc_rapdu');
    }
    return;
  }
  h.qr.push('mdoc:owBjMS4wAYIB2BhYS6QBAiABIVgg');
  await conn.expect('qr_scanned');
  const role: Role = point === 'central' ? 'central' : 'peripheral';
  conn.stepRequest('ble_exchange', { modes: [modeJson(role, SERVICE_UUID, LOWER)] });
  if (role === 'central') {
    await conn.expect('ble_connected');
    return;
  }
  const session = await h.peripheral.nextSession();
  session.subscribe(UUIDS.peripheral.s2c);
  await conn.expect('ble_connected');
  if (point === 'read') {
    void session.read(UUIDS.peripheral.ident).catch(() => undefined);
    await conn.expect('ble_read_request');
  }
}

function sendWsFrame(conn: FakeConnection, frame: FrameSpec): void {
  const inbound = inboundFrame(frame);
  if (inbound.kind === 'binary') conn.sendBinary(new Uint8Array(inbound.size));
  else conn.sendRaw(inbound.text);
}

/**
 * The backend speaks the moment the socket opens, before the kiosk has even sent `engage`: the kiosk is
 * idle, so it must close that socket with the fitting code and re-arm, and the next tap must start a
 * clean verification (not fail on the frame received while idle).
 */
async function runGreetingCase(h: Harness, c: WsCase, diag: () => string): Promise<void> {
  const greeted = new Promise<FakeConnection>((resolve) => {
    h.backend.onConnection((conn) => {
      h.backend.onConnection(undefined);
      sendWsFrame(conn, c.frame);
      resolve(conn);
    });
  });
  h.kiosk.start();
  const conn = await bounded(greeted, 'the first connection', diag);
  await bounded(
    currentView(h.kiosk, (v) => v.phase === 'ready'),
    'ready',
    diag,
  );
  const reportsBefore = h.reports.length;
  h.nfc.tap(() => Uint8Array.from([0x90, 0x00]));
  const settled = <T>(promise: Promise<T>): Promise<T | { readonly failed: string }> =>
    promise.catch((e: unknown) => ({ failed: describeError(e) }));
  const first = await bounded(
    Promise.race([
      settled(
        h.backend.nextConnection(HANG_MS).then(async (next) => {
          await next.expect('engage', HANG_MS);
          await next.expect('nfc_card_present', HANG_MS);
          return { next };
        }),
      ),
      settled(h.nextReport(HANG_MS).then((report) => ({ report }))),
    ]),
    'the verification after the tap',
    diag,
  );
  if ('report' in first) {
    throw new Error(`the tap failed at once on the session that received the frame while idle: ${JSON.stringify(first.report)}\n${diag()}`);
  }
  if ('failed' in first) throw new Error(`${first.failed}\n${diag()}`);
  expect((await bounded(conn.closed, 'the kiosk closing the greeted socket', diag)).code, diag()).toBe(c.code);
  first.next.send({ type: 'error', message: 'test over' });
  await bounded(whenReports(h, reportsBefore + 1), 'the report of the verification', diag);
  h.nfc.lift();
  await bounded(
    currentView(h.kiosk, (v) => v.phase === 'ready'),
    'ready again',
    diag,
  );
}

function whenReports(h: Harness, count: number): Promise<void> {
  return new Promise((resolve) => {
    const check = (): void => {
      if (h.reports.length >= count) resolve();
      else setTimeout(check, 2);
    };
    check();
  });
}

async function runWsCase(h: Harness, c: WsCase): Promise<void> {
  const logsBefore = h.logs.lines.length;
  const diag = (): string =>
    `views: ${h.views
      .slice(-6)
      .map((v) => v.phase)
      .join(' → ')}\nlog tail:\n${h.logs.lines.slice(-15).join('\n')}`;
  if (c.point === 'greeting') {
    await runGreetingCase(h, c, diag);
    expect(h.logs.lines.slice(logsBefore).filter((l) => /"level":(?:50|60)\b/.test(l))).toEqual([]);
    return;
  }
  await bounded(
    currentView(h.kiosk, (v) => v.phase === 'ready'),
    'ready',
    diag,
  );
  const conn = await h.backend.nextConnection();
  await conn.expect('engage');
  const reportsBefore = h.reports.length;
  if (c.point !== 'idle') await bounded(driveTo(h, conn, c.point), `the flow up to ${c.point}`, diag);
  const viewsMark = h.views.length;
  sendWsFrame(conn, c.frame);
  const closed = await bounded(conn.closed, 'the kiosk closing the socket', diag);
  expect(closed.code, diag()).toBe(c.code);
  if (c.point === 'idle') {
    expect(h.reports.length).toBe(reportsBefore);
  } else {
    const report = await h.nextReport();
    expect(report.result, diag()).toBe('violation');
    expect(report.error?.code).toBe('protocol_violation');
    expect(h.views.slice(viewsMark).some((v) => v.phase === 'error' && v.error?.code === 'protocol_violation')).toBe(true);
  }
  h.nfc.lift();
  await bounded(
    currentView(h.kiosk, (v) => v.phase === 'ready'),
    'ready again',
    diag,
  );
  expect(h.logs.lines.slice(logsBefore).filter((l) => /"level":(?:50|60)\b/.test(l))).toEqual([]);
}

const WS_HARNESS_CONFIG = {
  timeouts: { resultDisplayMs: 1, errorDisplayMs: 1, removePhoneMs: 1 },
  session: { conflictBackoffMs: 2, offlineBackoffMinMs: 2, offlineBackoffMaxMs: 20 },
};

describe('bad input over the real WebSocket stack', () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.stop();
    h = undefined;
  });

  it('an invalid or out-of-sequence frame closes the socket with 1002/1003/1007, shows the error, and the kiosk re-arms', async () => {
    await fc.assert(
      fc.asyncProperty(wsCaseArb, async (c) => {
        // A fresh kiosk and backend per run, so that runs (and shrinking) are independent.
        const harness = await startHarness({ config: WS_HARNESS_CONFIG, start: c.point !== 'greeting' });
        h = harness;
        try {
          await trackedRun(() => runWsCase(harness, c));
        } finally {
          h = undefined;
          await harness.stop();
        }
      }),
      { numRuns: 200 },
    );
    expect(orphanErrors).toEqual([]);
  }, 120_000);
});
