/** The Bluetooth link is up: the holder approves on the phone, then the data arrives. */
import type { ReactNode } from 'react';
import type { ScreenState } from '../../common/kiosk-api.js';
import { ProgressScreen } from './ProgressScreen.js';

export function TransferringScreen(props: { state: ScreenState }): ReactNode {
  return <ProgressScreen state={props.state} variant={props.state.view.prompt === 'approve_on_phone' ? 'approve_on_phone' : 'receiving'} />;
}
