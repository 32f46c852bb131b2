/**
 * The staff paste field: the text of a QR code pasted, typed, or typed by a keyboard-wedge scanner aimed at
 * the field (its closing Enter submits). Sent unmodified except the line terminator(s) at the end.
 */
import { useId, useState, type KeyboardEvent, type SubmitEvent } from 'react';
import { useTranslation } from 'react-i18next';
import { MAX_QR_TEXT } from '../../common/kiosk-api.js';
import { withoutTrailingNewline } from './scan-text.js';
import './qr.css';

export function PasteScan({ onScan }: { onScan: (text: string) => void }) {
  const { t } = useTranslation('qr');
  const [text, setText] = useState('');
  const id = useId();
  const submittable = withoutTrailingNewline(text).length > 0;

  const submit = (): void => {
    const value = withoutTrailingNewline(text);
    if (value.length === 0) return;
    // Cleared at once: the field must not keep a customer's engagement.
    setText('');
    onScan(value);
  };
  const onSubmit = (event: SubmitEvent<HTMLFormElement>): void => {
    event.preventDefault();
    submit();
  };
  const onKeyDown = (event: KeyboardEvent<HTMLTextAreaElement>): void => {
    // Enter submits (a scanner ends with Enter); Shift+Enter still starts a new line.
    if (event.key === 'Enter' && !event.shiftKey && !event.nativeEvent.isComposing) {
      event.preventDefault();
      submit();
    }
  };

  return (
    <form className="paste-scan" data-testid="paste-scan" onSubmit={onSubmit} noValidate>
      <label htmlFor={`${id}-text`}>{t('paste.label')}</label>
      <p id={`${id}-help`} className="paste-scan-help">
        {t('paste.help')}
      </p>
      <textarea
        id={`${id}-text`}
        aria-describedby={`${id}-help`}
        value={text}
        maxLength={MAX_QR_TEXT}
        rows={3}
        spellCheck={false}
        autoComplete="off"
        autoCapitalize="off"
        autoCorrect="off"
        onChange={(event) => setText(event.target.value)}
        onKeyDown={onKeyDown}
      />
      <button type="submit" disabled={!submittable}>
        {t('paste.submit')}
      </button>
    </form>
  );
}
