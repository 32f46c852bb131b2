/**
 * Technical detail for staff under a customer screen: closed behind "Details for staff" (the customer's
 * screen says what to do in plain words; codes, addresses and the core's English detail are for staff).
 * The detail is the core's own English text, marked as such for screen readers.
 */
import type { ReactNode } from 'react';
import { useTranslation } from 'react-i18next';

export function StaffDetail(props: { children: ReactNode }): ReactNode {
  const { t } = useTranslation();
  return (
    <details className="staff-detail" data-testid="staff-detail">
      <summary className="staff-detail-label">{t('staffDetail')}</summary>
      <p className="staff-detail-text" lang="en">
        {props.children}
      </p>
    </details>
  );
}
