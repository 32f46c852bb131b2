/**
 * The status bar, always at the bottom. Customers see one line (the kiosk is ready, getting ready, or
 * needs staff) and the Staff button; the staff items (devices, this screen's camera, backend with its
 * origin, session freshness) show while the staff screens are open, behind the PIN. The TEST MODE banner
 * is for everyone.
 */
import type { ReactNode } from 'react';
import { useTranslation } from 'react-i18next';
import type { CameraState, ScreenState } from '../../common/kiosk-api.js';
import { useNow } from '../components/use-now.js';
import { statusItems, summaryItem, type ItemLevel } from './status-items.js';

const MARK: Record<ItemLevel, string> = { ok: '✓', warn: '!', problem: '✕', off: '–' };

/** `addressInvalid`: no state will come (this page's address is refused or has no token), so not "connecting". */
export function StatusBar(props: { state: ScreenState | null; camera: CameraState; staffView: boolean; onStaff: () => void; staffEnabled: boolean; addressInvalid?: boolean }): ReactNode {
  const { t } = useTranslation();
  const now = useNow(5_000, props.state !== null && props.staffView);
  const items = props.state && props.staffView ? statusItems(props.state, now, t, props.camera) : [];
  const summary = props.state && !props.staffView ? summaryItem(props.state, t) : undefined;
  return (
    <footer className="status-bar" data-testid="status-bar" aria-label={t('status.label')}>
      <ul className="status-items">
        {props.state ? null : props.addressInvalid === true ? (
          <li className="status-item status-item--problem" data-status="kiosk" data-level="problem">
            <span className="status-mark" aria-hidden="true">
              {MARK.problem}
            </span>
            <span className="status-label">{t('status.kiosk')}:</span> <span className="status-value">{t('status.summary.problem')}</span>
          </li>
        ) : (
          <li className="status-item status-item--warn" data-status="kiosk" data-level="warn">
            <span className="status-mark" aria-hidden="true">
              {MARK.warn}
            </span>
            <span className="status-label">{t('status.kiosk')}:</span> <span className="status-value">{t('status.backendState.connecting')}</span>
          </li>
        )}
        {summary ? (
          <li className={`status-item status-item--${summary.level}`} data-status="summary" data-level={summary.level}>
            <span className="status-mark" aria-hidden="true">
              {MARK[summary.level]}
            </span>
            <span className="status-label">{t('status.kiosk')}:</span> <span className="status-value">{summary.value}</span>
          </li>
        ) : null}
        {items.map((item) => (
          <li key={item.id} className={`status-item status-item--${item.level}`} data-status={item.id} data-level={item.level}>
            <span className="status-mark" aria-hidden="true">
              {MARK[item.level]}
            </span>
            <span className="status-label">{item.label}:</span> <span className="status-value">{item.value}</span>
            {item.detail ? <span className="status-detail"> ({item.detail})</span> : null}
          </li>
        ))}
      </ul>
      <button type="button" className="staff-button" data-testid="staff-button" onClick={props.onStaff} disabled={!props.staffEnabled}>
        {t('status.staff')}
      </button>
    </footer>
  );
}

export function TestModeBanner(): ReactNode {
  const { t } = useTranslation();
  return (
    <header className="test-mode" data-testid="test-mode">
      <strong className="test-mode-title">{t('status.testMode')}</strong>
      <span className="test-mode-detail">{t('status.testModeDetail')}</span>
    </header>
  );
}
