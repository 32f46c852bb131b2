/**
 * A progress indicator that moves: four steps filled from the core's coarse `progress.step` and a band that
 * sweeps across the current step (still under prefers-reduced-motion, see app.css). No words under it: the
 * step number and the count of messages exchanged are protocol jargon to a customer (the logs and the
 * verification report keep the counts for staff).
 */
import type { ReactNode } from 'react';
import { useTranslation } from 'react-i18next';

const STEPS = [1, 2, 3, 4] as const;

export function Progress(props: { step: number }): ReactNode {
  const { t } = useTranslation();
  const step = Math.max(0, Math.min(4, Math.trunc(props.step)));
  const stepText = t('progress.step', { step: Math.max(step, 1) });
  return (
    <div className="progress" data-testid="progress" data-step={step}>
      <div
        className="progress-track"
        role="progressbar"
        aria-label={t('progress.label')}
        aria-valuemin={0}
        aria-valuemax={4}
        aria-valuenow={step}
        aria-valuetext={stepText}
      >
        {STEPS.map((s) => (
          <span
            key={s}
            className={`progress-segment${s <= step ? ' progress-segment--done' : ''}${s === step + 1 ? ' progress-segment--current' : ''}`}
          />
        ))}
      </div>
    </div>
  );
}
