/** After a verification: the phone must leave the reader before the next customer. */
import type { ReactNode } from 'react';
import { useTranslation } from 'react-i18next';
import { PhoneAwayIcon } from '../components/icons.js';
import { ScreenFrame } from '../components/ScreenFrame.js';

export function RemovePhoneScreen(): ReactNode {
  const { t } = useTranslation();
  return (
    <ScreenFrame title={t('remove.title')} tone="calm" icon={<PhoneAwayIcon />}>
      <p className="lead">{t('remove.body')}</p>
    </ScreenFrame>
  );
}
