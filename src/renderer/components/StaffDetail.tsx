/** The staff's line under a customer screen: secondary, labelled, never the customer's headline. */
import type { ReactNode } from 'react';
import { useTranslation } from 'react-i18next';

export function StaffDetail(props: { children: ReactNode }): ReactNode {
  const { t } = useTranslation();
  return (
    <div className="staff-detail">
      <span className="staff-detail-label">{t('staffDetail')}: </span>
      {props.children}
    </div>
  );
}
