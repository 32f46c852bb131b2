/**
 * The verification failed: a friendly line for the customer, the staff detail, "Try again", and "More
 * time" (WCAG 2.2.1 Timing Adjustable: the screen clears by itself, and a customer who reads slowly can
 * keep it; the core bounds how often).
 */
import type { ReactNode } from 'react';
import { useTranslation } from 'react-i18next';
import type { ScreenState } from '../../common/kiosk-api.js';
import { WarningIcon } from '../components/icons.js';
import { ScreenFrame } from '../components/ScreenFrame.js';
import { StaffDetail } from '../components/StaffDetail.js';
import { secondsUntil, useNow } from '../components/use-now.js';
import { errorLine } from './error-copy.js';

export function ErrorScreen(props: { state: ScreenState; onTryAgain: () => void; onMoreTime: () => void }): ReactNode {
  const { t } = useTranslation();
  const { error } = props.state.view;
  const { clearsAt } = props.state;
  const now = useNow(1_000, clearsAt !== null);
  return (
    <ScreenFrame title={t('error.title')} tone="problem" icon={<WarningIcon />}>
      <p className="lead" data-testid="error-line">
        {errorLine(error?.code ?? 'unknown', t)}
      </p>
      <p className="body-text">{error && !error.retryable ? t('error.needsStaff') : t('error.askStaff')}</p>
      <button type="button" className="button button--primary" data-testid="retry-button" onClick={props.onTryAgain}>
        {t('error.retry')}
      </button>
      {clearsAt !== null ? (
        <div className="countdown-row">
          <p className="countdown" data-testid="error-countdown">
            {t('error.clearsIn', { count: secondsUntil(clearsAt, now) })}
          </p>
          <button
            type="button"
            className="button button--secondary button--small"
            data-testid="more-time-button"
            onClick={props.onMoreTime}
          >
            {t('error.moreTime')}
          </button>
        </div>
      ) : null}
      {error ? (
        <StaffDetail>
          {t('error.code', { code: error.code })} · {error.detail}
        </StaffDetail>
      ) : null}
    </ScreenFrame>
  );
}
