/**
 * Public captures of NFC engagement (test/fixtures/captures/*.json): each step's C-APDU and R-APDU as hex,
 * with the repository, path, commit and test they come from. Captured protocol bytes are facts used as test
 * vectors; no code of the source repositories is used.
 *
 * `command` is the captured reader's C-APDU where the source shows it, null where it does not (isomdl's
 * tests feed the phone's responses and assert only some of the reader's commands).
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export interface CaptureSource {
  readonly repository: string;
  readonly path: string;
  readonly commit: string;
  readonly test: string;
  /** The commit that added the test, when known. */
  readonly addedIn?: string;
}

export interface CaptureStep {
  readonly what: string;
  readonly command: string | null;
  /** Response data || SW1 SW2. */
  readonly response: string;
}

export interface Capture {
  readonly name: string;
  readonly wallet: string;
  readonly handover: 'static' | 'negotiated';
  readonly source: CaptureSource;
  readonly reader: string;
  readonly holder: string;
  readonly steps: readonly CaptureStep[];
  /** isomdl's HR write in the Google Wallet capture: the bytes around its random UUID. */
  readonly hrWrite?: { readonly length: number; readonly prefix: string; readonly suffix: string };
}

export const CAPTURE_NAMES = [
  'multipaz-loopback-static',
  'multipaz-loopback-negotiated',
  'multipaz-android-static',
  'multipaz-android-negotiated',
  'multipaz-android-negotiated-not-ready',
  'apple-wallet-negotiated',
  'google-wallet-negotiated',
  'samsung-wallet-static',
] as const;
export type CaptureName = (typeof CAPTURE_NAMES)[number];

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isHex = (v: unknown): v is string => typeof v === 'string' && /^(?:[0-9a-f]{2})+$/.test(v);

function fail(name: string, what: string): never {
  throw new Error(`capture ${name}: ${what}`);
}

function parseStep(name: string, raw: unknown, index: number): CaptureStep {
  if (!isRecord(raw)) fail(name, `step ${index} is not an object`);
  const { what, command, response } = raw;
  if (typeof what !== 'string') fail(name, `step ${index} has no "what"`);
  if (command !== null && !isHex(command)) fail(name, `step ${index} command is neither null nor lower-case hex`);
  if (!isHex(response) || response.length < 4) fail(name, `step ${index} response is not hex with a status word`);
  return { what, command, response };
}

function parseSource(name: string, raw: unknown): CaptureSource {
  if (!isRecord(raw)) fail(name, 'no source');
  const { repository, path, commit, test, addedIn } = raw;
  if (typeof repository !== 'string' || typeof path !== 'string' || typeof test !== 'string')
    fail(name, 'source lacks repository, path or test');
  if (typeof commit !== 'string' || !/^[0-9a-f]{40}$/.test(commit)) fail(name, 'source commit is not a 40-hex commit id');
  if (addedIn !== undefined && (typeof addedIn !== 'string' || !/^[0-9a-f]{40}$/.test(addedIn)))
    fail(name, 'source addedIn is not a commit id');
  return { repository, path, commit, test, ...(addedIn === undefined ? {} : { addedIn }) };
}

export function loadCapture(name: CaptureName): Capture {
  const file = fileURLToPath(new URL(`../fixtures/captures/${name}.json`, import.meta.url));
  const raw: unknown = JSON.parse(readFileSync(file, 'utf8'));
  if (!isRecord(raw)) fail(name, 'not a JSON object');
  const { wallet, handover, reader, holder, steps, hrWrite } = raw;
  if (typeof wallet !== 'string' || typeof reader !== 'string' || typeof holder !== 'string') fail(name, 'lacks wallet, reader or holder');
  if (handover !== 'static' && handover !== 'negotiated') fail(name, 'handover is neither static nor negotiated');
  if (!Array.isArray(steps) || steps.length === 0) fail(name, 'has no steps');
  const capture: Capture = {
    name,
    wallet,
    handover,
    source: parseSource(name, raw.source),
    reader,
    holder,
    steps: steps.map((s: unknown, i) => parseStep(name, s, i)),
  };
  if (hrWrite === undefined) return capture;
  if (!isRecord(hrWrite) || typeof hrWrite.length !== 'number' || !isHex(hrWrite.prefix) || !isHex(hrWrite.suffix))
    fail(name, 'hrWrite is malformed');
  return { ...capture, hrWrite: { length: hrWrite.length, prefix: hrWrite.prefix, suffix: hrWrite.suffix } };
}

export function hexBytes(text: string): Uint8Array {
  return Uint8Array.from(Buffer.from(text, 'hex'));
}

export function toHex(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('hex');
}

/** The response data of a step (its status word removed). */
export function responseData(step: CaptureStep): Uint8Array {
  return hexBytes(step.response.slice(0, -4));
}
