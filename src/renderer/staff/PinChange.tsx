/**
 * Change the staff PIN: the current PIN (so a settings screen left open cannot be used to take the PIN
 * over; the host checks it and counts a wrong one like a wrong unlock), then the new one twice, digits
 * only. The host stores its salted hash. Every field is emptied after each attempt.
 */
import { useState, type SyntheticEvent, type ReactNode } from 'react';
import { useTranslation } from 'react-i18next';
import { Pin, type FieldError, type KioskApi } from '../../common/kiosk-api.js';
import { Field, type FieldControlProps } from './Field.js';
import type { FormError } from './settings-form.js';
import { errorText } from '../../common/error-text.js';

type PinField = 'current' | 'next' | 'again';
type Status = { kind: 'idle' } | { kind: 'busy' } | { kind: 'done' } | { kind: 'problem'; message: string };
export type PinErrors = Partial<Record<PinField, FormError>>;

const MAX_PIN = 12;

/** Checks before sending: a current PIN is given, the new one is a PIN and typed the same twice. */
export function pinChangeErrors(values: Readonly<Record<PinField, string>>, t: (key: string) => string): PinErrors {
  const errors: PinErrors = {};
  if (values.current === '') errors.current = { kind: 'host', message: t('settings.pinCurrentMissing') };
  if (!Pin.safeParse(values.next).success) errors.next = { kind: 'host', message: t('pin.format') };
  else if (values.next !== values.again) errors.again = { kind: 'host', message: t('settings.pinMismatch') };
  return errors;
}

/** The host's field errors by field (`current`: wrong current PIN, `next`: the new PIN); the rest apart. */
export function pinHostErrors(errors: readonly FieldError[]): { byField: PinErrors; other: string[] } {
  const byField: PinErrors = {};
  const other: string[] = [];
  for (const e of errors) {
    if ((e.key === 'current' || e.key === 'next') && !byField[e.key]) byField[e.key] = { kind: 'host', message: e.message };
    else other.push(e.message);
  }
  return { byField, other };
}

export function PinChange(props: { api: KioskApi }): ReactNode {
  const { t } = useTranslation();
  const [values, setValues] = useState<Record<PinField, string>>({ current: '', next: '', again: '' });
  const [errors, setErrors] = useState<PinErrors>({});
  const [status, setStatus] = useState<Status>({ kind: 'idle' });

  const submit = async (): Promise<void> => {
    const found = pinChangeErrors(values, t);
    setErrors(found);
    if (Object.keys(found).length > 0) {
      setStatus({ kind: 'idle' });
      return;
    }
    setStatus({ kind: 'busy' });
    const { current, next } = values;
    setValues({ current: '', next: '', again: '' });
    try {
      const result = await props.api.changePin({ current, next });
      if (result.ok) {
        setStatus({ kind: 'done' });
        return;
      }
      const mapped = pinHostErrors(result.errors);
      setErrors(mapped.byField);
      setStatus(mapped.other.length > 0 ? { kind: 'problem', message: mapped.other.join(' ') } : { kind: 'idle' });
    } catch (e) {
      setStatus({ kind: 'problem', message: errorText(e) });
    }
  };
  const onSubmit = (event: SyntheticEvent): void => {
    event.preventDefault();
    void submit();
  };
  const digits = (value: string): string => value.replace(/[^0-9]/g, '').slice(0, MAX_PIN);
  const set = (field: PinField, value: string): void => {
    setValues((v) => ({ ...v, [field]: digits(value) }));
    if (status.kind === 'done') setStatus({ kind: 'idle' });
  };
  const input =
    (field: PinField, autoComplete: string) =>
    (control: FieldControlProps): ReactNode => (
      <input
        {...control}
        type="password"
        inputMode="numeric"
        autoComplete={autoComplete}
        maxLength={MAX_PIN}
        value={values[field]}
        onChange={(e) => set(field, e.target.value)}
      />
    );

  return (
    <section className="staff-card" aria-labelledby="pin-change-title">
      <h2 id="pin-change-title">{t('settings.pinTitle')}</h2>
      <form onSubmit={onSubmit} noValidate data-testid="pin-change">
        <Field name="pin.current" label={t('settings.pinCurrent')} locked={false} error={errors.current}>
          {input('current', 'current-password')}
        </Field>
        <Field name="pin.next" label={t('settings.pinNew')} locked={false} error={errors.next}>
          {input('next', 'new-password')}
        </Field>
        <Field name="pin.again" label={t('settings.pinConfirm')} locked={false} error={errors.again}>
          {input('again', 'new-password')}
        </Field>
        <button type="submit" className="button button--secondary" disabled={status.kind === 'busy'}>
          {t('settings.pinSubmit')}
        </button>
        <p
          className={status.kind === 'problem' ? 'form-message form-message--problem' : 'form-message'}
          role="status"
          data-testid="pin-change-status"
        >
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
