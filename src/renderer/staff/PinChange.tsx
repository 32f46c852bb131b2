/** Change the staff PIN: typed twice, digits only; the host stores its salted hash. */
import { useId, useState, type SyntheticEvent, type ReactNode } from 'react';
import { useTranslation } from 'react-i18next';
import { Pin, type KioskApi } from '../../common/kiosk-api.js';

type Status = { kind: 'idle' } | { kind: 'busy' } | { kind: 'done' } | { kind: 'problem'; message: string };

export function PinChange(props: { api: KioskApi }): ReactNode {
  const { t } = useTranslation();
  const id = useId();
  const [next, setNext] = useState('');
  const [again, setAgain] = useState('');
  const [status, setStatus] = useState<Status>({ kind: 'idle' });

  const submit = async (): Promise<void> => {
    if (!Pin.safeParse(next).success) {
      setStatus({ kind: 'problem', message: t('pin.format') });
      return;
    }
    if (next !== again) {
      setStatus({ kind: 'problem', message: t('settings.pinMismatch') });
      return;
    }
    setStatus({ kind: 'busy' });
    try {
      const result = await props.api.changePin({ next });
      setNext('');
      setAgain('');
      setStatus(result.ok ? { kind: 'done' } : { kind: 'problem', message: result.errors.map((e) => e.message).join(' ') });
    } catch (e) {
      setStatus({ kind: 'problem', message: e instanceof Error ? e.message : String(e) });
    }
  };
  const onSubmit = (event: SyntheticEvent): void => {
    event.preventDefault();
    void submit();
  };
  const digits = (value: string): string => value.replace(/[^0-9]/g, '').slice(0, 12);
  const invalid = status.kind === 'problem';

  return (
    <section className="staff-card" aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>{t('settings.pinTitle')}</h2>
      <form onSubmit={onSubmit} noValidate>
        <div className="field">
          <label htmlFor={`${id}-new`} className="field-label">
            {t('settings.pinNew')}
          </label>
          <input id={`${id}-new`} type="password" inputMode="numeric" autoComplete="new-password" value={next} aria-invalid={invalid} aria-describedby={`${id}-status`} onChange={(e) => setNext(digits(e.target.value))} />
        </div>
        <div className="field">
          <label htmlFor={`${id}-again`} className="field-label">
            {t('settings.pinConfirm')}
          </label>
          <input id={`${id}-again`} type="password" inputMode="numeric" autoComplete="new-password" value={again} aria-invalid={invalid} aria-describedby={`${id}-status`} onChange={(e) => setAgain(digits(e.target.value))} />
        </div>
        <button type="submit" className="button button--secondary" disabled={status.kind === 'busy'}>
          {t('settings.pinSubmit')}
        </button>
        <p id={`${id}-status`} className={invalid ? 'form-message form-message--problem' : 'form-message'} role="status">
          {status.kind === 'done' ? t('settings.pinChanged') : null}
          {status.kind === 'problem' ? (
            <>
              <span aria-hidden="true">✕ </span>
              {status.message}
            </>
          ) : null}
        </p>
      </form>
    </section>
  );
}
