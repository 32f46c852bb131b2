/**
 * The staff PIN pad: digits by keyboard or on-screen keypad. The PIN lives only in this component's state
 * and is cleared after every attempt. The host checks it (salted scrypt, lockout); this screen only says
 * what happened: wrong PIN with the attempts left, locked out with the time to wait, or no PIN set.
 */
import { useEffect, useId, useRef, useState, type SyntheticEvent, type KeyboardEvent, type ReactNode } from 'react';
import { useTranslation } from 'react-i18next';
import type { KioskApi, StaffState, UnlockResult } from '../../common/kiosk-api.js';
import { ScreenFrame } from '../components/ScreenFrame.js';
import { secondsUntil, useNow } from '../components/use-now.js';
import { errorText } from '../../common/error-text.js';

const MAX_PIN = 12;
const KEYS = ['1', '2', '3', '4', '5', '6', '7', '8', '9'] as const;

type Problem =
  | { kind: 'wrong'; attemptsLeft?: number | undefined }
  | { kind: 'locked_out'; until: number }
  | { kind: 'no_pin' }
  | { kind: 'format' }
  | { kind: 'failed'; message: string };

export function problemFor(result: Exclude<UnlockResult, { ok: true }>, now: number): Problem {
  switch (result.reason) {
    case 'wrong_pin':
      return { kind: 'wrong', attemptsLeft: result.attemptsLeft };
    case 'locked_out':
      return { kind: 'locked_out', until: now + (result.retryAfterMs ?? 0) };
    case 'no_pin':
      return { kind: 'no_pin' };
  }
}

export function StaffPinScreen(props: { api: KioskApi; staff: StaffState; onUnlocked: () => void; onCancel: () => void }): ReactNode {
  const { t } = useTranslation();
  const { api, staff, onUnlocked } = props;
  const [pin, setPin] = useState('');
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<Problem | null>(() =>
    !staff.pinConfigured
      ? { kind: 'no_pin' }
      : staff.lockedOutUntil !== null && staff.lockedOutUntil > Date.now()
        ? { kind: 'locked_out', until: staff.lockedOutUntil }
        : null,
  );
  const lockedUntil = problem?.kind === 'locked_out' ? problem.until : null;
  const now = useNow(1_000, lockedUntil !== null);
  const locked = lockedUntil !== null && lockedUntil > now;
  const input = useRef<HTMLInputElement>(null);
  const messageRef = useRef<HTMLParagraphElement>(null);
  const id = useId();
  const { onCancel } = props;

  // The PIN field takes the focus (after the frame focused the heading, so the title is still announced).
  useEffect(() => {
    input.current?.focus();
  }, []);

  useEffect(() => {
    if (staff.unlocked) onUnlocked();
  }, [staff.unlocked, onUnlocked]);

  // A lockout disables the field and the keypad; the focus would fall to <body>. It goes to the message
  // that says why and for how long (read out on focus), and back to the field when the lockout ends.
  const wasLocked = useRef(false);
  useEffect(() => {
    if (locked) messageRef.current?.focus();
    else if (wasLocked.current) input.current?.focus();
    wasLocked.current = locked;
  }, [locked]);

  // Escape leaves the PIN pad from anywhere on it, as Cancel does.
  useEffect(() => {
    const onEscape = (event: globalThis.KeyboardEvent): void => {
      if (event.key !== 'Escape' || event.defaultPrevented) return;
      event.preventDefault();
      onCancel();
    };
    document.addEventListener('keydown', onEscape);
    return () => document.removeEventListener('keydown', onEscape);
  }, [onCancel]);

  const append = (digit: string): void => {
    setPin((p) => (p.length < MAX_PIN ? p + digit : p));
    input.current?.focus();
  };

  const submit = async (): Promise<void> => {
    if (busy || locked) return;
    if (!/^[0-9]{4,12}$/.test(pin)) {
      setProblem({ kind: 'format' });
      return;
    }
    setBusy(true);
    const attempt = pin;
    setPin('');
    try {
      const result = await api.unlock({ pin: attempt });
      if (result.ok) onUnlocked();
      else setProblem(problemFor(result, Date.now()));
    } catch (e) {
      setProblem({ kind: 'failed', message: errorText(e) });
    } finally {
      setBusy(false);
      input.current?.focus();
    }
  };

  const onSubmit = (event: SyntheticEvent): void => {
    event.preventDefault();
    void submit();
  };

  // Digits typed while a keypad button has the focus still go into the PIN.
  const onKeyDown = (event: KeyboardEvent<HTMLElement>): void => {
    if (event.target === input.current) return;
    if (/^[0-9]$/.test(event.key)) {
      event.preventDefault();
      append(event.key);
    } else if (event.key === 'Backspace') {
      event.preventDefault();
      setPin((p) => p.slice(0, -1));
    }
  };

  const message = ((): string | null => {
    if (!problem) return null;
    switch (problem.kind) {
      case 'wrong':
        return problem.attemptsLeft === undefined
          ? t('pin.wrong')
          : `${t('pin.wrong')} ${t('pin.attemptsLeft', { count: problem.attemptsLeft })}`;
      case 'locked_out':
        return locked ? t('pin.lockedOut', { seconds: secondsUntil(problem.until, now) }) : null;
      case 'no_pin':
        return t('pin.noPin');
      case 'format':
        return t('pin.format');
      case 'failed':
        return t('pin.failed', { message: problem.message });
    }
  })();

  return (
    <ScreenFrame title={t('pin.title')} tone="staff" className="screen--pin">
      <form className="pin-form" onSubmit={onSubmit} onKeyDown={onKeyDown} noValidate>
        <p className="body-text">{t('pin.body')}</p>
        <label htmlFor={`${id}-pin`} className="field-label">
          {t('pin.label')}
        </label>
        <input
          ref={input}
          id={`${id}-pin`}
          className="pin-input"
          type="password"
          inputMode="numeric"
          autoComplete="off"
          maxLength={MAX_PIN}
          value={pin}
          aria-invalid={problem !== null && problem.kind !== 'no_pin'}
          aria-describedby={`${id}-message`}
          onChange={(e) => setPin(e.target.value.replace(/[^0-9]/g, '').slice(0, MAX_PIN))}
          disabled={locked}
        />
        <p
          ref={messageRef}
          id={`${id}-message`}
          className={message ? 'form-message form-message--problem' : 'form-message'}
          role="alert"
          tabIndex={-1}
          data-testid="pin-message"
        >
          {message ? (
            <>
              <span aria-hidden="true">✕ </span>
              {message}
            </>
          ) : null}
        </p>
        <div className="keypad" role="group" aria-label={t('pin.keypad')}>
          {KEYS.map((k) => (
            <button key={k} type="button" className="key" onClick={() => append(k)} disabled={locked}>
              {k}
            </button>
          ))}
          <button type="button" className="key key--small" onClick={() => setPin('')} disabled={locked}>
            {t('pin.clear')}
          </button>
          <button type="button" className="key" onClick={() => append('0')} disabled={locked}>
            0
          </button>
          <button
            type="button"
            className="key key--small"
            aria-label={t('pin.backspace')}
            onClick={() => setPin((p) => p.slice(0, -1))}
            disabled={locked}
          >
            ⌫
          </button>
        </div>
        <div className="form-actions">
          <button type="button" className="button button--secondary" onClick={onCancel}>
            {t('pin.cancel')}
          </button>
          <button type="submit" className="button button--primary" disabled={busy || locked || pin.length === 0}>
            {t('pin.unlock')}
          </button>
        </div>
      </form>
    </ScreenFrame>
  );
}
