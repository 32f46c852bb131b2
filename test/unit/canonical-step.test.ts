/**
 * The per-message steps are read without `JSON.parse` when they come in their canonical text (issue 34).
 * Held here to the general parser: on every input, canonical or not, `parseBackendText` must give exactly
 * what `parseBackendJson` gives, and the shortcut must take the canonical texts it was made for.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeBase64 } from '../../src/common/protocol/base64.js';
import { parseCanonicalStep } from '../../src/common/protocol/canonical-step.js';
import { MAX_APDU_BYTES, MAX_BLE_READ_BYTES } from '../../src/common/protocol/messages.js';
import { parseBackendJson, parseBackendText } from '../../src/common/protocol/parse.js';

const uuid = fc.tuple(fc.uuid(), fc.boolean(), fc.boolean()).map(([u, upper, undashed]) => {
  const cased = upper ? u.toUpperCase() : u;
  return undashed ? cased.replaceAll('-', '') : cased;
});
const bytes = (maxLength: number) => fc.uint8Array({ maxLength }).map(encodeBase64);

/** The three per-message steps as the spec orders their keys, serialised by JSON.stringify. */
const canonicalText = fc.oneof(
  bytes(300).map((data) => JSON.stringify({ type: 'step_request', op: 'nfc_apdu', params: { data } })),
  bytes(MAX_BLE_READ_BYTES).map((data) => JSON.stringify({ type: 'step_request', op: 'ble_read_response', params: { data } })),
  fc.tuple(uuid, bytes(600)).map(([char, data]) => JSON.stringify({ type: 'step_request', op: 'ble_write', params: { char, data } })),
);

/** A canonical text with a few characters inserted, removed or replaced, from an alphabet that can break JSON. */
const mutated = fc
  .tuple(
    canonicalText,
    fc.array(
      fc.tuple(
        fc.nat(),
        fc.constantFrom('insert', 'delete', 'replace'),
        fc.constantFrom('"', '\\', ' ', '}', '{', ',', ':', '=', '+', '/', 'A', 'a', '0', '-', '\u0000', '\n', '\u2028', 'é'),
      ),
      {
        minLength: 1,
        maxLength: 4,
      },
    ),
  )
  .map(([text, edits]) => {
    let out = text;
    for (const [at, kind, ch] of edits) {
      const i = at % (out.length + 1);
      if (kind === 'insert') out = out.slice(0, i) + ch + out.slice(i);
      else if (kind === 'delete') out = out.slice(0, i) + out.slice(i + 1);
      else out = out.slice(0, i) + ch + out.slice(i + 1);
    }
    return out;
  });

describe('parseCanonicalStep', () => {
  it('takes every canonical text, and gives what the general parser gives', () => {
    fc.assert(
      fc.property(canonicalText, (text) => {
        const message = parseCanonicalStep(text);
        expect(message).toBeDefined();
        expect({ ok: true, message }).toEqual(parseBackendJson(text));
      }),
      { numRuns: 2_000 },
    );
  });

  it('never changes the verdict: mutated canonical texts and arbitrary strings parse as the general parser has them', () => {
    fc.assert(
      fc.property(fc.oneof(mutated, fc.string({ maxLength: 200 })), (text) => {
        expect(parseBackendText(text)).toEqual(parseBackendJson(text));
      }),
      { numRuns: 5_000 },
    );
  });

  it('leaves every other spelling to the general parser', () => {
    const data = encodeBase64(Uint8Array.of(0x00, 0xa4, 0x04, 0x00));
    const others = [
      `{"op":"nfc_apdu","type":"step_request","params":{"data":"${data}"}}`, // key order
      `{"type": "step_request","op":"nfc_apdu","params":{"data":"${data}"}}`, // whitespace
      `{"type":"step_request","op":"nfc_apdu","params":{"data":"${data}","x":1}}`, // extra field (ignored by the schema)
      `{"type":"step_request","op":"nfc_apdu","params":{"data":"${data}"}} `, // trailing space
      `{"type":"step_request","op":"nfc_apdu","params":{"data":"\\u0041${data.slice(1)}"}}`, // an escape
      `{"type":"step_request","op":"ble_write","params":{"data":"${data}","char":"00000001-a123-48ce-896b-4c76973373e6"}}`,
    ];
    for (const text of others) {
      expect(parseCanonicalStep(text)).toBeUndefined();
      expect(parseBackendText(text)).toEqual(parseBackendJson(text));
    }
    // The extra field and the key order are still valid messages, read the long way.
    expect(parseBackendText(others[2] ?? '')).toEqual({ ok: true, message: { type: 'step_request', op: 'nfc_apdu', params: { data } } });
  });

  it('refuses what the schemas refuse: bad base64, a bad UUID, more than the largest APDU', () => {
    const tooLong = encodeBase64(new Uint8Array(MAX_APDU_BYTES + 1));
    const largest = encodeBase64(new Uint8Array(MAX_APDU_BYTES));
    const apdu = (data: string): string => `{"type":"step_request","op":"nfc_apdu","params":{"data":"${data}"}}`;
    expect(parseCanonicalStep(apdu(largest))).toEqual({ type: 'step_request', op: 'nfc_apdu', params: { data: largest } });
    for (const text of [
      apdu(tooLong),
      apdu('AAE'), // no padding
      apdu('AB=='), // non-zero unused bits
      apdu('AA-_'), // URL-safe alphabet
      `{"type":"step_request","op":"ble_write","params":{"char":"not-a-uuid","data":"AA=="}}`,
      `{"type":"step_request","op":"ble_write","params":{"char":"00000001-a123-48ce-896b-4c76973373e6-0","data":"AA=="}}`,
    ]) {
      expect(parseCanonicalStep(text)).toBeUndefined();
      const result = parseBackendText(text);
      expect(result.ok).toBe(false);
      expect(result).toEqual(parseBackendJson(text));
    }
  });
});
