/** The customer's language for this visit (English, Spanish, French); back to the default afterwards. */
import type { ReactNode } from 'react';
import { useTranslation } from 'react-i18next';
import { LANGUAGES, type Language } from '../../common/kiosk-api.js';

/** `compact`: the smaller switch of the status bar, for the screens other than Ready. */
export function LanguageSwitch(props: { current: Language; onChoose: (language: Language) => void; compact?: boolean }): ReactNode {
  const { t } = useTranslation();
  const names: Record<Language, string> = { en: t('lang.en'), es: t('lang.es'), fr: t('lang.fr') };
  return (
    <div
      className={props.compact === true ? 'language-switch language-switch--compact' : 'language-switch'}
      role="group"
      aria-label={t('lang.choose')}
      data-testid={props.compact === true ? 'language-switch-bar' : 'language-switch'}
    >
      {LANGUAGES.map((lng) => (
        <button
          key={lng}
          type="button"
          lang={lng}
          data-testid={`lang-${lng}`}
          aria-pressed={props.current === lng}
          className={props.current === lng ? 'lang-button lang-button--current' : 'lang-button'}
          onClick={() => props.onChoose(lng)}
        >
          {names[lng]}
        </button>
      ))}
    </div>
  );
}
