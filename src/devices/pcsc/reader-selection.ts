/**
 * Which PC/SC reader the kiosk uses.
 *
 * Dual-interface readers list several PC/SC readers: the ACR1252U shows a PICC (contactless) interface and
 * a SAM slot, and the SAM slot raises errors when polled (nfc-pcsc#56, multipaz
 * PR #1847). So SAM slots are never chosen automatically, and contactless interfaces win over others.
 *
 * A configured selector is either a name, matched case-insensitively, exactly or as a part of the reader
 * name (`"ACR1252"` matches `"ACS ACR1252 1S CL Reader PICC 0"`), or a regular expression written
 * `/…/flags`. An exact match wins over a partial one; ties go to the alphabetically first name, so the
 * choice does not depend on the order readers were announced in.
 */
import { escapePeerText } from '../../common/peer-text.js';
import { errorText } from '../../common/error-text.js';

/**
 * Reader names come from the PC/SC service and its drivers, i.e. from outside the kiosk: printed, logged or
 * shown only as this label, escaped (control and bidi characters, peer-text.ts) and cut to pcsc-lite's
 * MAX_READERNAME (128, PCSC/pcsclite.h), which no real reader name exceeds.
 */
export const READER_LABEL_CHARS = 128;

/** A name longer than this is not a reader's (twice pcsc-lite's limit): such a reader is never used. */
export const MAX_READER_NAME_CHARS = 2 * READER_LABEL_CHARS;

export function readerLabel(name: string): string {
  return escapePeerText(name, READER_LABEL_CHARS);
}

export interface ReaderSelector {
  /** For diagnostics: what is being looked for. */
  readonly description: string;
  /** 0 = never use; a higher score wins. */
  score(name: string): number;
}

const SAM_SLOT = /\bSAM\b/i;
const CONTACTLESS = /\bPICC\b|contactless|\bCL\b/i;

export class ReaderSelectorError extends Error {
  override readonly name = 'ReaderSelectorError';
}

/** The automatic choice: any reader but a SAM slot, contactless interfaces first. */
export const automaticSelector: ReaderSelector = {
  description: 'the first contactless reader (SAM slots excluded)',
  score: (name) => (SAM_SLOT.test(name) ? 0 : CONTACTLESS.test(name) ? 2 : 1),
};

export function readerSelector(configured: string | undefined): ReaderSelector {
  if (configured === undefined || configured.trim() === '') return automaticSelector;
  const regex = /^\/(.+)\/([a-z]*)$/s.exec(configured);
  if (regex) {
    let pattern: RegExp;
    try {
      pattern = new RegExp(regex[1] ?? '', (regex[2] ?? '').replace(/[gy]/g, ''));
    } catch (e) {
      throw new ReaderSelectorError(`invalid reader pattern ${configured}: ${errorText(e)}`);
    }
    return { description: `a reader matching ${configured}`, score: (name) => (pattern.test(name) ? 1 : 0) };
  }
  const wanted = configured.trim().toLowerCase();
  return {
    description: `the reader named "${configured.trim()}"`,
    score: (name) => {
      const lower = name.toLowerCase();
      return lower === wanted ? 2 : lower.includes(wanted) ? 1 : 0;
    },
  };
}

/** The reader to use among those present now, if any qualifies. */
export function chooseReader(names: Iterable<string>, selector: ReaderSelector): string | undefined {
  let best: { name: string; score: number } | undefined;
  for (const name of names) {
    const score = selector.score(name);
    if (score <= 0) continue;
    if (!best || score > best.score || (score === best.score && name < best.name)) best = { name, score };
  }
  return best?.name;
}
