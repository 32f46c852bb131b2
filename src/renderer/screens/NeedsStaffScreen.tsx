/**
 * Only staff can help: the credentials were refused or the configuration is invalid (`config_error`), or
 * the devices cannot finish a verification (`cannot_verify`: no usable Bluetooth role, no way in). The
 * cause is named in plain words for everyone; the technical detail is for staff.
 */
import type { ReactNode } from 'react';
import { useTranslation } from 'react-i18next';
import type { ScreenState } from '../../common/kiosk-api.js';
import { StaffIcon } from '../components/icons.js';
import { ScreenFrame } from '../components/ScreenFrame.js';
import { StaffDetail } from '../components/StaffDetail.js';
import { errorLine } from './error-copy.js';

export function NeedsStaffScreen(props: { state: ScreenState }): ReactNode {
  const { t } = useTranslation();
  const { error, phase } = props.state.view;
  return (
    <ScreenFrame title={t('configError.title')} tone="problem" icon={<StaffIcon />}>
      {phase === 'cannot_verify' && error ? (
        <p className="lead" data-testid="needs-staff-cause" data-cause={error.code}>
          {errorLine(error.code, t)}
        </p>
      ) : null}
      <p className={phase === 'cannot_verify' ? 'body-text' : 'lead'}>{t('configError.body')}</p>
      {error ? <StaffDetail>{error.detail}</StaffDetail> : null}
    </ScreenFrame>
  );
}
