/**
 * JSON-safe values for the `complete` outcome (spec §2.4: disclosed elements by namespace, then element
 * identifier). Element values arrive as CBOR decoded by the toolkit (`src/qa/sim/iso/cbor.ts`:
 * maps as `Map`, tags 0/1004 kept as `Tag`, tag 24 as `EmbeddedCbor`); the spec only says the outcome is
 * JSON. The mapping, chosen here and documented in docs/qa-simulators.md:
 *
 * | CBOR (ISO 18013-5 §7.2.1 data element types)   | JSON                                                     |
 * |------------------------------------------------|----------------------------------------------------------|
 * | tstr, bool, null                               | as is                                                    |
 * | undefined (simple 23)                          | null                                                     |
 * | int / float within ±2^53                       | number                                                   |
 * | bigint (beyond ±2^53), NaN, ±Infinity          | string (decimal / "NaN" / "Infinity" / "-Infinity")       |
 * | bstr (portrait, signature_usual_mark, …)       | standard base64 with padding (RFC 4648 §4)               |
 * | full-date `1004("YYYY-MM-DD")` (RFC 8943)      | "YYYY-MM-DD" (birth_date, issue_date, expiry_date, …)     |
 * | tdate `0("…")` (RFC 3339)                      | the text verbatim (already an ISO 8601 date-time)        |
 * | epoch date `1(n)`                              | ISO date-time string via `Date.prototype.toISOString`    |
 * | other tags                                     | the converted tag content (the tag number is dropped)    |
 * | embedded CBOR `24(bstr)`                       | the converted embedded item                              |
 * | array (driving_privileges, …)                  | array, elements converted                                |
 * | map                                            | object; keys as strings (text as is, numbers in decimal) |
 */
import { EmbeddedCbor, Tag, TAG_FULL_DATE, TAG_TDATE } from '../../iso/cbor.js';

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

const TAG_EPOCH_DATE = 1;
/** Deeper nesting than any mDL element needs; guards against hostile input. */
const MAX_DEPTH = 32;

const base64 = (bytes: Uint8Array): string => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');

function numberValue(value: number): JsonValue {
  return Number.isFinite(value) ? value : String(value);
}

function mapKey(key: unknown): string {
  if (typeof key === 'string') return key;
  if (typeof key === 'number' || typeof key === 'bigint' || typeof key === 'boolean') return String(key);
  // ISO 18013-5 element maps use text keys; anything else (a byte string, a nested item) is named by its JSON form.
  return JSON.stringify(toJsonValue(key));
}

function tagValue(tag: Tag, depth: number): JsonValue {
  const content: unknown = tag.value;
  if ((tag.tag === TAG_FULL_DATE || tag.tag === TAG_TDATE) && typeof content === 'string') return content;
  if (tag.tag === TAG_EPOCH_DATE && (typeof content === 'number' || typeof content === 'bigint')) {
    const date = new Date(Number(content) * 1000);
    return Number.isNaN(date.getTime()) ? String(content) : date.toISOString();
  }
  return convert(content, depth + 1);
}

function convert(value: unknown, depth: number): JsonValue {
  if (depth > MAX_DEPTH) throw new RangeError(`element value nested deeper than ${MAX_DEPTH} levels`);
  if (value === null || value === undefined) return null;
  if (typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') return numberValue(value);
  if (typeof value === 'bigint') return value.toString();
  if (value instanceof Uint8Array) return base64(value);
  if (value instanceof Tag) return tagValue(value, depth);
  if (value instanceof EmbeddedCbor) {
    try {
      return convert(value.decode(), depth + 1);
    } catch {
      return base64(value.bytes);
    }
  }
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.toISOString();
  if (Array.isArray(value)) return value.map((item: unknown) => convert(item, depth + 1));
  if (value instanceof Map) {
    const out: Record<string, JsonValue> = {};
    for (const [key, item] of value as Map<unknown, unknown>) out[mapKey(key)] = convert(item, depth + 1);
    return out;
  }
  if (typeof value === 'object') {
    const out: Record<string, JsonValue> = {};
    for (const [key, item] of Object.entries(value)) out[key] = convert(item, depth + 1);
    return out;
  }
  // Functions and symbols cannot come out of a CBOR decoder.
  return null;
}

/** Converts one decoded CBOR value to JSON-safe data by the table above. */
export function toJsonValue(value: unknown): JsonValue {
  return convert(value, 0);
}
