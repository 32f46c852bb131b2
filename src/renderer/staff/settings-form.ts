/**
 * The settings form as plain data: what the fields show for a `Settings`, and the `SettingsUpdate` that
 * sends only what the staff changed, with field errors found before sending (timeouts in seconds). The
 * host validates again and answers with field errors of its own, keyed the same way.
 *
 * The request profile is not part of it: choosing one applies and persists it at once (`setProfile`), so
 * the screen has one way to change it (see SettingsScreen).
 */
import {
  EditableTimeouts,
  type BleRoles,
  type FieldError,
  type Language,
  type LockSource,
  type Settings,
  type SettingsUpdate,
} from '../../common/kiosk-api.js';
import {
  buildSpeechUpdate,
  SPEECH_FIELD_KEYS,
  speechValuesFrom,
  type SpeechFieldKey,
  type SpeechFormError,
  type SpeechValues,
} from './speech-form.js';

export type FieldKey =
  | 'backendUrl'
  | 'apiKey'
  | 'profile'
  | 'pcscReader'
  | 'bleRoles'
  | 'cameraDeviceId'
  | 'defaultLanguage'
  | 'timeouts.resultDisplayMs'
  | 'timeouts.errorDisplayMs'
  | 'timeouts.removePhoneMs'
  | SpeechFieldKey;

export const TIMEOUT_KEYS = ['resultDisplayMs', 'errorDisplayMs', 'removePhoneMs'] as const;
export type TimeoutKey = (typeof TIMEOUT_KEYS)[number];

export interface FormValues {
  readonly backendUrl: string;
  /** A new API key typed by staff; empty = unchanged. Never filled from the host. */
  readonly apiKey: string;
  readonly clearApiKey: boolean;
  readonly pcscReader: string;
  readonly bleRoles: BleRoles;
  /** '' = the system's default camera. */
  readonly cameraDeviceId: string;
  readonly defaultLanguage: Language;
  /** Seconds, as typed. */
  readonly timeouts: Readonly<Record<TimeoutKey, string>>;
  /** The Speech section (speech-form.ts). */
  readonly speech: SpeechValues;
}

/** A field error before translation: a key of the `common` namespace and its values, or the host's text. */
export type FormError =
  | { readonly kind: 'range'; readonly min: number; readonly max: number }
  | { readonly kind: 'host'; readonly message: string }
  | SpeechFormError;

/** The bounds of each timeout, in whole seconds, from the contract's schema. */
export function timeoutBounds(key: TimeoutKey): { min: number; max: number } {
  const schema = EditableTimeouts.shape[key];
  return { min: Math.ceil((schema.minValue ?? 0) / 1_000), max: Math.floor((schema.maxValue ?? 0) / 1_000) };
}

export function valuesFrom(settings: Settings): FormValues {
  const seconds = (ms: number): string => String(Math.round(ms / 1_000));
  return {
    backendUrl: settings.backendUrl ?? '',
    apiKey: '',
    clearApiKey: false,
    pcscReader: settings.pcscReader ?? '',
    bleRoles: settings.bleRoles,
    cameraDeviceId: settings.cameraDeviceId ?? '',
    defaultLanguage: settings.defaultLanguage,
    timeouts: {
      resultDisplayMs: seconds(settings.timeouts.resultDisplayMs),
      errorDisplayMs: seconds(settings.timeouts.errorDisplayMs),
      removePhoneMs: seconds(settings.timeouts.removePhoneMs),
    },
    speech: speechValuesFrom(settings.speech),
  };
}

/** A key set by the environment (`timeouts` locks every timeout). */
export function isLocked(key: FieldKey, locked: readonly string[]): boolean {
  return locked.includes(key) || (key.startsWith('timeouts.') && locked.includes('timeouts'));
}

/**
 * Whether a key is locked and, when the host says, by which source (the screen names it): `false` when
 * editable, the source, or `true` for a lock of unknown origin.
 */
export function lockOf(key: FieldKey, settings: Pick<Settings, 'locked' | 'lockedBy'>): LockSource | boolean {
  if (!isLocked(key, settings.locked)) return false;
  const by = settings.lockedBy;
  if (by === undefined) return true;
  return (
    (Object.hasOwn(by, key) ? by[key] : key.startsWith('timeouts.') && Object.hasOwn(by, 'timeouts') ? by.timeouts : undefined) ?? true
  );
}

export interface BuiltUpdate {
  readonly update: SettingsUpdate;
  readonly errors: Partial<Record<FieldKey, FormError>>;
}

/** The changes against `settings`, leaving out locked keys; errors for timeouts out of range and the speech fields'. */
export function buildUpdate(values: FormValues, settings: Settings): BuiltUpdate {
  const update: { -readonly [K in keyof SettingsUpdate]: SettingsUpdate[K] } = {};
  const errors: Partial<Record<FieldKey, FormError>> = {};
  const open = (key: FieldKey): boolean => !isLocked(key, settings.locked);
  const text = (value: string): string | null => (value.trim() === '' ? null : value.trim());

  if (open('backendUrl') && text(values.backendUrl) !== settings.backendUrl) update.backendUrl = text(values.backendUrl);
  if (open('apiKey')) {
    if (values.apiKey !== '') update.apiKey = values.apiKey;
    else if (values.clearApiKey && settings.apiKeySet) update.clearApiKey = true;
  }
  if (open('pcscReader') && text(values.pcscReader) !== settings.pcscReader) update.pcscReader = text(values.pcscReader);
  if (open('bleRoles') && values.bleRoles !== settings.bleRoles) update.bleRoles = values.bleRoles;
  const camera = values.cameraDeviceId === '' ? null : values.cameraDeviceId;
  if (open('cameraDeviceId') && camera !== settings.cameraDeviceId) update.cameraDeviceId = camera;
  if (open('defaultLanguage') && values.defaultLanguage !== settings.defaultLanguage) update.defaultLanguage = values.defaultLanguage;

  const timeouts: Partial<Record<TimeoutKey, number>> = {};
  for (const key of TIMEOUT_KEYS) {
    const field: FieldKey = `timeouts.${key}`;
    if (!open(field)) continue;
    const raw = values.timeouts[key].trim();
    const { min, max } = timeoutBounds(key);
    const seconds = /^[0-9]{1,6}$/.test(raw) ? Number(raw) : NaN;
    if (!Number.isInteger(seconds) || seconds < min || seconds > max) {
      errors[field] = { kind: 'range', min, max };
      continue;
    }
    const ms = seconds * 1_000;
    if (ms !== settings.timeouts[key]) timeouts[key] = ms;
  }
  if (Object.keys(timeouts).length > 0) update.timeouts = timeouts;
  const speech = buildSpeechUpdate(values.speech, settings, open);
  if (speech.speech !== undefined) update.speech = speech.speech;
  return { update, errors: { ...errors, ...speech.errors } };
}

const FIELD_KEYS: readonly FieldKey[] = [
  'backendUrl',
  'apiKey',
  'profile',
  'pcscReader',
  'bleRoles',
  'cameraDeviceId',
  'defaultLanguage',
  'timeouts.resultDisplayMs',
  'timeouts.errorDisplayMs',
  'timeouts.removePhoneMs',
  ...SPEECH_FIELD_KEYS,
];

/** The host's field errors, by field; errors on keys the form does not show are returned apart. */
export function hostErrors(errors: readonly FieldError[]): { byField: Partial<Record<FieldKey, FormError>>; other: string[] } {
  const byField: Partial<Record<FieldKey, FormError>> = {};
  const other: string[] = [];
  for (const e of errors) {
    const key = FIELD_KEYS.find(
      (k) => k === e.key || (e.key === 'clearApiKey' && k === 'apiKey') || (e.key === 'timeouts' && k === 'timeouts.resultDisplayMs'),
    );
    if (key && !byField[key]) byField[key] = { kind: 'host', message: e.message };
    else other.push(e.key ? `${e.key}: ${e.message}` : e.message);
  }
  return { byField, other };
}
