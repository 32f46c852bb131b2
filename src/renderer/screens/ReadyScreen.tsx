/** Ready: tap or show the QR code; the request the kiosk will make; the camera; the language switch. */
import type { ReactNode } from 'react';
import { useTranslation } from 'react-i18next';
import type { CameraState, Language, ScreenState } from '../../common/kiosk-api.js';
import { ScreenFrame } from '../components/ScreenFrame.js';
import { PhoneTapIcon, QrIcon } from '../components/icons.js';
import { CameraPreview } from '../qr/CameraPreview.js';
import { LanguageSwitch } from './LanguageSwitch.js';
import { customerProfileText } from './profile-label.js';

export type ScanHint = 'not_mdoc' | 'empty';

export function ReadyScreen(props: {
  state: ScreenState;
  scanHint: ScanHint | null;
  onScan: (text: string) => void;
  onCameraState: (state: CameraState, detail?: string) => void;
  onLanguage: (language: Language) => void;
}): ReactNode {
  const { t } = useTranslation();
  const { state } = props;
  const profile = customerProfileText(state.view.profile, state.profiles.find((p) => p.name === state.view.profile)?.label, t);
  return (
    <ScreenFrame title={t('ready.title')} tone="calm" className="screen--ready">
      <div className="ready-layout">
        <div className="ready-instructions">
          <p className="lead">{t('ready.body')}</p>
          <div className="ready-way">
            <span className="ready-way-icon" aria-hidden="true">
              <PhoneTapIcon />
            </span>
            <p>{t('ready.tap')}</p>
          </div>
          <div className="ready-way">
            <span className="ready-way-icon" aria-hidden="true">
              <QrIcon />
            </span>
            <p>{t('ready.show')}</p>
          </div>
          <p className="profile-line" data-testid="profile">
            {t('ready.profile', { profile })}
          </p>
        </div>
        <div className="ready-camera">
          {/* Over the camera preview: where someone showing a QR code is looking. */}
          <div className="scan-hint-slot" role="status">
            {props.scanHint ? (
              <p className="scan-hint" data-testid="scan-hint" data-hint={props.scanHint}>
                <span className="scan-hint-mark" aria-hidden="true">!</span>
                {props.scanHint === 'not_mdoc' ? t('scanHint.notMdoc') : t('qr:hint.empty')}
              </p>
            ) : null}
          </div>
          <CameraPreview
            scanning={state.camera.scanning}
            deviceId={state.camera.deviceId}
            maxDecodesPerSecond={state.camera.maxDecodesPerSecond}
            onScan={props.onScan}
            onCameraState={props.onCameraState}
          />
        </div>
      </div>
      <LanguageSwitch current={state.language} onChoose={props.onLanguage} />
    </ScreenFrame>
  );
}
