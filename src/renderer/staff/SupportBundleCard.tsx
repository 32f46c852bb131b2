/**
 * Diagnostics' "Support bundle" card: one button that has the kiosk write a `.tar.gz` for support (no
 * personal data, no secrets) into its support folder, and then says where it is and how big, so staff can
 * hand it over (a USB stick, a remote session). The path comes from the host and is shown as text.
 */
import { useState, type ReactNode } from 'react';
import { useTranslation } from 'react-i18next';
import type { KioskApi } from '../../common/kiosk-api.js';

type Status = { kind: 'idle' } | { kind: 'writing' } | { kind: 'written'; path: string; bytes: number } | { kind: 'failed'; message: string };

export function SupportBundleCard(props: { api: KioskApi; onWritten?: () => void }): ReactNode {
  const { t, i18n } = useTranslation();
  const [status, setStatus] = useState<Status>({ kind: 'idle' });
  const write = async (): Promise<void> => {
    setStatus({ kind: 'writing' });
    try {
      const written = await props.api.writeSupportBundle({});
      setStatus({ kind: 'written', path: written.path, bytes: written.bytes });
      props.onWritten?.();
    } catch (e) {
      setStatus({ kind: 'failed', message: e instanceof Error ? e.message : String(e) });
    }
  };
  const size = (bytes: number): string => new Intl.NumberFormat(i18n.language, { maximumFractionDigits: 0 }).format(Math.max(1, Math.round(bytes / 1024)));
  return (
    <section className="staff-card" aria-labelledby="support-title" data-testid="support-bundle">
      <h2 id="support-title">{t('diagnostics.support.title')}</h2>
      <p>{t('diagnostics.support.explain')}</p>
      <button type="button" className="button button--secondary" onClick={() => void write()} disabled={status.kind === 'writing'} data-testid="support-bundle-write">
        {t('diagnostics.support.write')}
      </button>
      <div role="status" className="form-message" data-testid="support-bundle-status">
        {status.kind === 'writing' ? t('diagnostics.support.writing') : null}
        {status.kind === 'written' ? (
          <>
            {t('diagnostics.support.written', { size: size(status.bytes) })} <code data-testid="support-bundle-path">{status.path}</code>
          </>
        ) : null}
        {status.kind === 'failed' ? t('diagnostics.support.failed', { message: status.message }) : null}
      </div>
    </section>
  );
}
