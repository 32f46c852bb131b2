/** The backend asked for a re-tap (`awaiting_card`). */
import type { ReactNode } from 'react';
import type { ScreenState } from '../../common/kiosk-api.js';
import { ProgressScreen } from './ProgressScreen.js';

export function TapAgainScreen(props: { state: ScreenState }): ReactNode {
  return <ProgressScreen state={props.state} variant="tap_again" />;
}
