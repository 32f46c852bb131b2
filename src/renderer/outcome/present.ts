/**
 * The outcome as the screen shows it: a pure function from the core's OutcomeView (which carries the
 * backend's `response`, `errors` and `warnings` of unknown inner shape) to a bounded display model. No DOM,
 * no i18n: the model holds translation keys and raw-but-bounded values; OutcomeScreen renders them.
 *
 * Untrusted input rules (the backend is a peer): every string is cut to MAX_TEXT characters, nesting
 * to MAX_DEPTH, rows to MAX_ROWS, list items to MAX_ITEMS; keys are kept as text (React escapes them);
 * nothing here throws on any JSON value.
 */
import { byteStringValue, dataUrlBytes, imageKind, isDataUrl, base64Bytes, type ImageKind } from './bytes.js';
import { GROUPS, MDL_NAMESPACE, ageOverThreshold, elementInfo, type Group } from './labels.js';

export const MAX_TEXT = 300;
export const MAX_DEPTH = 4;
export const MAX_ROWS = 200;
export const MAX_ITEMS = 50;
export const MAX_MESSAGES = 10;
export const MAX_CATEGORIES = 20;

export type Cell =
  | { readonly kind: 'text'; readonly text: string }
  | { readonly kind: 'date'; readonly iso: string }
  | { readonly kind: 'datetime'; readonly iso: string }
  | { readonly kind: 'boolean'; readonly value: boolean }
  | { readonly kind: 'number'; readonly value: number; readonly unit?: 'cm' | 'kg' | 'years' }
  /** A calendar year: written without digit grouping ("1990", never "1,990"). */
  | { readonly kind: 'year'; readonly value: number }
  /** A coded value with a translation key, the code kept for staff. */
  | { readonly kind: 'code'; readonly key: string; readonly code: string }
  /** A word from a fixed list, said in the customer's language (the list's own word needs no repeating). */
  | { readonly kind: 'word'; readonly key: string }
  | { readonly kind: 'bytes'; readonly length: number; readonly image: ImageKind | undefined }
  | { readonly kind: 'empty' }
  | { readonly kind: 'list'; readonly items: readonly Cell[]; readonly omitted: number }
  | { readonly kind: 'record'; readonly fields: readonly { readonly key: string; readonly value: Cell }[]; readonly omitted: number }
  | { readonly kind: 'privileges'; readonly rows: readonly PrivilegeRow[]; readonly omitted: number }
  /** Nested deeper than MAX_DEPTH: not shown. */
  | { readonly kind: 'tooDeep' }
  /** An age statement of a document that was not verified: its value must not read as an answer. */
  | { readonly kind: 'withheld' };

export interface PrivilegeRow {
  readonly category: Cell;
  readonly issued: Cell;
  readonly expires: Cell;
  readonly codes: readonly string[];
}

export interface ElementRow {
  readonly namespace: string;
  readonly identifier: string;
  /** `namespace/identifier`, cut for display. */
  readonly id: string;
  readonly labelKey: string | undefined;
  readonly labelParams: Readonly<Record<string, string | number>>;
  readonly group: Group;
  readonly value: Cell;
  /** The row of the portrait shown above. */
  readonly isPortrait: boolean;
}

/**
 * `undetermined`: the core could not tell (a recovered result without authentication results).
 * `declined`: nothing was shared (the core's reason `nothing_shared`): neutral, not a forgery.
 */
export type DisplayVerdict = 'verified' | 'rejected' | 'declined' | 'undetermined' | 'unknown';
export type AgeAnswer = 'yes' | 'no' | 'unknown';
export type AuthDisplay = 'Valid' | 'Invalid' | 'Unchecked' | 'missing';

export type PortraitSource =
  | {
      readonly state: 'image';
      readonly bytes: Uint8Array;
      readonly kind: ImageKind;
      /**
       * The portrait's content as text (the backend's string itself, else the bytes one char each): equal
       * for equal portraits, so the canvas decodes again only when the picture really changed, not when a
       * new state repeats the same outcome in new objects.
       */
      readonly key: string;
    }
  /** Disclosed but not an image we can read (wrong type, not base64, unknown format). */
  | { readonly state: 'unreadable' }
  | { readonly state: 'absent' };

export interface Finding {
  readonly category: string;
  readonly messages: readonly string[];
  readonly omitted: number;
}

/** A requested element that was not disclosed, with its label for staff. */
export interface MissingRow {
  readonly namespace: string;
  readonly identifier: string;
  readonly labelKey: string | undefined;
  readonly labelParams: Readonly<Record<string, string | number>>;
  readonly required: boolean;
}

export interface OutcomeModel {
  readonly verdict: DisplayVerdict;
  /** Present for an age request, as the core answered it (the outcome's `answer`). */
  readonly age: { readonly threshold: number; readonly answer: AgeAnswer } | undefined;
  /** The document is verified but the request is not met (a required element withheld; an age "no" shows in `age`). */
  readonly notMet: boolean;
  /** Requested elements that were not disclosed, required ones first. */
  readonly missing: readonly MissingRow[];
  readonly portrait: PortraitSource;
  readonly rows: readonly ElementRow[];
  readonly omittedRows: number;
  readonly issuerAuthentication: AuthDisplay;
  readonly deviceAuthentication: AuthDisplay;
  /** The core's reason keys (bounded text). */
  readonly reasons: readonly string[];
  readonly errors: readonly Finding[];
  readonly warnings: readonly Finding[];
  readonly docTypes: readonly string[];
  /** The outcome could not be read at all (schema mismatch): show nothing of it. */
  readonly unreadable: boolean;
}

/** Cuts text to MAX_TEXT characters (by code point, so no half surrogate pair) with an ellipsis. */
export function bounded(text: string, max = MAX_TEXT): string {
  if (text.length <= max) return text;
  const points = Array.from(text.slice(0, max + 1));
  return points.length <= max ? text : `${points.slice(0, max - 1).join('')}…`;
}

const FULL_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?([Zz]|[+-]\d{2}:\d{2})$/;

/** Whether `YYYY-MM-DD` is a real calendar date. */
function validFullDate(text: string): boolean {
  const match = FULL_DATE.exec(text);
  if (!match) return false;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const date = new Date(Date.UTC(year, month - 1, day));
  return date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
}

function textCell(text: string): Cell {
  if (validFullDate(text)) return { kind: 'date', iso: text };
  if (DATE_TIME.test(text) && !Number.isNaN(Date.parse(text))) return { kind: 'datetime', iso: text };
  if (isDataUrl(text)) {
    const bytes = dataUrlBytes(text);
    if (bytes) return { kind: 'bytes', length: bytes.length, image: imageKind(bytes) };
  }
  // A long base64 text that decodes to an image is a byte string the backend wrote as base64.
  if (text.length >= 64) {
    const bytes = base64Bytes(text);
    const image = bytes === undefined ? undefined : imageKind(bytes);
    if (bytes !== undefined && image !== undefined) return { kind: 'bytes', length: bytes.length, image };
  }
  return { kind: 'text', text: bounded(text) };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Compact JSON-like text of any value, cut at `max` characters without ever serialising more than that
 * (a hostile message may be a huge or deeply nested object).
 */
export function shortText(value: unknown, max = MAX_TEXT): string {
  const parts: string[] = [];
  let length = 0;
  const push = (text: string): boolean => {
    parts.push(text);
    length += text.length;
    return length <= max;
  };
  const walk = (item: unknown, depth: number): boolean => {
    if (typeof item === 'string') return push(depth === 0 ? item : JSON.stringify(item.slice(0, max)));
    if (typeof item === 'number' || typeof item === 'boolean' || item === null) return push(String(item));
    if (item === undefined) return push('null');
    if (depth >= MAX_DEPTH) return push('…');
    if (Array.isArray(item)) {
      if (!push('[')) return false;
      for (const [index, entry] of item.entries()) if ((index > 0 && !push(', ')) || !walk(entry, depth + 1)) return false;
      return push(']');
    }
    if (isRecord(item)) {
      if (!push('{')) return false;
      for (const [index, [key, entry]] of Object.entries(item).entries()) {
        if ((index > 0 && !push(', ')) || !push(`${JSON.stringify(key.slice(0, max))}: `) || !walk(entry, depth + 1)) return false;
      }
      return push('}');
    }
    return push(typeof item);
  };
  walk(value, 0);
  return bounded(parts.join(''), max);
}

/** Any JSON value as a cell, bounded. */
export function genericCell(value: unknown, depth = 0): Cell {
  if (value === null || value === undefined) return { kind: 'empty' };
  if (typeof value === 'string') return textCell(value);
  if (typeof value === 'boolean') return { kind: 'boolean', value };
  if (typeof value === 'number') return Number.isFinite(value) ? { kind: 'number', value } : { kind: 'text', text: String(value) };
  if (depth >= MAX_DEPTH) return { kind: 'tooDeep' };
  if (Array.isArray(value)) {
    const bytes = value.length > 0 && value.length <= 4096 ? byteStringValue(value) : undefined;
    if (bytes !== undefined && value.length > 16) return { kind: 'bytes', length: bytes.length, image: imageKind(bytes) };
    return {
      kind: 'list',
      items: value.slice(0, MAX_ITEMS).map((item) => genericCell(item, depth + 1)),
      omitted: Math.max(0, value.length - MAX_ITEMS),
    };
  }
  if (isRecord(value)) {
    const bytes = byteStringValue(value);
    if (bytes !== undefined) return { kind: 'bytes', length: bytes.length, image: imageKind(bytes) };
    const entries = Object.entries(value);
    return {
      kind: 'record',
      fields: entries.slice(0, MAX_ITEMS).map(([key, item]) => ({ key: bounded(key, 80), value: genericCell(item, depth + 1) })),
      omitted: Math.max(0, entries.length - MAX_ITEMS),
    };
  }
  return { kind: 'text', text: shortText(value) };
}

function bytesCell(value: unknown): Cell {
  const bytes = byteStringValue(value);
  if (bytes === undefined) return genericCell(value);
  return { kind: 'bytes', length: bytes.length, image: imageKind(bytes) };
}

function numberCell(value: unknown, unit: 'cm' | 'kg' | 'years'): Cell {
  if (typeof value === 'number' && Number.isFinite(value)) return { kind: 'number', value, unit };
  return genericCell(value);
}

const SEX_CODES: Readonly<Record<number, string>> = { 0: 'value.sex.0', 1: 'value.sex.1', 2: 'value.sex.2', 9: 'value.sex.9' };

function codeCell(value: unknown, keys: Readonly<Record<string, string>>): Cell {
  const code = typeof value === 'number' || typeof value === 'string' ? String(value) : undefined;
  const key = code === undefined ? undefined : keys[code];
  return key === undefined || code === undefined ? genericCell(value) : { kind: 'code', key, code };
}

/**
 * The values ISO/IEC 18013-5 allows for eye_colour and hair_colour (the same words isomdl's `EyeColour` and
 * `HairColour` enumerate). Anything else is shown as the text it is.
 */
const EYE_COLOURS = new Set(['black', 'blue', 'brown', 'dichromatic', 'grey', 'green', 'hazel', 'maroon', 'pink', 'unknown']);
const HAIR_COLOURS = new Set(['bald', 'black', 'blond', 'brown', 'grey', 'red', 'auburn', 'sandy', 'white', 'unknown']);

function wordCell(value: unknown, words: ReadonlySet<string>, prefix: string): Cell {
  return typeof value === 'string' && words.has(value) ? { kind: 'word', key: `${prefix}.${value}` } : genericCell(value);
}

function codesText(codes: unknown): string[] {
  if (!Array.isArray(codes)) return codes === undefined ? [] : [shortText(codes, 80)];
  return codes.slice(0, MAX_ITEMS).map((entry) => {
    if (!isRecord(entry)) return shortText(entry, 80);
    const parts = [entry.code, entry.sign, entry.value].filter((part) => typeof part === 'string' || typeof part === 'number').map(String);
    return bounded(parts.join(' '), 80);
  });
}

/** ISO/IEC 18013-5 driving_privileges (an mDL data element of §7.2.1): an array of {vehicle_category_code, issue_date?, expiry_date?, codes?}. */
function privilegesCell(value: unknown): Cell {
  if (!Array.isArray(value) || !value.every(isRecord)) return genericCell(value);
  const rows = value.slice(0, MAX_ITEMS).map(
    (entry): PrivilegeRow => ({
      category:
        typeof entry.vehicle_category_code === 'string'
          ? { kind: 'text', text: bounded(entry.vehicle_category_code, 40) }
          : genericCell(entry.vehicle_category_code, MAX_DEPTH - 1),
      issued: entry.issue_date === undefined ? { kind: 'empty' } : genericCell(entry.issue_date, MAX_DEPTH - 1),
      expires: entry.expiry_date === undefined ? { kind: 'empty' } : genericCell(entry.expiry_date, MAX_DEPTH - 1),
      codes: codesText(entry.codes),
    }),
  );
  return { kind: 'privileges', rows, omitted: Math.max(0, value.length - MAX_ITEMS) };
}

function elementCell(namespace: string, identifier: string, value: unknown): Cell {
  const info = elementInfo(namespace, identifier);
  switch (info.hint) {
    case 'bytes':
      return bytesCell(value);
    case 'sex':
      return codeCell(value, SEX_CODES);
    case 'height':
      return numberCell(value, 'cm');
    case 'weight':
      return numberCell(value, 'kg');
    case 'years':
      return numberCell(value, 'years');
    case 'year':
      return typeof value === 'number' && Number.isInteger(value) ? { kind: 'year', value } : genericCell(value);
    case 'privileges':
      return privilegesCell(value);
    case 'present':
      return codeCell(value, { 1: 'value.yes' });
    case 'dhs':
      return codeCell(value, { F: 'value.dhs.F', N: 'value.dhs.N' });
    case 'truncation':
      return codeCell(value, { T: 'value.truncation.T', N: 'value.truncation.N', U: 'value.truncation.U' });
    case 'eyeColour':
      return wordCell(value, EYE_COLOURS, 'value.eye');
    case 'hairColour':
      return wordCell(value, HAIR_COLOURS, 'value.hair');
    case 'auto':
      return genericCell(value);
  }
}

type Response = Readonly<Record<string, unknown>>;

function portraitOf(response: Response): PortraitSource {
  const mdl = response[MDL_NAMESPACE];
  if (!isRecord(mdl) || !Object.hasOwn(mdl, 'portrait')) return { state: 'absent' };
  const bytes = byteStringValue(mdl.portrait);
  const kind = bytes === undefined ? undefined : imageKind(bytes);
  if (bytes === undefined || kind === undefined) return { state: 'unreadable' };
  return { state: 'image', bytes, kind, key: typeof mdl.portrait === 'string' ? `s:${mdl.portrait}` : `b:${bytesAsText(bytes)}` };
}

/** One UTF-16 unit per byte (exact, so two different byte strings never share a key). */
function bytesAsText(bytes: Uint8Array): string {
  const parts: string[] = [];
  for (let at = 0; at < bytes.length; at += 8_192) parts.push(String.fromCharCode(...bytes.subarray(at, at + 8_192)));
  return parts.join('');
}

function rowsOf(response: Response): { rows: ElementRow[]; omitted: number } {
  const all: (ElementRow & { order: number; seq: number })[] = [];
  let total = 0;
  for (const [namespace, entry] of Object.entries(response)) {
    // A namespace that is not an object of elements is shown as one row of its own.
    const elements: Record<string, unknown> = isRecord(entry) ? entry : { '': entry };
    for (const [identifier, value] of Object.entries(elements)) {
      total++;
      if (all.length >= MAX_ROWS) continue;
      const info = elementInfo(namespace, identifier);
      all.push({
        namespace: bounded(namespace, 120),
        identifier: bounded(identifier, 120),
        id: bounded(`${namespace}/${identifier}`, 240),
        labelKey: info.labelKey,
        labelParams: info.labelParams,
        group: info.group,
        value: elementCell(namespace, identifier, value),
        isPortrait: namespace === MDL_NAMESPACE && identifier === 'portrait',
        order: info.order,
        seq: all.length,
      });
    }
  }
  const groupRank = (group: Group): number => GROUPS.indexOf(group);
  all.sort((a, b) => groupRank(a.group) - groupRank(b.group) || a.order - b.order || a.seq - b.seq);
  return {
    rows: all.map(
      (row): ElementRow => ({
        namespace: row.namespace,
        identifier: row.identifier,
        id: row.id,
        labelKey: row.labelKey,
        labelParams: row.labelParams,
        group: row.group,
        value: row.value,
        isPortrait: row.isPortrait,
      }),
    ),
    omitted: total - all.length,
  };
}

/** The core's answer (outcome.answer), read field by field; anything odd reads as "could not determine". */
function answerOf(
  input: Record<string, unknown>,
): { kind: 'age' | 'elements'; threshold: number | undefined; result: 'met' | 'not_met' | 'undetermined'; missing: unknown[] } | undefined {
  const answer = input.answer;
  if (!isRecord(answer) || (answer.kind !== 'age' && answer.kind !== 'elements')) return undefined;
  const threshold =
    typeof answer.threshold === 'number' && Number.isInteger(answer.threshold) && answer.threshold >= 0 && answer.threshold <= 200
      ? answer.threshold
      : undefined;
  const result = answer.result === 'met' || answer.result === 'not_met' ? answer.result : 'undetermined';
  return { kind: answer.kind, threshold, result, missing: Array.isArray(answer.missing) ? answer.missing.slice(0, MAX_ROWS) : [] };
}

/** The age answer of an age request. Only a verified document answers (the core says so too). */
function ageOf(answer: ReturnType<typeof answerOf>, verdict: DisplayVerdict): OutcomeModel['age'] {
  if (answer?.kind !== 'age' || answer.threshold === undefined) return undefined;
  if (verdict !== 'verified') return { threshold: answer.threshold, answer: 'unknown' };
  return { threshold: answer.threshold, answer: answer.result === 'met' ? 'yes' : answer.result === 'not_met' ? 'no' : 'unknown' };
}

function missingOf(answer: ReturnType<typeof answerOf>): MissingRow[] {
  const rows: MissingRow[] = [];
  for (const entry of answer?.missing ?? []) {
    if (!isRecord(entry) || typeof entry.namespace !== 'string' || typeof entry.identifier !== 'string') continue;
    const info = elementInfo(entry.namespace, entry.identifier);
    rows.push({
      namespace: bounded(entry.namespace, 120),
      identifier: bounded(entry.identifier, 120),
      labelKey: info.labelKey,
      labelParams: info.labelParams,
      required: entry.required !== false,
    });
  }
  return rows.sort((a, b) => Number(b.required) - Number(a.required));
}

function findingsOf(value: unknown): Finding[] {
  if (value === undefined || value === null) return [];
  if (!isRecord(value)) return [{ category: '', messages: [shortText(value)], omitted: 0 }];
  return Object.entries(value)
    .slice(0, MAX_CATEGORIES)
    .map(([category, messages]): Finding => {
      const list: unknown[] = Array.isArray(messages) ? messages : [messages];
      return {
        category: bounded(category, 80),
        messages: list.slice(0, MAX_MESSAGES).map((m) => shortText(m)),
        omitted: Math.max(0, list.length - MAX_MESSAGES),
      };
    });
}

const UNREADABLE: OutcomeModel = {
  verdict: 'unknown',
  age: undefined,
  notMet: false,
  missing: [],
  portrait: { state: 'absent' },
  rows: [],
  omittedRows: 0,
  issuerAuthentication: 'missing',
  deviceAuthentication: 'missing',
  reasons: [],
  errors: [],
  warnings: [],
  docTypes: [],
  unreadable: true,
};

const AUTH_VALUES = ['Valid', 'Invalid', 'Unchecked'] as const;

/** An authentication result as reported; anything that is not one of the three values reads as Invalid. */
function authOf(value: unknown): AuthDisplay {
  if (value === null || value === undefined) return 'missing';
  return AUTH_VALUES.find((v) => v === value) ?? 'Invalid';
}

/**
 * The display model of an outcome (typed as unknown: it is read field by field, so one odd field never
 * hides the rest). Green (verified) only when the core says verified and nothing in the outcome
 * contradicts it (no reasons, no errors, every authentication Valid or not reported); a contradiction
 * shows as `unknown`, and so does an outcome without a readable verdict — never as verified.
 */
export function presentOutcome(input: unknown): OutcomeModel {
  if (!isRecord(input) || (input.verdict !== 'verified' && input.verdict !== 'rejected' && input.verdict !== 'undetermined'))
    return UNREADABLE;
  const response: Response = isRecord(input.response) ? input.response : {};
  const reasons = Array.isArray(input.reasons)
    ? input.reasons.slice(0, MAX_MESSAGES + 1).map((r) => shortText(r, 80))
    : ['unreadable_reasons'];
  const errors = findingsOf(input.errors);
  const issuer = authOf(input.issuerAuthentication);
  const device = authOf(input.deviceAuthentication);
  // Only a positive Valid counts: a missing result is the core's `undetermined`, never a pass here either.
  const authOk = (auth: AuthDisplay): boolean => auth === 'Valid';
  const consistent = reasons.length === 0 && errors.length === 0 && authOk(issuer) && authOk(device) && isRecord(input.response);
  const listed = rowsOf(response);
  // Nothing was shared: the holder declined (or the wallet gave up) — said kindly, still not accepted.
  const declined =
    input.verdict === 'rejected' &&
    reasons[0] === 'nothing_shared' &&
    listed.rows.length === 0 &&
    issuer === 'Unchecked' &&
    device === 'Unchecked';
  const verdict: DisplayVerdict =
    input.verdict === 'rejected'
      ? declined
        ? 'declined'
        : 'rejected'
      : input.verdict === 'undetermined'
        ? 'undetermined'
        : consistent
          ? 'verified'
          : 'unknown';
  const answer = answerOf(input);
  const omitted = listed.omitted;
  // Age statements of a document that is not verified are shown as "could not determine", not Yes/No.
  const rows =
    verdict === 'verified'
      ? listed.rows
      : listed.rows.map(
          (row): ElementRow =>
            row.namespace === MDL_NAMESPACE && ageOverThreshold(row.identifier) !== undefined
              ? { ...row, value: { kind: 'withheld' } }
              : row,
        );
  const docTypes = Array.isArray(input.docTypes) ? input.docTypes.filter((d): d is string => typeof d === 'string') : [];
  return {
    verdict,
    age: ageOf(answer, verdict),
    notMet: verdict === 'verified' && answer?.kind === 'elements' && answer.result !== 'met',
    missing: missingOf(answer),
    portrait: portraitOf(response),
    rows,
    omittedRows: omitted,
    issuerAuthentication: issuer,
    deviceAuthentication: device,
    reasons: reasons.slice(0, MAX_MESSAGES),
    errors,
    warnings: findingsOf(input.warnings),
    docTypes: docTypes.slice(0, MAX_MESSAGES).map((d) => bounded(d, 120)),
    unreadable: false,
  };
}
