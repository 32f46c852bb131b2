/**
 * The phone must leave the reader before the kiosk reads it again: after an outcome that is the goodbye;
 * after a failure (the core's `remove_to_retry`) the customer lifts it to tap again, and a "thank you"
 * there would read as success.
 */
import type { ReactNode } from 'react';
import { useTranslation } from 'react-i18next';
import { PhoneAwayIcon } from '../components/icons.js';
import { ScreenFrame } from '../components/ScreenFrame.js';

export function RemovePhoneScreen(props: { afterFailure: boolean }): ReactNode {
  const { t } = useTranslation();
  return (
    <ScreenFrame title={t(props.afterFailure ? 'remove.retryTitle' : 'remove.title')} tone="calm" icon={<PhoneAwayIcon />}>
      <p className="lead" data-testid="remove-body" data-after={props.afterFailure ? 'failure' : 'outcome'}>
        {t(props.afterFailure ? 'remove.retryBody' : 'remove.body')}
      </p>
    </ScreenFrame>
  );
}
