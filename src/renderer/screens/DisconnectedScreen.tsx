/**
 * Before the first state, or while the host is unreachable: "Connecting to the kiosk…". When the address
 * cannot work — the host answers but refuses this page's token, or the page has no token at all — it says
 * the address is not valid for this kiosk (and how to get the right one) instead of "Connecting…" for ever.
 */
import type { ReactNode } from 'react';
import { useTranslation } from 'react-i18next';
import { addressRefused, type ConnectionStatus } from '../api/socket-transport.js';
import { Spinner } from '../components/Spinner.js';
import { ScreenFrame } from '../components/ScreenFrame.js';
import { StaffDetail } from '../components/StaffDetail.js';
import { secondsUntil, useNow } from '../components/use-now.js';

export function DisconnectedScreen(props: { connection: ConnectionStatus; missingToken: boolean }): ReactNode {
  const { t } = useTranslation();
  const { connection, missingToken } = props;
  const now = useNow(1_000, connection.kind === 'waiting');
  const refused = addressRefused(connection);
  const invalid = missingToken || refused;
  const body = missingToken ? t('disconnected.noToken') : t(refused ? 'disconnected.badAddress.body' : 'disconnected.body');
  return (
    <ScreenFrame title={t(invalid ? 'disconnected.badAddress.title' : 'disconnected.title')} tone={invalid ? 'problem' : 'calm'}>
      <p className="lead" data-testid="disconnected-body" data-refused={refused} data-missing-token={missingToken}>
        {body}
      </p>
      {invalid ? null : <Spinner />}
      {!missingToken && (connection.kind !== 'open' || connection.lastProblem) ? (
        <StaffDetail>
          {connection.kind === 'waiting'
            ? `${t('disconnected.attempt', { attempt: connection.attempt })} · ${t('disconnected.retryIn', { seconds: secondsUntil(connection.retryAt, now) })}`
            : null}
          {connection.kind === 'connecting' ? t('disconnected.attempt', { attempt: connection.attempt }) : null}
          {connection.lastProblem ? ` · ${connection.lastProblem}` : null}
        </StaffDetail>
      ) : null}
    </ScreenFrame>
  );
}
