/** The frame of the unlocked staff screens: which screen, the time left before it locks, and Lock. */
import type { ReactNode } from 'react';
import { useTranslation } from 'react-i18next';
import type { StaffState } from '../../common/kiosk-api.js';
import { ScreenFrame } from '../components/ScreenFrame.js';
import { useNow } from '../components/use-now.js';

export type StaffPage = 'settings' | 'diagnostics';

export function StaffShell(props: {
  page: StaffPage;
  staff: StaffState;
  onPage: (page: StaffPage) => void;
  onLock: () => void;
  children: ReactNode;
}): ReactNode {
  const { t } = useTranslation();
  const now = useNow(10_000);
  const until = props.staff.unlockedUntil;
  const title = props.page === 'settings' ? t('settings.title') : t('diagnostics.title');
  return (
    <ScreenFrame title={title} tone="staff" className="screen--staff">
      <nav className="staff-nav" aria-label={t('staff.nav')}>
        <button
          type="button"
          className="tab"
          aria-current={props.page === 'settings' ? 'page' : undefined}
          onClick={() => props.onPage('settings')}
        >
          {t('staff.settings')}
        </button>
        <button
          type="button"
          className="tab"
          aria-current={props.page === 'diagnostics' ? 'page' : undefined}
          onClick={() => props.onPage('diagnostics')}
        >
          {t('staff.diagnostics')}
        </button>
        {until !== null ? (
          <span className="staff-locks-in">{t('staff.locksIn', { minutes: Math.max(1, Math.ceil((until - now) / 60_000)) })}</span>
        ) : null}
        <button type="button" className="button button--secondary staff-lock" onClick={props.onLock}>
          {t('staff.lock')}
        </button>
      </nav>
      {props.children}
    </ScreenFrame>
  );
}
