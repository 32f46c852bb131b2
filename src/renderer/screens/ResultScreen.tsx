/**
 * The outcome, drawn by the outcome component. It is mounted only while the core's state carries an
 * outcome: when the outcome goes (timeout, "Next"), this subtree unmounts and takes the data with it.
 */
import type { ReactNode } from 'react';
import { useTranslation } from 'react-i18next';
import type { ScreenState } from '../../common/kiosk-api.js';
import { ScreenFrame } from '../components/ScreenFrame.js';
import { OutcomeScreen } from '../outcome/OutcomeScreen.js';

export function ResultScreen(props: { state: ScreenState; onNext: () => void; onTryAgain: () => void }): ReactNode {
  const { t } = useTranslation();
  const { outcome } = props.state.view;
  if (!outcome) {
    // The core never shows `result` without an outcome; say nothing rather than guess.
    return <ScreenFrame title={t('result.waiting')} tone="calm" />;
  }
  return <OutcomeScreen outcome={outcome} clearsAt={props.state.clearsAt} onNext={props.onNext} onTryAgain={props.onTryAgain} />;
}
