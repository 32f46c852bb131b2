/**
 * What is said for each customer screen (pure: no DOM, no i18next). The prompt of each moment in the
 * customer's language, and the outcome as an answer derived from the outcome screen's own presentation
 * (outcome/present.ts), so speech can never be greener than the screen: "accepted" only when the screen
 * shows the verified verdict (and, for an age request, the met age answer).
 *
 * Privacy: the speaker (no headset) never says any of the holder's data — the answers are fixed sentences
 * with at most the request's age threshold. Only a private (headset) answer for a verified document may add
 * the elements staff listed in `speech.privateElements`, and it is marked `private` (the host neither
 * caches nor keeps it).
 */
import type { CameraState, Language, ReaderPosition } from '../../common/kiosk-api.js';
import { LANGUAGES } from '../../common/kiosk-api.js';
import type { KioskView } from '../../common/kiosk-view.js';
import { readinessOf, type Devices } from '../../common/readiness.js';
import { isNeedsStaffCode } from '../../common/backend-failure-kinds.js';
import { commonEn } from '../i18n/common-en.js';
import { commonEs } from '../i18n/common-es.js';
import { commonFr } from '../i18n/common-fr.js';
import { MDL_NAMESPACE } from '../outcome/labels.js';
import { outcomeResources } from '../outcome/locales.js';
import { presentOutcome } from '../outcome/present.js';
import { errorLine } from '../screens/error-copy.js';
import { progressVariantFor, type CustomerScreen } from '../screens/screen-name.js';
import { speechStrings, type SpeechStrings } from './speech-locales.js';

export interface Utterance {
  /** Which prompt this is (`ready`, `progress.approve`, `error.timeout`, `outcome.age_accepted` …): never a value. */
  readonly key: string;
  readonly text: string;
  readonly language: Language;
  /** Holds what only a headset may say. */
  readonly private: boolean;
}

export interface UtteranceInput {
  readonly screen: CustomerScreen;
  /** The core's view (null while disconnected). */
  readonly view: KioskView | null;
  readonly language: Language;
  readonly readerPosition?: ReaderPosition | undefined;
  /** This screen's camera, for the ways Ready offers (as the screen does). */
  readonly camera?: CameraState | undefined;
  /** Say what the keys do (on Ready, while speech is on). */
  readonly sayKeys: boolean;
  /** A headset is the output: the answer may add `privateElements`. */
  readonly private: boolean;
  readonly privateElements: readonly string[];
}

/** Longest value of a private element said aloud (a name, a date); longer ones are not said at all. */
const MAX_PRIVATE_VALUE = 80;

const COMMON = { en: commonEn, es: commonEs, fr: commonFr } as const;

/** A dotted key of the screen's own strings (error copy), in the given language. */
function commonText(language: Language, key: string): string {
  let at: unknown = COMMON[language];
  for (const part of key.split('.')) at = typeof at === 'object' && at !== null ? (at as Record<string, unknown>)[part] : undefined;
  return typeof at === 'string' ? at : key;
}

function fill(template: string, values: Readonly<Record<string, string | number>>): string {
  return template.replace(/\{\{(\w+)\}\}/g, (whole, name: string) => (name in values ? String(values[name]) : whole));
}

function say(key: string, language: Language, ...parts: string[]): Utterance {
  return { key, text: parts.filter((p) => p.length > 0).join(' '), language, private: false };
}

function readyUtterance(input: UtteranceInput, s: SpeechStrings): Utterance {
  const devices = input.view?.devices;
  const ways = devices ? readinessOf(devices, input.camera).ways : { tap: true, camera: true, scanner: true };
  const parts: string[] = [];
  if (ways.tap) {
    parts.push(s.ready.tap);
    if (input.readerPosition !== undefined) parts.push(s.ready.readerAt[input.readerPosition]);
    if (ways.camera) parts.push(s.ready.orQr);
  } else {
    parts.push(ways.camera ? s.ready.qr : s.ready.qrScanner);
  }
  if (input.sayKeys) parts.push(s.keys);
  return say(`ready${ways.tap ? '.tap' : '.qr'}`, input.language, ...parts);
}

/** The element's label in the customer's language (the outcome screen's label), else its identifier in words. */
function elementLabel(language: Language, identifier: string): string {
  const labels: Readonly<Record<string, string>> = outcomeResources[language].label.mdl;
  return labels[identifier] ?? identifier.replaceAll('_', ' ');
}

/** The allowed elements' values that can be said (short text, numbers, yes/no), in the order staff listed them. */
function privateDetails(view: KioskView, language: Language, allowed: readonly string[]): string[] {
  const outcome = view.outcome;
  if (!outcome) return [];
  const mdl = outcome.response[MDL_NAMESPACE];
  if (!mdl) return [];
  const details: string[] = [];
  for (const identifier of allowed) {
    if (identifier === 'portrait' || !Object.hasOwn(mdl, identifier)) continue;
    const value = mdl[identifier];
    if (typeof value === 'string' && value.length > 0 && value.length <= MAX_PRIVATE_VALUE)
      details.push(`${elementLabel(language, identifier)}: ${value}`);
    else if (typeof value === 'number' && Number.isFinite(value)) details.push(`${elementLabel(language, identifier)}: ${value}`);
  }
  return details;
}

/** The outcome as an answer: the same decision the outcome screen draws (fail closed). */
function outcomeUtterance(input: UtteranceInput, view: KioskView, s: SpeechStrings): Utterance {
  const { language } = input;
  const model = presentOutcome(view.outcome);
  const o = s.outcome;
  let answer: Utterance;
  switch (model.verdict) {
    case 'declined':
      return say('outcome.declined', language, o.declined);
    case 'rejected':
      return say('outcome.not_accepted', language, o.notAccepted);
    case 'undetermined':
    case 'unknown':
      return say('outcome.not_verified', language, o.notVerified);
    case 'verified':
      if (model.age !== undefined) {
        if (model.age.answer === 'yes') answer = say('outcome.age_accepted', language, fill(o.ageAccepted, { age: model.age.threshold }));
        else if (model.age.answer === 'no')
          return say('outcome.age_not_accepted', language, fill(o.ageNotAccepted, { age: model.age.threshold }));
        else return say('outcome.not_verified', language, o.notVerified);
      } else if (model.notMet) return say('outcome.required_missing', language, o.requiredMissing);
      else answer = say('outcome.accepted', language, o.accepted);
      break;
  }
  // Only a verified document's data, only through a headset, only what staff allowed.
  if (!input.private || input.privateElements.length === 0) return answer;
  const details = privateDetails(view, language, input.privateElements);
  if (details.length === 0) return answer;
  return {
    key: `${answer.key}.private`,
    text: `${answer.text} ${fill(o.details, { details: details.join(', ') })}`,
    language,
    private: true,
  };
}

function errorUtterance(input: UtteranceInput, view: KioskView, s: SpeechStrings): Utterance {
  const code = view.error?.code ?? 'unknown';
  const line = errorLine(code, (key) => commonText(input.language, key));
  const retryable = view.error?.retryable ?? true;
  return say(`error.${code}`, input.language, s.error.title, line, retryable ? s.error.again : s.error.askStaff);
}

/** What is said for this screen, or null when it says nothing (no state to speak of). */
export function utteranceFor(input: UtteranceInput): Utterance | null {
  const s = speechStrings[input.language];
  const { language, view } = input;
  switch (input.screen) {
    case 'disconnected':
      return say('disconnected', language, s.disconnected);
    case 'waiting':
      return say('waiting', language, s.waiting);
    case 'starting':
      return say('starting', language, s.starting);
    case 'connecting':
      return say('connecting', language, s.connecting);
    case 'stopped':
      return say('stopped', language, s.stopped);
    case 'ready':
      return readyUtterance(input, s);
  }
  if (!view) return null;
  switch (input.screen) {
    case 'offline': {
      const notAnswering = view.error?.code === 'backend_not_answering';
      return say(
        notAnswering ? 'offline.not_answering' : 'offline',
        language,
        notAnswering ? s.offline.notAnswering : s.offline.unavailable,
      );
    }
    case 'config_error':
    case 'cannot_verify': {
      const error = view.error;
      const named = error !== null && (view.phase === 'cannot_verify' || isNeedsStaffCode(error.code));
      return named
        ? say(
            `needs_staff.${error.code}`,
            language,
            errorLine(error.code, (key) => commonText(language, key)),
            s.needsStaff,
          )
        : say('needs_staff', language, s.needsStaff);
    }
    case 'engaging':
    case 'awaiting_card':
    case 'ble_connecting':
    case 'transferring': {
      // The same variant the progress screen shows (screens/screen-name.ts).
      const variant = progressVariantFor({ view });
      return variant === null ? null : say(`progress.${variant}`, language, s.progress[variant]);
    }
    case 'remove_phone':
      return view.prompt === 'remove_to_retry' ? say('remove.retry', language, s.remove.retry) : say('remove', language, s.remove.done);
    case 'error':
      return errorUtterance(input, view, s);
    case 'result':
      return view.outcome ? outcomeUtterance(input, view, s) : say('waiting', language, s.waiting);
  }
}

/** What the badge on the customer screens says while speech is on. */
export function speechBadgeText(language: Language, volume: number, headset: boolean): string {
  const s = speechStrings[language];
  return fill(headset ? s.badgePrivate : s.badge, { volume: Math.round(volume * 100) });
}

// ------------------------------------------------------------------ every fixed prompt, for the hearing test

const ALL_USABLE: Devices = {
  nfc: { usable: true },
  qr: { usable: true },
  bleCentral: { usable: true },
  blePeripheral: { usable: true },
};

/** A view of this phase with every device usable (for the fixed prompts, and tests). */
export function fixedView(phase: KioskView['phase'], change: Partial<KioskView> = {}): KioskView {
  return {
    phase,
    prompt: 'tap_or_scan',
    transport: null,
    role: null,
    progress: { step: 0, apdus: 0, bleMessages: 0 },
    outcome: null,
    error: null,
    profile: 'age_over_21',
    devices: ALL_USABLE,
    backend: 'connected',
    at: 0,
    ...change,
  };
}

/** A verified outcome with no data, changed as given (for the fixed answers, and tests). */
export function outcomeView(change: Partial<NonNullable<KioskView['outcome']>>): NonNullable<KioskView['outcome']> {
  return {
    verdict: 'verified',
    reasons: [],
    answer: { kind: 'elements', result: 'met', missing: [] },
    response: {},
    docTypes: ['org.iso.18013.5.1.mDL'],
    issuerAuthentication: 'Valid',
    deviceAuthentication: 'Valid',
    errors: {},
    warnings: {},
    source: 'complete',
    ...change,
  };
}

/** The error codes the screen has copy for (screens/error-copy.ts), and one it does not. */
const ERROR_CODES = [
  'backend_error',
  'protocol_violation',
  'timeout',
  'ble_unavailable',
  'no_input',
  'starting',
  'ble_setup_failed',
  'ble_link_lost',
  'ble_transfer_failed',
  'connection_lost',
  'cancelled',
  'backend_unavailable',
  'backend_not_answering',
  'config_error',
  'backend_refuses_socket',
  'something_new',
] as const;

/** One input per fixed prompt (every screen, variant, error copy and answer), speaker mode. */
export function fixedPromptInputs(language: Language): UtteranceInput[] {
  const base = { language, sayKeys: false, private: false, privateElements: [] } as const;
  const views: [CustomerScreen, KioskView | null][] = [
    ['disconnected', null],
    ['waiting', null],
    ['starting', fixedView('starting')],
    ['connecting', fixedView('connecting')],
    ['stopped', fixedView('stopped')],
    ['ready', fixedView('ready')],
    ['ready', fixedView('ready', { devices: { ...ALL_USABLE, nfc: { usable: false } } })],
    ['offline', fixedView('offline')],
    ['offline', fixedView('offline', { error: { code: 'backend_not_answering', detail: '', retryable: true } })],
    ['config_error', fixedView('config_error')],
    ['cannot_verify', fixedView('cannot_verify', { error: { code: 'ble_unavailable', detail: '', retryable: false } })],
    ['config_error', fixedView('config_error', { error: { code: 'backend_refuses_socket', detail: '', retryable: false } })],
    ['engaging', fixedView('engaging', { transport: 'nfc' })],
    ['engaging', fixedView('engaging', { transport: 'qr' })],
    ['engaging', fixedView('engaging')],
    ['awaiting_card', fixedView('awaiting_card', { prompt: 'tap_again' })],
    ['ble_connecting', fixedView('ble_connecting')],
    ['transferring', fixedView('transferring', { prompt: 'approve_on_phone' })],
    ['transferring', fixedView('transferring', { prompt: 'receiving' })],
    ['remove_phone', fixedView('remove_phone', { prompt: 'remove_phone' })],
    ['remove_phone', fixedView('remove_phone', { prompt: 'remove_to_retry' })],
    ...ERROR_CODES.flatMap((code): [CustomerScreen, KioskView][] => [
      ['error', fixedView('error', { error: { code, detail: '', retryable: true } })],
    ]),
    ['error', fixedView('error', { error: { code: 'no_input', detail: '', retryable: false } })],
    ...[18, 21].flatMap((threshold): [CustomerScreen, KioskView][] => [
      ['result', fixedView('result', { outcome: outcomeView({ answer: { kind: 'age', threshold, result: 'met', missing: [] } }) })],
      ['result', fixedView('result', { outcome: outcomeView({ answer: { kind: 'age', threshold, result: 'not_met', missing: [] } }) })],
    ]),
    ['result', fixedView('result', { outcome: outcomeView({}) })],
    ['result', fixedView('result', { outcome: outcomeView({ answer: { kind: 'elements', result: 'not_met', missing: [] } }) })],
    ['result', fixedView('result', { outcome: outcomeView({ verdict: 'rejected', reasons: ['errors_reported'] }) })],
    [
      'result',
      fixedView('result', {
        outcome: outcomeView({
          verdict: 'rejected',
          reasons: ['nothing_shared'],
          issuerAuthentication: 'Unchecked',
          deviceAuthentication: 'Unchecked',
        }),
      }),
    ],
    ['result', fixedView('result', { outcome: outcomeView({ verdict: 'undetermined' }) })],
  ];
  const inputs = views.map(([screen, view]): UtteranceInput => ({ ...base, screen, view }));
  inputs.push({ ...base, screen: 'ready', view: fixedView('ready'), sayKeys: true });
  return inputs;
}

/** Every fixed prompt in every language (no holder data in any), each text once. */
export function allPromptUtterances(): Utterance[] {
  const seen = new Set<string>();
  const all: Utterance[] = [];
  for (const language of LANGUAGES)
    for (const input of fixedPromptInputs(language)) {
      const utterance = utteranceFor(input);
      if (utterance === null || seen.has(`${language}\n${utterance.text}`)) continue;
      seen.add(`${language}\n${utterance.text}`);
      all.push(utterance);
    }
  return all;
}
