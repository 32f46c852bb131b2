/**
 * A progress indicator that moves: four steps filled from the core's coarse `progress.step`, a band that
 * sweeps across the current step (still under prefers-reduced-motion, see app.css), and the number of
 * messages exchanged so far, which keeps changing during a long transfer.
 */
import type { ReactNode } from 'react';
import { useTranslation } from 'react-i18next';

const STEPS = [1, 2, 3, 4] as const;

/** `showMessages: false` leaves the count out (on "tap again" it reads as if something went on). */
export function Progress(props: { step: number; apdus: number; bleMessages: number; showMessages?: boolean }): ReactNode {
  const { t } = useTranslation();
  const step = Math.max(0, Math.min(4, Math.trunc(props.step)));
  const messages = props.apdus + props.bleMessages;
  const stepText = t('progress.step', { step: Math.max(step, 1) });
  return (
    <div className="progress" data-testid="progress" data-step={step}>
      <div className="progress-track" role="progressbar" aria-label={t('progress.label')} aria-valuemin={0} aria-valuemax={4} aria-valuenow={step} aria-valuetext={stepText}>
        {STEPS.map((s) => (
          <span key={s} className={`progress-segment${s <= step ? ' progress-segment--done' : ''}${s === step + 1 ? ' progress-segment--current' : ''}`} />
        ))}
      </div>
      <p className="progress-text">
        {stepText}
        {messages > 0 && props.showMessages !== false ? ` · ${t('progress.messages', { count: messages })}` : ''}
      </p>
    </div>
  );
}
