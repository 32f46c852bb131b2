/** The customer's language for this visit (English, Spanish, French); back to the default afterwards. */
import type { ReactNode } from 'react';
import { useTranslation } from 'react-i18next';
import { LANGUAGES, type Language } from '../../common/kiosk-api.js';

export function LanguageSwitch(props: { current: Language; onChoose: (language: Language) => void }): ReactNode {
  const { t } = useTranslation();
  const names: Record<Language, string> = { en: t('lang.en'), es: t('lang.es'), fr: t('lang.fr') };
  return (
    <div className="language-switch" role="group" aria-label={t('lang.choose')}>
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
