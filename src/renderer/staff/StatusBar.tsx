/**
 * The status bar, always at the bottom. Customers see one line (the kiosk is ready, getting ready, or
 * needs staff) and the Staff button; the staff items (devices, this screen's camera, backend with its
 * origin, session freshness) show while the staff screens are open, behind the PIN. The TEST MODE banner
 * is for everyone.
 */
import type { ReactNode } from 'react';
import { useTranslation } from 'react-i18next';
import type { CameraState, Language, ScreenState } from '../../common/kiosk-api.js';
import { useNow } from '../components/use-now.js';
import { LanguageSwitch } from '../screens/LanguageSwitch.js';
import { statusItems, summaryItem, type ItemLevel } from './status-items.js';

const MARK: Record<ItemLevel, string> = { ok: '✓', warn: '!', problem: '✕', off: '–' };

/** One line of the bar: its mark, label and value (and the staff detail, such as the backend's origin). */
function StatusLine(props: { id: string; label: string; value: string; level: ItemLevel; detail?: string | undefined }): ReactNode {
  return (
    <li className={`status-item status-item--${props.level}`} data-status={props.id} data-level={props.level}>
      <span className="status-mark" aria-hidden="true">
        {MARK[props.level]}
      </span>
      <span className="status-label">{props.label}:</span> <span className="status-value">{props.value}</span>
      {props.detail ? <span className="status-detail"> ({props.detail})</span> : null}
    </li>
  );
}

/**
 * `addressInvalid`: no state will come (this page's address is refused or has no token), so not "connecting".
 * `language`: the customer's language switch, on the customer screens that have none of their own.
 */
export function StatusBar(props: {
  state: ScreenState | null;
  camera: CameraState;
  staffView: boolean;
  onStaff: () => void;
  staffEnabled: boolean;
  addressInvalid?: boolean;
  language?: { readonly current: Language; readonly onChoose: (language: Language) => void } | undefined;
  /** Speech is on for the customer (the badge): in the bar, so it takes no room from the screen above. */
  speechBadge?: ReactNode;
}): ReactNode {
  const { t } = useTranslation();
  const now = useNow(5_000, props.state !== null && props.staffView);
  const items = props.state && props.staffView ? statusItems(props.state, now, t, props.camera) : [];
  const summary = props.state && !props.staffView ? summaryItem(props.state, t) : undefined;
  const kiosk = t('status.kiosk');
  return (
    <footer className="status-bar" data-testid="status-bar" aria-label={t('status.label')}>
      {/* First, far from the Staff button: it is the customer's. */}
      {props.language ? <LanguageSwitch current={props.language.current} onChoose={props.language.onChoose} compact /> : null}
      <ul className="status-items">
        {props.state ? null : props.addressInvalid === true ? (
          <StatusLine id="kiosk" label={kiosk} value={t('status.summary.problem')} level="problem" />
        ) : (
          <StatusLine id="kiosk" label={kiosk} value={t('status.backendState.connecting')} level="warn" />
        )}
        {summary ? <StatusLine id="summary" label={kiosk} value={summary.value} level={summary.level} /> : null}
        {/* A replaced outcome is never silent: a discreet line for staff at the counter, the detail behind the PIN. */}
        {props.state?.replaced && !props.staffView ? (
          <StatusLine id="replaced" label={t('counterActivity.markerLabel')} value={t('counterActivity.markerValue')} level="warn" />
        ) : null}
        {items.map((item) => (
          <StatusLine key={item.id} id={item.id} label={item.label} value={item.value} level={item.level} detail={item.detail} />
        ))}
      </ul>
      {props.speechBadge}
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
