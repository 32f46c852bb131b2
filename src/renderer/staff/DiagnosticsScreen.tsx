/**
 * Diagnostics (behind the staff PIN): the backend's failures (the last one and why, how many in a row, the
 * request budget), the device self-test, recent events (newest first) and counts, the
 * version, and how the application is set up (secrets, managed file, logs, updates). The host sends categories and counts only, never personal data; React escapes every text it
 * shows. The self-test first probes the camera here (the screen owns it) and reports what it found, so the
 * host's camera check reflects the camera as it is now.
 */
import { useCallback, useEffect, useState, type ReactNode } from 'react';
import { useTranslation } from 'react-i18next';
import type { DiagnosticEvent, Diagnostics, KioskApi, SelfTestCheck } from '../../common/kiosk-api.js';
import { AppStatusCard } from './AppStatusCard.js';
import { BackendFailuresCard } from './BackendFailuresCard.js';
import { probeCamera } from './camera-probe.js';
import { SpeechCard } from './SpeechCard.js';
import { SupportBundleCard } from './SupportBundleCard.js';
import { countLabel, eventText, selfTestStatusText } from './diagnostic-texts.js';
import { errorText } from '../../common/error-text.js';

type Load<T> = { kind: 'loading' } | { kind: 'loaded'; value: T } | { kind: 'failed'; message: string };

const message = (e: unknown): string => errorText(e);

/** At most this many events are listed. */
export const MAX_EVENTS_SHOWN = 200;

/** `backend_unavailable` may wrap after its underscores, so the detail column keeps room for its words. */
export function breakAfterUnderscores(name: string): ReactNode[] {
  const parts = name.split('_');
  return parts.flatMap((part, i) => (i < parts.length - 1 ? [`${part}_`, <wbr key={i} />] : [part]));
}

/**
 * The events as listed: newest first. The host already sends them newest first; sorting by time (stable,
 * so equal times keep the host's order) keeps that true whatever order a host uses.
 */
export function eventsForDisplay(events: readonly DiagnosticEvent[]): DiagnosticEvent[] {
  return events
    .map((event, index) => ({ event, index }))
    .sort((a, b) => b.event.at - a.event.at || a.index - b.index)
    .slice(0, MAX_EVENTS_SHOWN)
    .map((e) => e.event);
}

function mediaDevices(): MediaDevices | undefined {
  // Absent outside a secure context (and in Node, where the markup tests render this screen).
  return typeof navigator === 'undefined' ? undefined : navigator.mediaDevices;
}

export function DiagnosticsScreen(props: { api: KioskApi; language: string; cameraDeviceId: string | null }): ReactNode {
  const { t } = useTranslation();
  const { api } = props;
  const [diagnostics, setDiagnostics] = useState<Load<Diagnostics>>({ kind: 'loading' });
  const [selfTest, setSelfTest] = useState<Load<SelfTestCheck[]> | null>(null);

  const refresh = useCallback(() => {
    api
      .getDiagnostics({})
      .then((value) => setDiagnostics({ kind: 'loaded', value }))
      .catch((e: unknown) => setDiagnostics({ kind: 'failed', message: message(e) }));
  }, [api]);
  useEffect(refresh, [refresh]);

  const runSelfTest = async (): Promise<void> => {
    setSelfTest({ kind: 'loading' });
    // A report that does not arrive leaves the host's last camera state; the self-test still runs.
    await probeCamera(mediaDevices(), props.cameraDeviceId, (camera) => api.reportCamera(camera).catch(() => undefined));
    try {
      const r = await api.selfTest({});
      setSelfTest({ kind: 'loaded', value: r.checks });
      refresh();
    } catch (e) {
      setSelfTest({ kind: 'failed', message: message(e) });
    }
  };

  const time = (at: number): string =>
    new Date(at).toLocaleTimeString(props.language, { hour: '2-digit', minute: '2-digit', second: '2-digit' });
  const dateTime = (at: number): string => new Date(at).toLocaleString(props.language);
  const checkName = (name: SelfTestCheck['name']): string => {
    switch (name) {
      case 'backend':
        return t('diagnostics.check.backend');
      case 'nfc':
        return t('diagnostics.check.nfc');
      case 'ble_central':
        return t('diagnostics.check.bleCentral');
      case 'ble_peripheral':
        return t('diagnostics.check.blePeripheral');
      case 'camera':
        return t('diagnostics.check.camera');
    }
  };
  const levelName = (level: 'info' | 'warn' | 'error'): string =>
    level === 'info' ? t('diagnostics.level.info') : level === 'warn' ? t('diagnostics.level.warn') : t('diagnostics.level.error');

  return (
    <div className="staff-columns diagnostics">
      <div>
        {/* First: when the backend fails, this is what staff came for. */}
        {diagnostics.kind === 'loaded' && diagnostics.value.backend !== undefined ? (
          <BackendFailuresCard backend={diagnostics.value.backend} dateTime={dateTime} />
        ) : null}
        <section className="staff-card" aria-labelledby="selftest-title">
          <h2 id="selftest-title">{t('diagnostics.checks')}</h2>
          <button
            type="button"
            className="button button--primary"
            onClick={() => void runSelfTest()}
            disabled={selfTest?.kind === 'loading'}
            data-testid="self-test"
          >
            {t('diagnostics.selfTest')}
          </button>
          <div role="status" className="form-message">
            {selfTest?.kind === 'loading' ? t('diagnostics.selfTestRunning') : null}
            {selfTest?.kind === 'failed' ? t('diagnostics.selfTestFailed', { message: selfTest.message }) : null}
          </div>
          {selfTest?.kind === 'loaded' ? (
            <table className="data-table" data-testid="self-test-results">
              <thead>
                <tr>
                  <th scope="col">{t('diagnostics.col.check')}</th>
                  <th scope="col">{t('diagnostics.col.result')}</th>
                  <th scope="col">{t('diagnostics.col.status')}</th>
                </tr>
              </thead>
              <tbody>
                {selfTest.value.map((c) => (
                  <tr key={c.name} data-check={c.name} data-ok={c.ok}>
                    <th scope="row">{checkName(c.name)}</th>
                    <td className={c.ok ? 'pass' : 'fail'}>
                      <span aria-hidden="true">{c.ok ? '✓ ' : '✕ '}</span>
                      {c.ok ? t('diagnostics.pass') : t('diagnostics.fail')}
                    </td>
                    <td>
                      <span data-status={c.status}>{selfTestStatusText(c.status, t)}</span>
                      {c.detail ? <span className="cell-detail"> — {c.detail}</span> : null}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          ) : null}
        </section>
        <SupportBundleCard api={api} onWritten={refresh} />
        {diagnostics.kind === 'loaded' ? (
          <section className="staff-card" aria-labelledby="counts-title">
            <h2 id="counts-title">{t('diagnostics.counts')}</h2>
            <dl className="facts">
              <div className="fact-row">
                <dt>{t('diagnostics.version')}</dt>
                <dd data-testid="version">{diagnostics.value.version}</dd>
              </div>
              <div className="fact-row">
                <dt>{t('diagnostics.startedAt')}</dt>
                <dd>{dateTime(diagnostics.value.startedAt)}</dd>
              </div>
              {Object.entries(diagnostics.value.counts)
                .slice(0, 100)
                .map(([name, count]) => (
                  <div key={name} className="fact-row" data-count={name}>
                    <dt>{countLabel(name, t)}</dt>
                    <dd>{count}</dd>
                  </div>
                ))}
            </dl>
            {Object.keys(diagnostics.value.counts).length === 0 ? <p className="body-text">{t('diagnostics.noCounts')}</p> : null}
          </section>
        ) : null}
        {diagnostics.kind === 'loaded' && diagnostics.value.app !== undefined ? (
          <AppStatusCard app={diagnostics.value.app} dateTime={dateTime} />
        ) : null}
        {diagnostics.kind === 'loaded' ? <SpeechCard speech={diagnostics.value.speech} /> : null}
      </div>
      <div className="staff-card">
        <div className="card-heading">
          <h2 id="events-title">{t('diagnostics.events')}</h2>
          <button type="button" className="button button--secondary" onClick={refresh}>
            {t('diagnostics.refresh')}
          </button>
        </div>
        {diagnostics.kind === 'loading' ? <p className="body-text">{t('diagnostics.loading')}</p> : null}
        {diagnostics.kind === 'failed' ? (
          <p className="form-message form-message--problem">{t('diagnostics.loadFailed', { message: diagnostics.message })}</p>
        ) : null}
        {diagnostics.kind === 'loaded' && diagnostics.value.events.length === 0 ? (
          <p className="body-text">{t('diagnostics.noEvents')}</p>
        ) : null}
        {diagnostics.kind === 'loaded' && diagnostics.value.events.length > 0 ? (
          <div className="table-scroll" tabIndex={0} role="region" aria-labelledby="events-title">
            <table className="data-table" data-testid="events">
              <thead>
                <tr>
                  <th scope="col">{t('diagnostics.col.time')}</th>
                  <th scope="col">{t('diagnostics.col.level')}</th>
                  <th scope="col">{t('diagnostics.col.event')}</th>
                  <th scope="col">{t('diagnostics.col.detail')}</th>
                </tr>
              </thead>
              <tbody>
                {eventsForDisplay(diagnostics.value.events).map((e, i) => (
                  <tr key={`${e.at}-${i}`} className={`event--${e.level}`}>
                    <td>{time(e.at)}</td>
                    <td>{levelName(e.level)}</td>
                    <td data-event={e.event}>
                      <span className="event-line">{eventText(e.event, t)}</span>
                      {/* The code as logged, for support (the log and the support bundle use it). */}
                      <code className="event-code">{breakAfterUnderscores(e.event)}</code>
                    </td>
                    <td>{e.detail ?? ''}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        ) : null}
      </div>
    </div>
  );
}
