/**
 * The wire shapes of spec §4.2–4.4 (and the resources of §2) against the runtime schemas of
 * `messages.ts` and the categorised parser of `parse.ts`.
 */
import { describe, expect, it } from 'vitest';
import { CLIENT_OPS, ClientMessageSchemas, SessionCreated, SessionResult, type ClientOp } from '../../src/common/protocol/messages.js';
import { parseBackendText, type ParseResult, type ViolationKind } from '../../src/common/protocol/parse.js';

const b64 = (values: number[]): string => Buffer.from(values).toString('base64');
const ISO = 'a123-48ce-896b-4c76973373e6';
const STATE_UUID = `00000001-${ISO}`;
const C2S_UUID = `00000002-${ISO}`;
const S2C_UUID = `00000003-${ISO}`;
const IDENT_UUID = `00000008-${ISO}`;

const centralMode = {
  role: 'central',
  service_uuid: '6c1e2f3a-9b8d-4e5f-a1b2-c3d4e5f60718',
  characteristics: {
    state: { uuid: STATE_UUID, operations: ['notify', 'write_without_response'], permissions: ['writeable'] },
    c2s: { uuid: C2S_UUID, operations: ['write_without_response'], permissions: ['writeable'] },
    s2c: { uuid: S2C_UUID, operations: ['notify'], permissions: [] },
  },
};
const peripheralMode = {
  role: 'peripheral',
  service_uuid: '1a2b3c4d-0000-4000-8000-00000000abcd',
  characteristics: {
    state: { uuid: STATE_UUID.toUpperCase(), operations: ['notify', 'write_without_response'], permissions: ['writeable'] },
    c2s: { uuid: C2S_UUID, operations: ['write_without_response'], permissions: ['writeable'] },
    s2c: { uuid: S2C_UUID, operations: ['notify'], permissions: [] },
    ident: { uuid: IDENT_UUID, operations: ['read'], permissions: ['readable'] },
  },
};
const outcome = {
  response: { 'org.iso.18013.5.1': { age_over_21: true, portrait: 'AAEC' } },
  doc_types: ['org.iso.18013.5.1.mDL'],
  issuer_authentication: 'Valid',
  device_authentication: 'Unchecked',
  errors: {},
  warnings: { revocation: 'temporarily unavailable' },
};

function parse(message: unknown): ParseResult {
  return parseBackendText(JSON.stringify(message));
}

function expectOk(result: ParseResult): Extract<ParseResult, { ok: true }>['message'] {
  if (!result.ok) throw new Error(`expected a valid message, got ${result.violation.kind}: ${result.violation.detail}`);
  return result.message;
}

function expectViolation(result: ParseResult, kind: ViolationKind, why?: string): Extract<ParseResult, { ok: false }>['violation'] {
  if (result.ok) throw new Error(`expected a ${kind} violation (${why ?? ''}), the message was accepted`);
  expect(result.violation.kind, why).toBe(kind);
  return result.violation;
}

// ------------------------------------------------------------------ §4.4 backend → client

describe('backend → client messages (spec §4.4)', () => {
  const valid: [string, Record<string, unknown>][] = [
    ['step_request nfc_apdu', { type: 'step_request', op: 'nfc_apdu', params: { data: b64([0x00, 0xa4, 0x04, 0x00, 0x07]) } }],
    ['step_request nfc_await_card', { type: 'step_request', op: 'nfc_await_card', params: {} }],
    [
      'step_request ble_exchange (central first)',
      { type: 'step_request', op: 'ble_exchange', params: { modes: [centralMode, peripheralMode] } },
    ],
    [
      'step_request ble_exchange (peripheral with ident)',
      { type: 'step_request', op: 'ble_exchange', params: { modes: [peripheralMode] } },
    ],
    [
      'step_request ble_write (upper-case UUID)',
      { type: 'step_request', op: 'ble_write', params: { char: STATE_UUID.toUpperCase(), data: b64([0x02]) } },
    ],
    ['step_request ble_read_response', { type: 'step_request', op: 'ble_read_response', params: { data: b64([0xa1, 0x00]) } }],
    ['step_request ble_read_response with empty bytes', { type: 'step_request', op: 'ble_read_response', params: { data: '' } }],
    ['complete', { type: 'complete', outcome }],
    ['error', { type: 'error', message: 'NFC retries exhausted' }],
  ];

  it.each(valid)('%s validates', (_name, message) => {
    const parsed = expectOk(parse(message));
    expect(parsed).toEqual(message);
  });

  it('unknown extra fields are ignored at every level and dropped from the typed message', () => {
    const withExtras = {
      type: 'step_request',
      op: 'ble_exchange',
      version: 3,
      params: {
        modes: [{ ...centralMode, priority: 1, characteristics: { ...centralMode.characteristics, extra: { uuid: 'x' } } }],
        hint: 'fast',
      },
    };
    const parsed = expectOk(parse(withExtras));
    expect(parsed).toEqual({ type: 'step_request', op: 'ble_exchange', params: { modes: [centralMode] } });

    const apdu = expectOk(parse({ type: 'step_request', op: 'nfc_apdu', params: { data: 'kAA=', seq: 4 }, trace: 'abc' }));
    expect(apdu).toEqual({ type: 'step_request', op: 'nfc_apdu', params: { data: 'kAA=' } });

    const await_ = expectOk(parse({ type: 'step_request', op: 'nfc_await_card', params: { attempt: 2 } }));
    expect(await_).toEqual({ type: 'step_request', op: 'nfc_await_card', params: {} });

    const complete = expectOk(parse({ type: 'complete', outcome: { ...outcome, presentation: { at: 1 } }, session: 'x' }));
    expect(complete).toEqual({ type: 'complete', outcome });

    const error = expectOk(parse({ type: 'error', message: 'out of sequence', code: 17 }));
    expect(error).toEqual({ type: 'error', message: 'out of sequence' });
  });

  describe('rejections', () => {
    it('malformed JSON → malformed_json', () => {
      expectViolation(parseBackendText('{"type":"step_request",'), 'malformed_json');
      expectViolation(parseBackendText(''), 'malformed_json');
    });

    it.each([['[]'], ['null'], ['"complete"'], ['42'], ['true']])('a JSON value that is not an object (%s) → not_an_object', (text) => {
      expectViolation(parseBackendText(text), 'not_an_object');
    });

    it.each([
      [{ op: 'nfc_apdu', params: { data: 'kAA=' } }, 'missing type'],
      [{ type: 'step_result', op: 'engage' }, 'a client type'],
      [{ type: 'STEP_REQUEST', op: 'nfc_apdu', params: { data: 'kAA=' } }, 'wrong case'],
      [{ type: 7 }, 'non-string type'],
      [{ type: 'progress', step: 1 }, 'unknown type'],
    ])('%j → unknown_type (%s)', (message, why) => {
      expectViolation(parse(message), 'unknown_type', why);
    });

    it.each([
      [{ type: 'step_request', op: 'nfc_rapdu', params: {} }, 'a client op'],
      [{ type: 'step_request', op: 'qr_scan', params: {} }, 'unknown op'],
      [{ type: 'step_request', params: {} }, 'missing op'],
      [{ type: 'step_request', op: 3, params: {} }, 'non-string op'],
    ])('%j → unknown_op (%s)', (message, why) => {
      expectViolation(parse(message), 'unknown_op', why);
    });

    it.each([
      [{ type: 'step_request', op: 'nfc_apdu' }, 'missing params'],
      [{ type: 'step_request', op: 'nfc_apdu', params: null }, 'null params'],
      [{ type: 'step_request', op: 'nfc_apdu', params: ['kAA='] }, 'array params'],
      [{ type: 'step_request', op: 'nfc_apdu', params: {} }, 'missing data'],
      [{ type: 'step_request', op: 'nfc_apdu', params: { data: [0x90, 0x00] } }, 'data not a string'],
      [{ type: 'step_request', op: 'ble_exchange', params: {} }, 'missing modes'],
      [{ type: 'step_request', op: 'ble_exchange', params: { modes: centralMode } }, 'modes not an array'],
      [{ type: 'step_request', op: 'ble_exchange', params: { modes: [] } }, 'no mode offered'],
      [{ type: 'step_request', op: 'ble_exchange', params: { modes: [{ ...centralMode, role: 'observer' }] } }, 'unknown role'],
      [
        { type: 'step_request', op: 'ble_exchange', params: { modes: [{ ...centralMode, service_uuid: 'not-a-uuid' }] } },
        'bad service_uuid',
      ],
      [
        {
          type: 'step_request',
          op: 'ble_exchange',
          params: {
            modes: [
              { ...centralMode, characteristics: { state: centralMode.characteristics.state, c2s: centralMode.characteristics.c2s } },
            ],
          },
        },
        'missing s2c',
      ],
      [
        {
          type: 'step_request',
          op: 'ble_exchange',
          params: {
            modes: [
              {
                ...centralMode,
                characteristics: { ...centralMode.characteristics, s2c: { uuid: S2C_UUID, operations: ['indicate'], permissions: [] } },
              },
            ],
          },
        },
        'operation outside read/write_without_response/notify',
      ],
      [
        {
          type: 'step_request',
          op: 'ble_exchange',
          params: {
            modes: [
              {
                ...centralMode,
                characteristics: {
                  ...centralMode.characteristics,
                  s2c: { uuid: S2C_UUID, operations: ['notify'], permissions: ['encrypted'] },
                },
              },
            ],
          },
        },
        'permission outside readable/writeable',
      ],
      [{ type: 'step_request', op: 'ble_write', params: { data: 'Ag==' } }, 'ble_write without char'],
      [{ type: 'step_request', op: 'ble_write', params: { char: 'state', data: 'Ag==' } }, 'ble_write char not a UUID'],
      [{ type: 'step_request', op: 'ble_write', params: { char: STATE_UUID } }, 'ble_write without data'],
      [{ type: 'step_request', op: 'ble_read_response', params: { data: 5 } }, 'ble_read_response data mistyped'],
      [{ type: 'complete' }, 'complete without outcome'],
      [{ type: 'complete', outcome: { ...outcome, issuer_authentication: 'Maybe' } }, 'authentication outside Valid/Invalid/Unchecked'],
      [{ type: 'complete', outcome: { ...outcome, device_authentication: undefined } }, 'missing device_authentication'],
      [{ type: 'complete', outcome: { ...outcome, doc_types: 'org.iso.18013.5.1.mDL' } }, 'doc_types not an array'],
      [{ type: 'complete', outcome: { ...outcome, errors: [] } }, 'errors not an object'],
      [{ type: 'complete', outcome: { ...outcome, warnings: null } }, 'warnings null'],
      [{ type: 'complete', outcome: { ...outcome, response: { 'org.iso.18013.5.1': 'x' } } }, 'response values not objects'],
      [{ type: 'error' }, 'error without message'],
      [{ type: 'error', message: 404 }, 'error message mistyped'],
    ])('%j → invalid_fields (%s)', (message, why) => {
      const violation = expectViolation(parse(message), 'invalid_fields', why);
      expect(violation.detail.length).toBeGreaterThan(0);
    });

    it.each([
      ['kAA', 'missing padding'],
      ['kA-_', 'URL-safe alphabet'],
      ['kA A=', 'whitespace'],
      ['kAB=', 'non-zero pad bits'],
      ['kAA=\n', 'trailing newline'],
    ])('binary field %j → invalid_base64 (%s)', (data, why) => {
      expectViolation(parse({ type: 'step_request', op: 'nfc_apdu', params: { data } }), 'invalid_base64', why);
      expectViolation(parse({ type: 'step_request', op: 'ble_write', params: { char: STATE_UUID, data } }), 'invalid_base64', why);
      expectViolation(parse({ type: 'step_request', op: 'ble_read_response', params: { data } }), 'invalid_base64', why);
    });

    it('violations name type and op but never echo payload bytes', () => {
      const payload = 'U0VDUkVUX1BBWUxPQUQ-';
      const violation = expectViolation(
        parse({ type: 'step_request', op: 'ble_write', params: { char: STATE_UUID, data: payload } }),
        'invalid_base64',
      );
      expect(violation.type).toBe('step_request');
      expect(violation.op).toBe('ble_write');
      expect(violation.detail).toContain('data');
      expect(violation.detail).not.toContain(payload);
      expect(JSON.stringify(violation)).not.toContain(payload);

      const weirdOp = expectViolation(parse({ type: 'step_request', op: 'op with {"payload": 1} inside', params: {} }), 'unknown_op');
      expect(weirdOp.op).toBe('<not an identifier>');
      const weirdType = expectViolation(parse({ type: 'type with spaces and data', x: 1 }), 'unknown_type');
      expect(weirdType.type).toBe('<not an identifier>');
    });
  });
});

// ------------------------------------------------------------------ §4.3 client → backend

describe('client → backend messages (spec §4.3)', () => {
  const valid: Record<ClientOp, Record<string, unknown>[]> = {
    engage: [
      { type: 'step_result', op: 'engage', status: 'ok', namespaces: { 'org.iso.18013.5.1': ['family_name', 'given_name', 'birth_date'] } },
      {
        type: 'step_result',
        op: 'engage',
        status: 'ok',
        namespaces: { 'org.iso.18013.5.1': ['age_over_21'], 'org.iso.18013.5.1.aamva': ['DHS_compliance'] },
      },
    ],
    qr_scanned: [{ type: 'step_result', op: 'qr_scanned', status: 'ok', data: 'mdoc:owBjMS4wAYIB2BhYS6QBAiABIVgg' }],
    nfc_card_present: [{ type: 'step_result', op: 'nfc_card_present', status: 'ok' }],
    nfc_rapdu: [
      { type: 'step_result', op: 'nfc_rapdu', status: 'ok', data: b64([0x6a, 0x82]) },
      { type: 'step_result', op: 'nfc_rapdu', status: 'error', reason: 'RemovedCard' },
      { type: 'step_result', op: 'nfc_rapdu', status: 'error', reason: 'NotTransacted' },
    ],
    ble_connected: [
      { type: 'step_result', op: 'ble_connected', status: 'ok', role: 'central' },
      { type: 'step_result', op: 'ble_connected', status: 'ok', role: 'peripheral' },
      { type: 'step_result', op: 'ble_connected', status: 'error', role: 'central', reason: 'scan timed out' },
    ],
    ble_notified: [{ type: 'step_result', op: 'ble_notified', char: S2C_UUID, data: b64([0x01, 0x02, 0x03]) }],
    ble_written: [{ type: 'step_result', op: 'ble_written', char: C2S_UUID.toUpperCase(), data: b64([0xa2]) }],
    ble_read_request: [{ type: 'step_result', op: 'ble_read_request', char: IDENT_UUID }],
  };

  it('covers every client op', () => {
    expect(Object.keys(valid).sort()).toEqual([...CLIENT_OPS].sort());
  });

  const cases = Object.entries(valid).flatMap(([op, messages]) => messages.map((m) => [op as ClientOp, m] as const));
  it.each(cases)('%s: %j validates', (op, message) => {
    const parsed = ClientMessageSchemas[op].safeParse(message);
    expect(parsed.success).toBe(true);
    expect(parsed.data).toEqual(message);
  });

  it('unknown extra fields are ignored', () => {
    const parsed = ClientMessageSchemas.engage.safeParse({
      type: 'step_result',
      op: 'engage',
      status: 'ok',
      namespaces: { 'org.iso.18013.5.1': ['portrait'] },
      transport: 'nfc',
    });
    expect(parsed.success).toBe(true);
    expect(parsed.data).not.toHaveProperty('transport');
    expect(
      ClientMessageSchemas.nfc_card_present.safeParse({ type: 'step_result', op: 'nfc_card_present', status: 'ok', handle: 3 }).success,
    ).toBe(true);
  });

  it.each([
    ['engage', { type: 'step_result', op: 'engage', status: 'ok' }, 'namespaces is required'],
    ['engage', { type: 'step_result', op: 'engage', status: 'ok', namespaces: ['family_name'] }, 'namespaces is an object'],
    [
      'engage',
      { type: 'step_result', op: 'engage', status: 'ok', namespaces: { 'org.iso.18013.5.1': 'family_name' } },
      'elements are an array',
    ],
    ['engage', { type: 'step_result', op: 'engage', status: 'ok', namespaces: { '': ['x'] } }, 'empty namespace'],
    ['engage', { type: 'step_result', op: 'engage', status: 'error', namespaces: {} }, 'status must be ok'],
    ['engage', { type: 'step_request', op: 'engage', status: 'ok', namespaces: {} }, 'type must be step_result'],
    ['qr_scanned', { type: 'step_result', op: 'qr_scanned', status: 'ok' }, 'data is required'],
    ['nfc_card_present', { type: 'step_result', op: 'nfc_card_present' }, 'status is required'],
    ['nfc_rapdu', { type: 'step_result', op: 'nfc_rapdu', status: 'ok' }, 'ok needs data'],
    ['nfc_rapdu', { type: 'step_result', op: 'nfc_rapdu', status: 'ok', data: 'kAA' }, 'data must be strict base64'],
    ['nfc_rapdu', { type: 'step_result', op: 'nfc_rapdu', status: 'error' }, 'error needs a reason'],
    ['nfc_rapdu', { type: 'step_result', op: 'nfc_rapdu', status: 'failed', reason: 'x' }, 'status ok or error'],
    ['ble_connected', { type: 'step_result', op: 'ble_connected', status: 'ok' }, 'role is required'],
    ['ble_connected', { type: 'step_result', op: 'ble_connected', status: 'error', role: 'central' }, 'error needs a reason'],
    ['ble_connected', { type: 'step_result', op: 'ble_connected', status: 'ok', role: 'both' }, 'role central or peripheral'],
    ['ble_notified', { type: 'step_result', op: 'ble_notified', data: 'AQID' }, 'char is required'],
    ['ble_notified', { type: 'step_result', op: 'ble_notified', char: S2C_UUID, data: 'AQ-D' }, 'data must be standard base64'],
    ['ble_written', { type: 'step_result', op: 'ble_written', char: 'c2s', data: 'AQID' }, 'char must be a UUID'],
    ['ble_read_request', { type: 'step_result', op: 'ble_read_request' }, 'char is required'],
  ] as const)('%s rejects %j (%s)', (op, message, why) => {
    expect(ClientMessageSchemas[op].safeParse(message).success, why).toBe(false);
  });
});

// ------------------------------------------------------------------ §2.1, §2.2, §4.1 HTTP resources

describe('HTTP resources (spec §2.1, §2.2)', () => {
  it('session creation: id and client_secret, further fields ignored', () => {
    const parsed = SessionCreated.parse({
      id: 'sess_1',
      client_secret: 'cs_1',
      iframe_url: 'https://example.invalid/i',
      sdk_config: { theme: 'dark' },
    });
    expect(parsed).toEqual({ id: 'sess_1', client_secret: 'cs_1', iframe_url: 'https://example.invalid/i' });
    expect(SessionCreated.safeParse({ id: 'sess_1' }).success).toBe(false);
    expect(SessionCreated.safeParse({ id: 1, client_secret: 'x' }).success).toBe(false);
    expect(SessionCreated.safeParse({ id: '', client_secret: 'x' }).success).toBe(false);
  });

  it('session result: status, response, errors, warnings; metadata kept', () => {
    const parsed = SessionResult.parse({
      status: 'success',
      response: { 'org.iso.18013.5.1': { age_over_21: true } },
      errors: {},
      warnings: {},
      presented_at: '2025-01-01T00:00:00Z',
    });
    expect(parsed.status).toBe('success');
    expect(parsed.response).toEqual({ 'org.iso.18013.5.1': { age_over_21: true } });
    expect(SessionResult.safeParse({ response: {} }).success).toBe(false);
    expect(SessionResult.safeParse({ status: 'success', errors: [] }).success).toBe(false);
  });
});
