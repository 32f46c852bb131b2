/** The transport is fixed: reading the phone over NFC, or a QR code just read. */
import type { ReactNode } from 'react';
import type { ScreenState } from '../../common/kiosk-api.js';
import { ProgressScreen } from './ProgressScreen.js';

export function EngagingScreen(props: { state: ScreenState }): ReactNode {
  const { transport } = props.state.view;
  return <ProgressScreen state={props.state} variant={transport === 'nfc' ? 'nfc_reading' : transport === 'qr' ? 'qr_read' : 'engaging'} />;
}
