/** Setting up Bluetooth with the phone. */
import type { ReactNode } from 'react';
import type { ScreenState } from '../../common/kiosk-api.js';
import { ProgressScreen } from './ProgressScreen.js';

export function BleConnectingScreen(props: { state: ScreenState }): ReactNode {
  return <ProgressScreen state={props.state} variant="ble_connecting" />;
}
