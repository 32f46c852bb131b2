/**
 * The frame shared by the screens of a verification under way: one calm instruction, an icon, and the
 * moving progress indicator. Each screen below picks its words from the core's phase, transport and prompt.
 */
import type { ReactNode } from 'react';
import { useTranslation } from 'react-i18next';
import type { ScreenState } from '../../common/kiosk-api.js';
import { BluetoothIcon, PhoneCheckIcon, PhoneTapIcon, QrIcon } from '../components/icons.js';
import { Progress } from '../components/Progress.js';
import { ScreenFrame } from '../components/ScreenFrame.js';
import type { ProgressVariant } from './screen-name.js';

function copyFor(variant: ProgressVariant, t: (key: string) => string): { title: string; body: string; icon: ReactNode } {
  switch (variant) {
    case 'nfc_reading':
      return { title: t('progress.nfcReading.title'), body: t('progress.nfcReading.body'), icon: <PhoneTapIcon /> };
    case 'qr_read':
      return { title: t('progress.qrRead.title'), body: t('progress.qrRead.body'), icon: <QrIcon /> };
    case 'engaging':
      return { title: t('progress.engaging.title'), body: t('progress.engaging.body'), icon: <PhoneTapIcon /> };
    case 'tap_again':
      return { title: t('progress.tapAgain.title'), body: t('progress.tapAgain.body'), icon: <PhoneTapIcon /> };
    case 'ble_connecting':
      return { title: t('progress.bleConnecting.title'), body: t('progress.bleConnecting.body'), icon: <BluetoothIcon /> };
    case 'approve_on_phone':
      return { title: t('progress.approve.title'), body: t('progress.approve.body'), icon: <PhoneCheckIcon /> };
    case 'receiving':
      return { title: t('progress.receiving.title'), body: t('progress.receiving.body'), icon: <BluetoothIcon /> };
  }
}

export function ProgressScreen(props: { state: ScreenState; variant: ProgressVariant; children?: ReactNode }): ReactNode {
  const { t } = useTranslation();
  const copy = copyFor(props.variant, t);
  const { progress } = props.state.view;
  return (
    <ScreenFrame title={copy.title} tone="progress" icon={copy.icon}>
      <p className="lead" data-variant={props.variant}>
        {copy.body}
      </p>
      <Progress step={progress.step} />
      {props.children}
    </ScreenFrame>
  );
}
