/**
 * What happens on the customer screen while staff use theirs (issue 28): a verification that starts, or
 * an outcome shown, while Settings or Diagnostics are open is never run unseen; a button goes back to it
 * (and locks, as leaving the staff screens always does). And an outcome a new customer replaced before it
 * cleared: its verdict and answer, when and by what, until it would have cleared (codes only, no values).
 */
import type { ReactNode } from 'react';
import { useTranslation } from 'react-i18next';
import type { Language, ScreenState } from '../../common/kiosk-api.js';
import type { KioskPhase, ReplacedOutcome } from '../../common/kiosk-view.js';

type Activity = 'running' | 'result' | 'message';

const ACTIVITY: Partial<Record<KioskPhase, Activity>> = {
  engaging: 'running',
  awaiting_card: 'running',
  ble_connecting: 'running',
  transferring: 'running',
  result: 'result',
  error: 'message',
  remove_phone: 'message',
};

/** The activity on the customer screen staff should know of, if any. */
export function counterActivityOf(phase: KioskPhase): Activity | undefined {
  return ACTIVITY[phase];
}

function ReplacedCard(props: { replaced: ReplacedOutcome; language: Language }): ReactNode {
  const { t } = useTranslation();
  const { replaced } = props;
  const time = (at: number): string =>
    new Date(at).toLocaleTimeString(props.language, { hour: '2-digit', minute: '2-digit', second: '2-digit' });
  const answer =
    replaced.answer.kind === 'age' && replaced.answer.threshold !== null
      ? t(`counterActivity.age.${replaced.answer.result}`, { age: replaced.answer.threshold })
      : t(`counterActivity.answer.${replaced.answer.result}`);
  return (
    <section
      className="staff-replaced"
      data-testid="replaced-outcome"
      data-verdict={replaced.verdict}
      data-answer={replaced.answer.result}
      aria-labelledby="staff-replaced-title"
    >
      <h2 id="staff-replaced-title" className="staff-replaced-title">
        {t('counterActivity.replacedTitle')}
      </h2>
      <p>
        {t('counterActivity.replaced', {
          answer,
          verdict: t(`counterActivity.verdict.${replaced.verdict}`),
          shownAt: time(replaced.shownAt),
          transport: t(`counterActivity.transport.${replaced.transport ?? 'unknown'}`),
          replacedAt: time(replaced.replacedAt),
          by: t(`counterActivity.transport.${replaced.replacedBy}`),
        })}
      </p>
      <p className="staff-replaced-until">{t('counterActivity.replacedUntil', { until: time(replaced.clearsAt) })}</p>
    </section>
  );
}

export function CounterActivity(props: { state: ScreenState; onShow: () => void }): ReactNode {
  const { t } = useTranslation();
  const activity = counterActivityOf(props.state.view.phase);
  const { replaced } = props.state;
  if (activity === undefined && replaced === null) return null;
  return (
    <div className="counter-activity">
      <div role="status" className="counter-activity-live">
        {activity === undefined ? null : (
          <p className={`counter-activity-note counter-activity-note--${activity}`} data-testid="counter-activity" data-activity={activity}>
            <span>{t(`counterActivity.${activity}`)}</span>{' '}
            <button type="button" className="button button--primary" data-testid="show-customer-screen" onClick={props.onShow}>
              {t('counterActivity.show')}
            </button>
          </p>
        )}
      </div>
      {replaced === null ? null : <ReplacedCard replaced={replaced} language={props.state.language} />}
    </div>
  );
}
