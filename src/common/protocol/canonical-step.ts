/**
 * The per-message steps (`nfc_apdu`, `ble_write`, `ble_read_response`) read without `JSON.parse` when the
 * backend sends them in their canonical text: the spec's key order (`type`, `op`, `params`; `char` before
 * `data`), no whitespace, nothing else (issue 34: in the APDU round trip, `JSON.parse` and the objects it
 * builds were most of what the kiosk added to a bare client). Any other spelling of the same message,
 * valid or not, returns `undefined` and takes the general parser (`parse.ts`), so nothing is accepted here
 * that the schemas refuse.
 *
 * Why it is safe: between the fixed parts only strict base64 (`A–Z a–z 0–9 + / =`) and a UUID (hex and
 * `-`) are accepted, and neither alphabet holds a quote, a backslash or a control character, so the field
 * cannot end early, hide an escape or smuggle another key: `JSON.parse` would give exactly these strings.
 * `test/unit/canonical-step.test.ts` holds this to the general parser on canonical, mutated and random texts.
 */
import { isBase64Within, MAX_APDU_BYTES, MAX_BLE_READ_BYTES, MAX_BLE_WRITE_BYTES, type StepRequest } from './messages.js';
import { isUuid } from './uuid.js';

const HEAD = '{"type":"step_request","op":"';
const TAIL = '"}}';
const APDU_HEAD = `${HEAD}nfc_apdu","params":{"data":"`;
const READ_HEAD = `${HEAD}ble_read_response","params":{"data":"`;
const WRITE_HEAD = `${HEAD}ble_write","params":{"char":"`;
const WRITE_SEPARATOR = '","data":"';
/** Dashed UUID spelling; the undashed one (32) is shorter. */
const MAX_UUID_CHARS = 36;

/** The base64 field between `from` and the closing `"}}`, if it is strict and within `maxBytes`. */
function dataField(text: string, from: number, maxBytes: number): string | undefined {
  const end = text.length - TAIL.length;
  if (end < from || !text.endsWith(TAIL)) return undefined;
  const data = text.slice(from, end);
  return isBase64Within(data, maxBytes) ? data : undefined;
}

/** The message, when `text` is the canonical text of a valid per-message step; otherwise `undefined`. */
export function parseCanonicalStep(text: string): StepRequest | undefined {
  if (!text.startsWith(HEAD)) return undefined;
  if (text.startsWith(APDU_HEAD)) {
    const data = dataField(text, APDU_HEAD.length, MAX_APDU_BYTES);
    return data === undefined ? undefined : { type: 'step_request', op: 'nfc_apdu', params: { data } };
  }
  if (text.startsWith(WRITE_HEAD)) {
    const separator = text.indexOf(WRITE_SEPARATOR, WRITE_HEAD.length);
    if (separator < 0 || separator - WRITE_HEAD.length > MAX_UUID_CHARS) return undefined;
    const char = text.slice(WRITE_HEAD.length, separator);
    if (!isUuid(char)) return undefined;
    const data = dataField(text, separator + WRITE_SEPARATOR.length, MAX_BLE_WRITE_BYTES);
    return data === undefined ? undefined : { type: 'step_request', op: 'ble_write', params: { char, data } };
  }
  if (text.startsWith(READ_HEAD)) {
    const data = dataField(text, READ_HEAD.length, MAX_BLE_READ_BYTES);
    return data === undefined ? undefined : { type: 'step_request', op: 'ble_read_response', params: { data } };
  }
  return undefined;
}
