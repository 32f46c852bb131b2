/**
 * Only staff can help: the credentials were refused, the configuration is invalid or the backend refuses the
 * kiosk's connection (`config_error`), or the devices cannot finish a verification (`cannot_verify`: no
 * usable Bluetooth role, no way in). A cause the core named is said in plain words for everyone; the
 * technical detail (what to check, how often the kiosk checks again) is for staff.
 */
import type { ReactNode } from 'react';
import { useTranslation } from 'react-i18next';
import { isNeedsStaffCode } from '../../common/backend-failure-kinds.js';
import type { ScreenState } from '../../common/kiosk-api.js';
import { StaffIcon } from '../components/icons.js';
import { ScreenFrame } from '../components/ScreenFrame.js';
import { StaffDetail } from '../components/StaffDetail.js';
import { errorLine } from './error-copy.js';

export function NeedsStaffScreen(props: { state: ScreenState }): ReactNode {
  const { t } = useTranslation();
  const { error, phase } = props.state.view;
  // The cause in plain words when the core named one: the devices, or a backend the kiosk cannot connect to.
  const named = error !== null && (phase === 'cannot_verify' || isNeedsStaffCode(error.code));
  return (
    <ScreenFrame title={t('configError.title')} tone="problem" icon={<StaffIcon />}>
      {named ? (
        <p className="lead" data-testid="needs-staff-cause" data-cause={error.code}>
          {errorLine(error.code, t)}
        </p>
      ) : null}
      <p className={named ? 'body-text' : 'lead'}>{t('configError.body')}</p>
      {error ? <StaffDetail>{error.detail}</StaffDetail> : null}
    </ScreenFrame>
  );
}
