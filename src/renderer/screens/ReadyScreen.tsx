/**
 * Ready: tap or show the QR code; the request the kiosk will make; the camera; the language switch. Only
 * the ways that work are offered (src/common/readiness.ts): no "hold your phone on the reader" without a
 * usable reader, no "show the QR code to the camera" with this screen's camera blocked or missing (a
 * handheld scanner still reads QR codes, and the screen says so). The tap leads (every wallet that can
 * tap does, and some can only tap); the QR code is the alternative for wallets that show one. Where the
 * installer said where the reader is (`ui.readerPosition`), an arrow points there.
 */
import type { ReactNode } from 'react';
import { useTranslation } from 'react-i18next';
import type { CameraState, Language, ReaderPosition, ScreenState } from '../../common/kiosk-api.js';
import { ScreenFrame } from '../components/ScreenFrame.js';
import { ArrowDownIcon, PhoneTapIcon, QrIcon } from '../components/icons.js';
import { readinessOf } from '../../common/readiness.js';
import { CameraPreview } from '../qr/CameraPreview.js';
import { LanguageSwitch } from './LanguageSwitch.js';
import { customerProfileText } from './profile-label.js';

export type ScanHint = 'not_mdoc' | 'empty' | 'unreadable';

const HINT_TEXT: Readonly<Record<ScanHint, string>> = {
  not_mdoc: 'scanHint.notMdoc',
  empty: 'qr:hint.empty',
  unreadable: 'scanHint.unreadable',
};

/** "The reader is below this screen", with an arrow that points there (the words say it without the arrow). */
function ReaderPointer(props: { at: ReaderPosition }): ReactNode {
  const { t } = useTranslation();
  return (
    <p className={`reader-pointer reader-pointer--${props.at}`} data-testid="reader-pointer" data-at={props.at}>
      <span className="reader-pointer-arrow" aria-hidden="true">
        <ArrowDownIcon />
      </span>
      <span className="reader-pointer-text">{t(`ready.readerAt.${props.at}`)}</span>
    </p>
  );
}

export function ReadyScreen(props: {
  state: ScreenState;
  /** This screen's camera (qr/camera-status.ts). */
  camera: CameraState;
  scanHint: ScanHint | null;
  onScan: (text: string) => void;
  onCameraState: (state: CameraState, detail?: string) => void;
  onLanguage: (language: Language) => void;
}): ReactNode {
  const { t } = useTranslation();
  const { state } = props;
  const profile = customerProfileText(state.view.profile, state.profiles.find((p) => p.name === state.view.profile)?.label, t);
  const { ways } = readinessOf(state.view.devices, props.camera);
  const qrLine = ways.tap ? (ways.camera ? 'ready.show' : 'ready.showScanner') : ways.camera ? 'ready.showOnly' : 'ready.showScannerOnly';
  return (
    <ScreenFrame title={t(ways.tap ? 'ready.title' : 'ready.titleQr')} tone="calm" className="screen--ready">
      <div className="ready-layout">
        <div className="ready-instructions">
          <p className="lead">{t('ready.body')}</p>
          {ways.tap ? (
            <div className="ready-way" data-testid="way-tap">
              <span className="ready-way-icon" aria-hidden="true">
                <PhoneTapIcon />
              </span>
              <p>{t('ready.tap')}</p>
            </div>
          ) : null}
          {ways.scanner ? (
            <div className="ready-way" data-testid="way-qr" data-by={ways.camera ? 'camera' : 'scanner'}>
              <span className="ready-way-icon" aria-hidden="true">
                <QrIcon />
              </span>
              <p>{t(qrLine)}</p>
            </div>
          ) : null}
          <p className="profile-line" data-testid="profile">
            {t('ready.profile', { profile })}
          </p>
        </div>
        <div className="ready-camera">
          {/* Over the camera preview: where someone showing a QR code is looking. */}
          <div className="scan-hint-slot" role="status">
            {props.scanHint ? (
              <p className="scan-hint" data-testid="scan-hint" data-hint={props.scanHint}>
                <span className="scan-hint-mark" aria-hidden="true">
                  !
                </span>
                {t(HINT_TEXT[props.scanHint])}
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
      {ways.tap && state.readerPosition !== undefined ? <ReaderPointer at={state.readerPosition} /> : null}
      <LanguageSwitch current={state.language} onChoose={props.onLanguage} />
    </ScreenFrame>
  );
}
