/**
 * The backend asked for a re-tap (`awaiting_card`). The customer can give up (Cancel) rather than wait out
 * the re-tap time.
 */
import type { ReactNode } from 'react';
import { useTranslation } from 'react-i18next';
import type { ScreenState } from '../../common/kiosk-api.js';
import { ProgressScreen } from './ProgressScreen.js';

export function TapAgainScreen(props: { state: ScreenState; onCancel: () => void }): ReactNode {
  const { t } = useTranslation();
  return (
    <ProgressScreen state={props.state} variant="tap_again">
      <button type="button" className="button button--secondary" data-testid="cancel-button" onClick={props.onCancel}>
        {t('progress.tapAgain.cancel')}
      </button>
    </ProgressScreen>
  );
}
