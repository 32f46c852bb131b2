/**
 * The backend is unreachable, or not answering (a silent backend: it takes the traffic and answers nothing),
 * and the kiosk retries with backoff; staff may retry at once.
 */
import type { ReactNode } from 'react';
import { useTranslation } from 'react-i18next';
import type { ScreenState } from '../../common/kiosk-api.js';
import { UnplugIcon } from '../components/icons.js';
import { ScreenFrame } from '../components/ScreenFrame.js';
import { StaffDetail } from '../components/StaffDetail.js';
import { Spinner } from '../components/Spinner.js';

export function OfflineScreen(props: { state: ScreenState; onRetry: () => void }): ReactNode {
  const { t } = useTranslation();
  const { error } = props.state.view;
  return (
    <ScreenFrame title={t('offline.title')} tone="problem" icon={<UnplugIcon />}>
      <p className="lead" data-testid="offline-line">
        {error?.code === 'backend_not_answering' ? t('offline.notAnswering') : t('offline.body')}
      </p>
      <Spinner />
      <button type="button" className="button button--secondary" data-testid="retry-button" onClick={props.onRetry}>
        {t('offline.retry')}
      </button>
      {error ? <StaffDetail>{error.detail}</StaffDetail> : null}
    </ScreenFrame>
  );
}
