/** The kiosk's services are coming up. */
import type { ReactNode } from 'react';
import { useTranslation } from 'react-i18next';
import { ScreenFrame } from '../components/ScreenFrame.js';
import { Spinner } from '../components/Spinner.js';

export function StartingScreen(): ReactNode {
  const { t } = useTranslation();
  return (
    <ScreenFrame title={t('starting.title')} tone="calm">
      <p className="lead">{t('starting.body')}</p>
      <Spinner />
    </ScreenFrame>
  );
}
