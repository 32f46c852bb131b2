/** One labelled settings field: help text, where its value is set when locked, and its error. */
import { useId, type ReactNode } from 'react';
import { useTranslation } from 'react-i18next';
import type { LockSource } from '../../common/kiosk-api.js';
import type { FormError } from './settings-form.js';

export interface FieldControlProps {
  readonly id: string;
  readonly 'aria-describedby'?: string;
  readonly 'aria-invalid': boolean;
  readonly disabled: boolean;
}

type TFunction = (key: string, options?: Record<string, unknown>) => string;

/** Where a locked value is set, in words (`true`: the host did not say which source). */
export function lockedNote(locked: boolean | LockSource, t: TFunction): string {
  switch (locked) {
    case 'managed':
      return t('settings.lockedBy.managed');
    case 'environment':
      return t('settings.lockedBy.environment');
    case 'command_line':
      return t('settings.lockedBy.commandLine');
    case 'test_setup':
      return t('settings.lockedBy.testSetup');
    default:
      return t('settings.locked');
  }
}

/** A field error in words. */
export function formErrorText(error: FormError, t: TFunction): string {
  switch (error.kind) {
    case 'range':
      return t('settings.range', { min: error.min, max: error.max });
    case 'host':
      return error.message;
    case 'tooLong':
      return t('settings.speech.tooLong', { max: error.max });
    case 'keyTwice':
      return t('settings.speech.keyTwice', { action: t(`settings.speech.action.${error.action}`) });
  }
}

/**
 * `locked`: false when editable; else the source that sets the value (named under the field), or true when
 * the host did not say which.
 */
export function Field(props: {
  label: string;
  note?: string | undefined;
  help?: string | undefined;
  locked: boolean | LockSource;
  error?: FormError | undefined;
  name: string;
  children: (control: FieldControlProps) => ReactNode;
}): ReactNode {
  const { t } = useTranslation();
  const isLocked = props.locked !== false;
  const lockedText = lockedNote(props.locked, t);
  const id = useId();
  const helpId = `${id}-help`;
  const errorId = `${id}-error`;
  const lockedId = `${id}-locked`;
  const noteId = `${id}-note`;
  const describedBy = [props.note ? noteId : null, props.help ? helpId : null, isLocked ? lockedId : null, props.error ? errorId : null]
    .filter((x) => x !== null)
    .join(' ');
  const errorText = props.error ? formErrorText(props.error, t) : null;
  return (
    <div className={`field${props.error ? ' field--invalid' : ''}`} data-field={props.name}>
      <label htmlFor={id} className="field-label">
        {props.label}
      </label>
      {props.note ? (
        <p id={noteId} className="field-note">
          {props.note}
        </p>
      ) : null}
      {props.help ? (
        <p id={helpId} className="field-help">
          {props.help}
        </p>
      ) : null}
      {props.children({
        id,
        ...(describedBy ? { 'aria-describedby': describedBy } : {}),
        'aria-invalid': props.error !== undefined,
        disabled: isLocked,
      })}
      {isLocked ? (
        <p id={lockedId} className="field-locked" data-locked-by={typeof props.locked === 'string' ? props.locked : undefined}>
          {lockedText}
        </p>
      ) : null}
      {errorText ? (
        <p id={errorId} className="field-error" data-testid="field-error">
          <span aria-hidden="true">✕ </span>
          {errorText}
        </p>
      ) : null}
    </div>
  );
}
