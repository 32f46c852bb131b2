/** Creating a backend session for the next customer. */
import type { ReactNode } from 'react';
import { useTranslation } from 'react-i18next';
import { ScreenFrame } from '../components/ScreenFrame.js';
import { Spinner } from '../components/Spinner.js';

export function ConnectingScreen(): ReactNode {
  const { t } = useTranslation();
  return (
    <ScreenFrame title={t('connecting.title')} tone="calm">
      <p className="lead">{t('connecting.body')}</p>
      <Spinner />
    </ScreenFrame>
  );
}
