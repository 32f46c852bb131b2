/**
 * The diagnostics' "Application" card: how the desktop application around the kiosk is set up — the build,
 * how the API key is kept (and why it cannot be read, if so), the managed configuration file and the keys
 * it locks, the log folder, the health record and the updater's state. Paths and keys only; never a value.
 */
import type { ReactNode } from 'react';
import { useTranslation } from 'react-i18next';
import type { AppStatus, UpdateStatus } from '../../common/kiosk-api.js';

/** At most this many managed keys are listed (the host sends at most 100). */
export const MAX_MANAGED_KEYS_SHOWN = 100;

export function AppStatusCard(props: { app: AppStatus; dateTime: (at: number) => string }): ReactNode {
  const { t } = useTranslation();
  const { app } = props;
  const flavour = app.flavour === 'qa' ? t('diagnostics.app.flavourValue.qa') : t('diagnostics.app.flavourValue.production');
  const secrets = ((): string => {
    switch (app.secretsProtection) {
      case 'os-encrypted':
        return t('diagnostics.app.secretsValue.osEncrypted');
      case 'basic-text':
        return t('diagnostics.app.secretsValue.basicText');
      case 'file-permissions':
        return t('diagnostics.app.secretsValue.filePermissions');
      case 'memory':
        return t('diagnostics.app.secretsValue.memory');
    }
  })();
  const updateState = (status: UpdateStatus): string => {
    switch (status.state) {
      case 'disabled':
        return t('diagnostics.app.updateState.disabled');
      case 'idle':
        return t('diagnostics.app.updateState.idle');
      case 'checking':
        return t('diagnostics.app.updateState.checking');
      case 'downloading':
        return t('diagnostics.app.updateState.downloading');
      case 'downloaded':
        return t('diagnostics.app.updateState.downloaded');
      case 'installing':
        return t('diagnostics.app.updateState.installing');
      case 'error':
        return t('diagnostics.app.updateState.error');
    }
  };
  const keys = app.managedKeys.slice(0, MAX_MANAGED_KEYS_SHOWN);
  const cameraAccess = ((): string | undefined => {
    switch (app.cameraAccess) {
      case undefined:
      case 'not_applicable':
        return undefined;
      case 'granted':
        return t('diagnostics.app.cameraAccessValue.granted');
      case 'denied':
        return t('diagnostics.app.cameraAccessValue.denied');
      case 'restricted':
        return t('diagnostics.app.cameraAccessValue.restricted');
      case 'not_determined':
        return t('diagnostics.app.cameraAccessValue.notDetermined');
      case 'unknown':
        return t('diagnostics.app.cameraAccessValue.unknown');
    }
  })();
  return (
    <section className="staff-card" aria-labelledby="app-status-title" data-testid="app-status">
      <h2 id="app-status-title">{t('diagnostics.app.title')}</h2>
      <dl className="facts">
        <div className="fact-row">
          <dt>{t('diagnostics.app.flavour')}</dt>
          <dd data-app="flavour">{flavour}</dd>
        </div>
        <div className={app.secretsProtection === 'basic-text' ? 'fact-row fact-row--problem' : 'fact-row'}>
          <dt>{t('diagnostics.app.secrets')}</dt>
          <dd data-app="secrets">{secrets}</dd>
        </div>
        {cameraAccess !== undefined ? (
          <div className={app.cameraAccess === 'granted' ? 'fact-row' : 'fact-row fact-row--problem'}>
            <dt>{t('diagnostics.app.cameraAccess')}</dt>
            <dd data-app="camera-access">{cameraAccess}</dd>
          </div>
        ) : null}
        {app.permissionProblems !== undefined && app.permissionProblems.length > 0 ? (
          <div className="fact-row fact-row--problem">
            <dt>{t('diagnostics.app.permissionProblems')}</dt>
            <dd data-app="permission-problems">
              {app.permissionProblems.map((problem) => (
                <p key={problem}>{problem}</p>
              ))}
            </dd>
          </div>
        ) : null}
        {app.secretsProblem !== undefined ? (
          <div className="fact-row fact-row--problem">
            <dt>{t('diagnostics.app.secretsProblem')}</dt>
            <dd data-app="secrets-problem">{app.secretsProblem}</dd>
          </div>
        ) : null}
        <div className="fact-row">
          <dt>{t('diagnostics.app.managedFile')}</dt>
          <dd data-app="managed-file">{app.managedConfigPath ?? t('diagnostics.app.managedNone')}</dd>
        </div>
        {keys.length > 0 ? (
          <div className="fact-row">
            <dt>{t('diagnostics.app.managedKeys')}</dt>
            <dd data-app="managed-keys">{keys.join(', ')}</dd>
          </div>
        ) : null}
        {app.logDir !== undefined ? (
          <div className="fact-row">
            <dt>{t('diagnostics.app.logDir')}</dt>
            <dd data-app="log-dir">{app.logDir}</dd>
          </div>
        ) : null}
        {app.healthFile !== undefined ? (
          <div className="fact-row">
            <dt>{t('diagnostics.app.healthFile')}</dt>
            <dd data-app="health-file">{app.healthFile}</dd>
          </div>
        ) : null}
        {app.updates !== undefined ? (
          <div className="fact-row">
            <dt>{t('diagnostics.app.updates')}</dt>
            <dd data-app="updates" data-state={app.updates.state}>
              {updateState(app.updates)}
              {app.updates.version !== undefined ? (
                <span className="cell-detail"> — {t('diagnostics.app.updateVersion', { version: app.updates.version })}</span>
              ) : null}
              {app.updates.checkedAt !== undefined ? (
                <span className="cell-detail">
                  {' '}
                  — {t('diagnostics.app.updateChecked', { time: props.dateTime(app.updates.checkedAt) })}
                </span>
              ) : null}
            </dd>
          </div>
        ) : null}
        {app.updates?.error !== undefined ? (
          <div className="fact-row fact-row--problem">
            <dt>{t('diagnostics.app.updateError')}</dt>
            <dd data-app="update-error">{app.updates.error}</dd>
          </div>
        ) : null}
      </dl>
    </section>
  );
}
