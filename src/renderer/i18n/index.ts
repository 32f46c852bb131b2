/**
 * i18next with every string bundled (no network, no storage): namespaces `common` (this app), `outcome`
 * (the outcome screen), `qr` (the QR input) and `events` (diagnostics' events in words). No language detector: the language comes from the kiosk's
 * state (the customer's choice for this visit, back to the default for the next customer).
 */
import i18next, { type i18n } from 'i18next';
import { initReactI18next } from 'react-i18next';
import { LANGUAGES, type Language } from '../../common/kiosk-api.js';
import { outcomeResources } from '../outcome/locales.js';
import { qrResources } from '../qr/locales.js';
import { eventResources } from '../staff/event-locales.js';
import { commonEn } from './common-en.js';
import { commonEs } from './common-es.js';
import { commonFr } from './common-fr.js';

export const NAMESPACES = ['common', 'outcome', 'qr', 'events'] as const;
export type Namespace = (typeof NAMESPACES)[number];

export const commonResources = { en: commonEn, es: commonEs, fr: commonFr } as const;

/** Every bundled string, by language then namespace. */
export function bundledResources(): Record<Language, Record<Namespace, object>> {
  const out = {} as Record<Language, Record<Namespace, object>>;
  for (const lng of LANGUAGES)
    out[lng] = { common: commonResources[lng], outcome: outcomeResources[lng], qr: qrResources[lng], events: eventResources[lng] };
  return out;
}

/** A ready (synchronously initialised) i18next instance for React. */
export function createI18n(language: Language = 'en'): i18n {
  const instance = i18next.createInstance();
  void instance.use(initReactI18next).init({
    resources: bundledResources(),
    lng: language,
    fallbackLng: 'en',
    supportedLngs: [...LANGUAGES],
    ns: [...NAMESPACES],
    defaultNS: 'common',
    // React escapes what it renders; escaping here too would show `&amp;` to customers.
    interpolation: { escapeValue: false },
    returnNull: false,
    initAsync: false,
  });
  return instance;
}
