/**
 * Before the first state, or while the host is unreachable: "Connecting to the kiosk…". When the host
 * answers but refuses this page's token, it says the address is not valid for this kiosk instead of
 * looping on "Connecting…".
 */
import type { ReactNode } from 'react';
import { useTranslation } from 'react-i18next';
import type { ConnectionStatus } from '../api/socket-transport.js';
import { Spinner } from '../components/Spinner.js';
import { ScreenFrame } from '../components/ScreenFrame.js';
import { StaffDetail } from '../components/StaffDetail.js';
import { secondsUntil, useNow } from '../components/use-now.js';

export function DisconnectedScreen(props: { connection: ConnectionStatus; missingToken: boolean }): ReactNode {
  const { t } = useTranslation();
  const { connection } = props;
  const now = useNow(1_000, connection.kind === 'waiting');
  // The host answers but refuses this page's token: waiting will not help, the address is wrong.
  const refused = (connection.kind === 'waiting' || connection.kind === 'connecting') && connection.refused === true;
  return (
    <ScreenFrame title={t(refused ? 'disconnected.badAddress.title' : 'disconnected.title')} tone={refused ? 'problem' : 'calm'}>
      <p className="lead" data-testid="disconnected-body" data-refused={refused}>
        {t(refused ? 'disconnected.badAddress.body' : 'disconnected.body')}
      </p>
      {props.missingToken || refused ? null : <Spinner />}
      {props.missingToken || connection.kind !== 'open' || connection.lastProblem ? (
        <StaffDetail>
          {props.missingToken ? t('disconnected.noToken') : null}
          {connection.kind === 'waiting' ? `${t('disconnected.attempt', { attempt: connection.attempt })} · ${t('disconnected.retryIn', { seconds: secondsUntil(connection.retryAt, now) })}` : null}
          {connection.kind === 'connecting' ? t('disconnected.attempt', { attempt: connection.attempt }) : null}
          {connection.lastProblem && !props.missingToken ? ` · ${connection.lastProblem}` : null}
        </StaffDetail>
      ) : null}
    </ScreenFrame>
  );
}
