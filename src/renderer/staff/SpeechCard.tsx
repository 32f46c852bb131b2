/** Diagnostics' Speech card (issue 32): which voice speaks, where it goes, whether it works (speech-card.ts). */
import type { ReactNode } from 'react';
import { useTranslation } from 'react-i18next';
import type { SpeechDiagnostics } from '../../common/speech.js';
import { speechCard } from './speech-card.js';

export function SpeechCard(props: { speech: SpeechDiagnostics | undefined }): ReactNode {
  const { t } = useTranslation();
  const card = speechCard(props.speech, t);
  return (
    <section className="staff-card" aria-labelledby="speech-title" data-testid="speech-card">
      <h2 id="speech-title">{t('diagnostics.speech.title')}</h2>
      {card.notice ? <p className="body-text">{card.notice}</p> : null}
      {card.rows.length > 0 ? (
        <dl className="facts">
          {card.rows.map((row) => (
            <div key={row.name} className={`fact-row${row.problem ? ' fact-row--problem' : ''}`} data-row={row.name}>
              <dt>{row.label}</dt>
              <dd>
                {row.problem ? <span aria-hidden="true">✕ </span> : null}
                {row.value}
              </dd>
            </div>
          ))}
        </dl>
      ) : null}
    </section>
  );
}
