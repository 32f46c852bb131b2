/** The kiosk service has stopped. */
import type { ReactNode } from 'react';
import { useTranslation } from 'react-i18next';
import { ClosedIcon } from '../components/icons.js';
import { ScreenFrame } from '../components/ScreenFrame.js';

export function StoppedScreen(): ReactNode {
  const { t } = useTranslation();
  return (
    <ScreenFrame title={t('stopped.title')} tone="problem" icon={<ClosedIcon />}>
      <p className="lead">{t('stopped.body')}</p>
    </ScreenFrame>
  );
}
