/** Credentials refused or configuration invalid (`config_error`): only staff can fix it. */
import type { ReactNode } from 'react';
import { useTranslation } from 'react-i18next';
import type { ScreenState } from '../../common/kiosk-api.js';
import { StaffIcon } from '../components/icons.js';
import { ScreenFrame } from '../components/ScreenFrame.js';
import { StaffDetail } from '../components/StaffDetail.js';

export function NeedsStaffScreen(props: { state: ScreenState }): ReactNode {
  const { t } = useTranslation();
  const { error } = props.state.view;
  return (
    <ScreenFrame title={t('configError.title')} tone="problem" icon={<StaffIcon />}>
      <p className="lead">{t('configError.body')}</p>
      {error ? <StaffDetail>{error.detail}</StaffDetail> : null}
    </ScreenFrame>
  );
}
