/**
 * The backend is unreachable, or not answering (a silent backend: it takes the traffic and answers nothing),
 * and the kiosk retries with backoff; staff may retry at once. "Retry now" says what came of it (announced):
 * tried at a time and answered or still not reachable, or not tried because the retry policy's request budget
 * says wait. While an attempt runs the button says so and ignores presses (it stays focusable, so the focus
 * does not fall to the page).
 */
import { useRef, useState, type ReactNode } from 'react';
import { useTranslation } from 'react-i18next';
import type { RetryResult, ScreenState } from '../../common/kiosk-api.js';
import { UnplugIcon } from '../components/icons.js';
import { ScreenFrame } from '../components/ScreenFrame.js';
import { StaffDetail } from '../components/StaffDetail.js';
import { Spinner } from '../components/Spinner.js';
import { errorText } from '../../common/error-text.js';

type Retry = { kind: 'idle' } | { kind: 'trying' } | { kind: 'done'; result: RetryResult } | { kind: 'failed'; message: string };

export function OfflineScreen(props: { state: ScreenState; onRetry: () => Promise<RetryResult> }): ReactNode {
  const { t, i18n } = useTranslation();
  const { error } = props.state.view;
  const [retry, setRetry] = useState<Retry>({ kind: 'idle' });
  const trying = retry.kind === 'trying';
  // The guard is a ref, not the state: presses that arrive before the next render are ignored too.
  const inFlight = useRef(false);

  const onRetry = async (): Promise<void> => {
    if (inFlight.current) return;
    inFlight.current = true;
    setRetry({ kind: 'trying' });
    try {
      setRetry({ kind: 'done', result: await props.onRetry() });
    } catch (e) {
      setRetry({ kind: 'failed', message: errorText(e) });
    } finally {
      inFlight.current = false;
    }
  };

  const time = (at: number): string =>
    new Date(at).toLocaleTimeString(i18n.language, { hour: '2-digit', minute: '2-digit', second: '2-digit' });
  const said = ((): string | null => {
    if (retry.kind === 'failed') return t('offline.tried.failed', { message: retry.message });
    if (retry.kind !== 'done' || retry.result.attempt === undefined) return null;
    const attempt = retry.result.attempt;
    if (attempt.tried)
      return attempt.reachable
        ? t('offline.tried.reachable', { time: time(attempt.at) })
        : t('offline.tried.unreachable', { time: time(attempt.at), detail: attempt.detail });
    if (attempt.reason === 'stopped') return t('offline.tried.stopped', { time: time(attempt.at) });
    return t('offline.tried.budget', { time: time(attempt.at), seconds: Math.max(1, Math.ceil((attempt.waitMs ?? 0) / 1_000)) });
  })();

  return (
    <ScreenFrame title={t('offline.title')} tone="problem" icon={<UnplugIcon />}>
      <p className="lead" data-testid="offline-line">
        {error?.code === 'backend_not_answering' ? t('offline.notAnswering') : t('offline.body')}
      </p>
      <Spinner />
      <button
        type="button"
        className="button button--secondary"
        data-testid="retry-button"
        aria-disabled={trying}
        onClick={() => void onRetry()}
      >
        {trying ? t('offline.retrying') : t('offline.retry')}
      </button>
      <p role="status" className="retry-result" data-testid="retry-result">
        {said}
      </p>
      {error ? <StaffDetail>{error.detail}</StaffDetail> : null}
    </ScreenFrame>
  );
}
