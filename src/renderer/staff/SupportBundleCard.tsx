/**
 * Diagnostics' "Support bundle" card: the kiosk writes a `.tar.gz` for support (no personal data, no
 * secrets) into its support folder or onto a removable volume mounted now (a USB stick: the host lists
 * them, and only those), and then says where it is and how big, so staff can hand it over. Paths and
 * volume names come from the host and are shown as text.
 */
import { useCallback, useEffect, useId, useState, type ReactNode } from 'react';
import { useTranslation } from 'react-i18next';
import type { KioskApi, SupportVolume } from '../../common/kiosk-api.js';
import { preloadKiosk } from '../api/connect.js';
import { errorText } from '../../common/error-text.js';

type Status =
  | { kind: 'idle' }
  | { kind: 'writing' }
  | { kind: 'written'; path: string; bytes: number }
  | { kind: 'downloaded'; name: string; bytes: number }
  | { kind: 'failed'; message: string };

/** The browser host's download of a ticket (src/host/server.ts DOWNLOAD_PREFIX). */
const DOWNLOAD_PREFIX = '/support-bundle/';

/** In a browser on the browser host (no Electron preload), the staff's own browser can save the bundle. */
function canDownload(): boolean {
  return typeof window !== 'undefined' && preloadKiosk(window) === null;
}

/** The choice for the kiosk's own support folder (a volume id is never empty). */
const KIOSK_DISK = '';

export function SupportBundleCard(props: { api: KioskApi; onWritten?: () => void }): ReactNode {
  const { t, i18n } = useTranslation();
  const id = useId();
  const [status, setStatus] = useState<Status>({ kind: 'idle' });
  const [volumes, setVolumes] = useState<readonly SupportVolume[]>([]);
  const [target, setTarget] = useState(KIOSK_DISK);

  const look = useCallback(() => {
    props.api
      .listSupportVolumes({})
      .then((r) => {
        setVolumes(r.volumes);
        // A stick taken out: back to the kiosk's own disk rather than a choice that is gone.
        setTarget((current) => (current === KIOSK_DISK || r.volumes.some((v) => v.id === current) ? current : KIOSK_DISK));
      })
      .catch(() => setVolumes([]));
  }, [props.api]);
  useEffect(look, [look]);

  const write = async (): Promise<void> => {
    setStatus({ kind: 'writing' });
    try {
      const written = await props.api.writeSupportBundle(target === KIOSK_DISK ? {} : { volume: target });
      setStatus({ kind: 'written', path: written.path, bytes: written.bytes });
      props.onWritten?.();
    } catch (e) {
      setStatus({ kind: 'failed', message: errorText(e) });
      look();
    }
  };
  const download = async (): Promise<void> => {
    setStatus({ kind: 'writing' });
    try {
      const prepared = await props.api.prepareSupportDownload({});
      // An <a download> on the host's own origin: the browser saves the file; the ticket works once.
      const link = document.createElement('a');
      link.href = `${DOWNLOAD_PREFIX}${encodeURIComponent(prepared.ticket)}`;
      link.download = prepared.name;
      link.rel = 'noopener';
      document.body.append(link);
      link.click();
      link.remove();
      setStatus({ kind: 'downloaded', name: prepared.name, bytes: prepared.bytes });
      props.onWritten?.();
    } catch (e) {
      setStatus({ kind: 'failed', message: errorText(e) });
    }
  };
  const size = (bytes: number): string =>
    new Intl.NumberFormat(i18n.language, { maximumFractionDigits: 0 }).format(Math.max(1, Math.round(bytes / 1024)));
  return (
    <section className="staff-card" aria-labelledby="support-title" data-testid="support-bundle">
      <h2 id="support-title">{t('diagnostics.support.title')}</h2>
      <p>{t('diagnostics.support.explain')}</p>
      <div className="field">
        <label htmlFor={`${id}-where`} className="field-label">
          {t('diagnostics.support.where')}
        </label>
        <div className="support-where">
          <select id={`${id}-where`} value={target} onChange={(e) => setTarget(e.target.value)} data-testid="support-bundle-where">
            <option value={KIOSK_DISK}>{t('diagnostics.support.kioskDisk')}</option>
            {volumes.map((v) => (
              <option key={v.id} value={v.id}>
                {t('diagnostics.support.volume', { label: v.label })}
              </option>
            ))}
          </select>
          <button type="button" className="button button--secondary" onClick={look} data-testid="support-bundle-look">
            {t('diagnostics.support.look')}
          </button>
        </div>
        {volumes.length === 0 ? <p className="field-help">{t('diagnostics.support.noVolume')}</p> : null}
      </div>
      <div className="support-actions">
        <button
          type="button"
          className="button button--secondary"
          onClick={() => void write()}
          disabled={status.kind === 'writing'}
          data-testid="support-bundle-write"
        >
          {t('diagnostics.support.write')}
        </button>
        {canDownload() ? (
          <button
            type="button"
            className="button button--secondary"
            onClick={() => void download()}
            disabled={status.kind === 'writing'}
            data-testid="support-bundle-download"
          >
            {t('diagnostics.support.download')}
          </button>
        ) : null}
      </div>
      <div role="status" className="form-message" data-testid="support-bundle-status">
        {status.kind === 'writing' ? t('diagnostics.support.writing') : null}
        {status.kind === 'written' ? (
          <>
            {t('diagnostics.support.written', { size: size(status.bytes) })} <code data-testid="support-bundle-path">{status.path}</code>
          </>
        ) : null}
        {status.kind === 'downloaded' ? (
          <>
            {t('diagnostics.support.downloaded', { size: size(status.bytes) })} <code>{status.name}</code>
          </>
        ) : null}
        {status.kind === 'failed' ? t('diagnostics.support.failed', { message: status.message }) : null}
      </div>
    </section>
  );
}
