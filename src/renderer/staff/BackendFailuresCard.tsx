/**
 * The diagnostics' "Backend connection" card: why the kiosk cannot keep a session, as its retry policy saw
 * it — the last failure (its kind in words, the HTTP status, the step, when, and the kiosk's own English
 * detail naming what to check), how many failures in a row, the request budget in use, and every failure
 * since start by kind. Kinds and codes only come from the host; the detail is the kiosk's, never a peer's.
 */
import type { ReactNode } from 'react';
import { useTranslation } from 'react-i18next';
import type { BackendFailures } from '../../common/kiosk-api.js';
import { failureKindText, failureStageText } from './diagnostic-texts.js';

export function BackendFailuresCard(props: { backend: BackendFailures; dateTime: (at: number) => string }): ReactNode {
  const { t } = useTranslation();
  const { lastFailure, consecutive, totals, requestsLastMinute, maxRequestsPerMinute } = props.backend;
  const failing = consecutive > 0;
  const spent = requestsLastMinute >= maxRequestsPerMinute;
  const totalEntries = Object.entries(totals).filter(([, n]) => n > 0);
  return (
    <section className="staff-card" aria-labelledby="backend-failures-title" data-testid="backend-failures" data-failing={failing}>
      <h2 id="backend-failures-title">{t('diagnostics.backend.title')}</h2>
      {lastFailure === null ? <p className="body-text">{t('diagnostics.backend.none')}</p> : null}
      {lastFailure !== null && !failing ? <p className="body-text">{t('diagnostics.backend.working')}</p> : null}
      <dl className="facts">
        {lastFailure !== null ? (
          <>
            <div className={failing ? 'fact-row fact-row--problem' : 'fact-row'}>
              <dt>{t('diagnostics.backend.lastFailure')}</dt>
              <dd data-backend="kind" data-kind={lastFailure.kind}>
                {failureKindText(lastFailure.kind, t)}
              </dd>
            </div>
            <div className="fact-row">
              <dt>{t('diagnostics.backend.status')}</dt>
              <dd data-backend="status">{lastFailure.status ?? t('diagnostics.backend.noStatus')}</dd>
            </div>
            <div className="fact-row">
              <dt>{t('diagnostics.backend.stage')}</dt>
              <dd data-backend="stage">{failureStageText(lastFailure.stage, t)}</dd>
            </div>
            <div className="fact-row">
              <dt>{t('diagnostics.backend.at')}</dt>
              <dd data-backend="at">{props.dateTime(lastFailure.at)}</dd>
            </div>
            <div className="fact-row fact-row--text">
              <dt>{t('diagnostics.backend.detail')}</dt>
              <dd data-backend="detail" lang="en">
                {lastFailure.detail}
              </dd>
            </div>
          </>
        ) : null}
        <div className={failing ? 'fact-row fact-row--problem' : 'fact-row'}>
          <dt>{t('diagnostics.backend.inARow')}</dt>
          <dd data-backend="consecutive">{consecutive}</dd>
        </div>
        <div className={spent ? 'fact-row fact-row--problem' : 'fact-row'}>
          <dt>{t('diagnostics.backend.requests')}</dt>
          <dd data-backend="requests" data-spent={spent}>
            {t('diagnostics.backend.requestsOf', { used: requestsLastMinute, max: maxRequestsPerMinute })}
            {/* Why nothing happens for a while: the kiosk protects the backend from its own retries. */}
            {spent ? <span className="cell-detail"> — {t('diagnostics.backend.budgetSpent')}</span> : null}
          </dd>
        </div>
      </dl>
      {totalEntries.length > 0 ? (
        <>
          <h3 className="card-subheading">{t('diagnostics.backend.totals')}</h3>
          <dl className="facts" data-testid="backend-failure-totals">
            {totalEntries.map(([kind, count]) => (
              <div key={kind} className="fact-row" data-total={kind}>
                <dt>{failureKindText(kind, t)}</dt>
                <dd>{count}</dd>
              </div>
            ))}
          </dl>
        </>
      ) : null}
    </section>
  );
}
