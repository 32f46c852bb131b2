/**
 * The camera preview on the Ready screen: while `scanning`, the camera runs, shows what it sees and feeds
 * the QR decode worker; otherwise it is released (the light goes off). Problems with the camera show in
 * this area as a short message, and the rest of the screen (NFC, the scanner, staff) keeps working.
 */
import { useEffect, useRef, useState } from 'react';
import { useTranslation } from 'react-i18next';
import type { CameraState } from '../../common/kiosk-api.js';
import { CameraSession } from './camera-session.js';
import { sharedQrDecoder } from './decoder-client.js';
import './qr.css';

export interface CameraPreviewProps {
  readonly scanning: boolean;
  readonly deviceId: string | null;
  readonly maxDecodesPerSecond: number;
  /** A decoded QR text, exactly as decoded (the same code held up is reported once every few seconds). */
  readonly onScan: (text: string) => void;
  readonly onCameraState: (state: CameraState, detail?: string) => void;
}

export function CameraPreview({ scanning, deviceId, maxDecodesPerSecond, onScan, onCameraState }: CameraPreviewProps) {
  const { t } = useTranslation('qr');
  const videoRef = useRef<HTMLVideoElement>(null);
  const [state, setState] = useState<CameraState>('off');
  // The latest callbacks, read when an event happens (the camera is not reopened when they change).
  const onScanRef = useRef(onScan);
  const onCameraStateRef = useRef(onCameraState);
  useEffect(() => {
    onScanRef.current = onScan;
    onCameraStateRef.current = onCameraState;
  }, [onScan, onCameraState]);
  const reported = useRef<string | undefined>(undefined);

  useEffect(() => {
    const report = (next: CameraState, detail?: string): void => {
      setState(next);
      const key = `${next}\u0000${detail ?? ''}`;
      if (reported.current === key) return;
      reported.current = key;
      onCameraStateRef.current(next, detail);
    };
    const video = videoRef.current;
    if (!scanning || video === null) {
      report('off');
      return undefined;
    }
    const session = new CameraSession({
      video,
      deviceId,
      maxDecodesPerSecond,
      decoder: sharedQrDecoder(),
      onState: report,
      onText: (text) => onScanRef.current(text),
    });
    session.start();
    return () => {
      session.stop();
      report('off');
    };
  }, [scanning, deviceId, maxDecodesPerSecond]);

  return (
    <section className="camera-preview" data-testid="camera-preview" data-camera-state={state} aria-label={t('camera.label')}>
      <video ref={videoRef} className="camera-preview-video" data-shown={state === 'active'} muted playsInline aria-hidden="true" />
      <p
        className="camera-preview-message"
        data-problem={state === 'denied' || state === 'missing' || state === 'unplugged' || state === 'error'}
        role="status"
        aria-live="polite"
      >
        {t(`camera.${state}`)}
      </p>
    </section>
  );
}
