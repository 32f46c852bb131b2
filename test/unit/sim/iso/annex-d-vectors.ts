/**
 * ISO/IEC 18013-5:2021 Annex D test vectors, from the fixture `test/fixtures/iso18013-5/annex-d-vectors.json`
 * (Multipaz `TestVectors.kt` as a JSON map of hex; its README names the source and commit). Loading fails
 * with a clear message when the file or a vector is missing instead of skipping tests.
 */
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** test/unit/sim/iso → test/ is three levels up. */
export const ANNEX_D_VECTORS_PATH = fileURLToPath(new URL('../../../fixtures/iso18013-5/annex-d-vectors.json', import.meta.url));

const NAMES = [
  'DEVICE_ENGAGEMENT',
  'E_DEVICE_KEY_BYTES',
  'DEVICE_REQUEST',
  'ITEMS_REQUEST',
  'READER_CERT',
  'READER_AUTH',
  'SESSION_TRANSCRIPT_BYTES',
  'SESSION_ESTABLISHMENT',
  'SESSION_DATA',
  'SESSION_TERMINATION',
  'DEVICE_RESPONSE',
  'DEVICE_RESPONSE_PORTRAIT_DATA',
  'DS_CERT',
  'EPHEMERAL_READER_KEY_X',
  'EPHEMERAL_READER_KEY_Y',
  'EPHEMERAL_READER_KEY_D',
  'EPHEMERAL_DEVICE_KEY_X',
  'EPHEMERAL_DEVICE_KEY_Y',
  'EPHEMERAL_DEVICE_KEY_D',
  'STATIC_DEVICE_KEY_X',
  'STATIC_DEVICE_KEY_Y',
  'STATIC_DEVICE_KEY_D',
] as const;

export type AnnexDName = (typeof NAMES)[number];

function load(): ReadonlyMap<AnnexDName, Uint8Array> {
  if (!existsSync(ANNEX_D_VECTORS_PATH)) {
    throw new Error(
      `Annex D vectors not found at ${ANNEX_D_VECTORS_PATH}: the fixture test/fixtures/iso18013-5/annex-d-vectors.json ` +
        'is part of the repository (see the README beside it); restore it from git.',
    );
  }
  const json = JSON.parse(readFileSync(ANNEX_D_VECTORS_PATH, 'utf8')) as Record<string, unknown>;
  const out = new Map<AnnexDName, Uint8Array>();
  for (const name of NAMES) {
    const hex = json[`ISO_18013_5_ANNEX_D_${name}`];
    if (typeof hex !== 'string' || !/^(?:[0-9a-fA-F]{2})+$/.test(hex)) {
      throw new Error(`${ANNEX_D_VECTORS_PATH}: ISO_18013_5_ANNEX_D_${name} is missing or not hex`);
    }
    out.set(name, Uint8Array.from(Buffer.from(hex, 'hex')));
  }
  return out;
}

const vectors = load();

/** A fresh copy of one vector. */
export function annexD(name: AnnexDName): Uint8Array {
  const bytes = vectors.get(name);
  if (bytes === undefined) throw new Error(`no Annex D vector ${name}`);
  return Uint8Array.from(bytes);
}

export function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('hex');
}

export function fromHex(text: string): Uint8Array {
  return Uint8Array.from(Buffer.from(text.replace(/\s+/g, ''), 'hex'));
}
