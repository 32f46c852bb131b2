/**
 * The staff status bar, always at the bottom: devices, camera, backend, session freshness, the TEST MODE
 * banner when the embedded mock backend is in use, and the Staff button.
 */
import type { ReactNode } from 'react';
import { useTranslation } from 'react-i18next';
import type { ScreenState } from '../../common/kiosk-api.js';
import { useNow } from '../components/use-now.js';
import { statusItems, type ItemLevel } from './status-items.js';

const MARK: Record<ItemLevel, string> = { ok: '✓', warn: '!', problem: '✕', off: '–' };

export function StatusBar(props: { state: ScreenState | null; onStaff: () => void; staffEnabled: boolean }): ReactNode {
  const { t } = useTranslation();
  const now = useNow(5_000, props.state !== null);
  const items = props.state ? statusItems(props.state, now, t) : [];
  return (
    <footer className="status-bar" data-testid="status-bar" aria-label={t('status.label')}>
      <ul className="status-items">
        {props.state ? null : (
          <li className="status-item status-item--warn" data-status="kiosk" data-level="warn">
            <span className="status-mark" aria-hidden="true">
              !
            </span>
            <span className="status-label">{t('status.kiosk')}:</span> <span className="status-value">{t('status.backendState.connecting')}</span>
          </li>
        )}
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
