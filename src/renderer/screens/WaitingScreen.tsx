/**
 * The outcome (or error) outlived its time and the host has not cleared it: hidden on the screen's own
 * initiative (see api/stale-screen.ts). Neutral on purpose: no verdict, no data of the last customer.
 */
import type { ReactNode } from 'react';
import { useTranslation } from 'react-i18next';
import type { ConnectionStatus } from '../api/socket-transport.js';
import { Spinner } from '../components/Spinner.js';
import { ScreenFrame } from '../components/ScreenFrame.js';
import { StaffDetail } from '../components/StaffDetail.js';

export function WaitingScreen(props: { connection: ConnectionStatus }): ReactNode {
  const { t } = useTranslation();
  const problem = props.connection.lastProblem;
  return (
    <ScreenFrame title={t('waiting.title')} tone="calm">
      <p className="lead">{t('waiting.body')}</p>
      <Spinner />
      <StaffDetail>
        {t('waiting.staff')}
        {problem ? ` · ${problem}` : null}
      </StaffDetail>
    </ScreenFrame>
  );
}
