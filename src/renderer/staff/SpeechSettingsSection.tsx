/**
 * The Speech section of the settings (issue 32): when the kiosk speaks, the volume each customer starts
 * at, the voice, headset-only and how a headset is known, what a headset may say, and the keypad's keys.
 * Every control is a native one (select, checkbox, text, button), so it is usable by keyboard and named for
 * assistive technology; a key is set by pressing it ("Press a key to add"), since staff know the key they
 * see, not its `KeyboardEvent.code`. Locked keys are shown with the source that sets them.
 */
import { useId, useState, type KeyboardEvent, type ReactNode } from 'react';
import { useTranslation } from 'react-i18next';
import type { LockSource } from '../../common/kiosk-api.js';
import { SpeechMode, SpeechVoice } from '../../common/speech.js';
import { elementInfo, MDL_NAMESPACE } from '../outcome/labels.js';
import { Field, formErrorText, lockedNote } from './Field.js';
import type { FormError } from './settings-form.js';
import {
  defaultKeys,
  keyLabel,
  MAX_HEADSET_OUTPUT,
  MAX_KEYS_PER_ACTION,
  orderedElements,
  SPEAKABLE_ELEMENTS,
  SPEECH_ACTIONS,
  VOLUME_STEPS,
  withKey,
  withoutKey,
  type SpeechAction,
  type SpeechFieldKey,
  type SpeechValues,
} from './speech-form.js';

export function SpeechSettingsSection(props: {
  values: SpeechValues;
  onChange: (values: SpeechValues) => void;
  locked: (key: SpeechFieldKey) => LockSource | boolean;
  errors: Partial<Record<SpeechFieldKey, FormError>>;
}): ReactNode {
  const { t } = useTranslation();
  const { values, locked, errors } = props;
  const set = <K extends keyof SpeechValues>(key: K, value: SpeechValues[K]): void => props.onChange({ ...values, [key]: value });
  const elementsLock = locked('speech.privateElements');
  const elementsError = errors['speech.privateElements'];
  const elementsHelpId = useId();
  const elements = orderedElements([...SPEAKABLE_ELEMENTS, ...values.privateElements]);
  const elementLabel = (id: string): string => {
    const info = elementInfo(MDL_NAMESPACE, id);
    return info.labelKey === undefined ? id : t(info.labelKey, { ns: 'outcome', ...info.labelParams });
  };
  const anyKeyOpen = SPEECH_ACTIONS.some((a) => locked(`speech.keys.${a}`) === false);

  return (
    <fieldset className="speech-settings" data-testid="speech-settings">
      <legend>{t('settings.speech.title')}</legend>
      <p className="field-help">{t('settings.speech.intro')}</p>
      <Field
        name="speech.mode"
        label={t('settings.speech.mode')}
        help={t('settings.speech.modeHelp')}
        locked={locked('speech.mode')}
        error={errors['speech.mode']}
      >
        {(c) => (
          <select {...c} value={values.mode} onChange={(e) => set('mode', SpeechMode.parse(e.target.value))}>
            {SpeechMode.options.map((m) => (
              <option key={m} value={m}>
                {t(`settings.speech.modeValue.${m}`)}
              </option>
            ))}
          </select>
        )}
      </Field>
      <Field
        name="speech.volume"
        label={t('settings.speech.volume')}
        help={t('settings.speech.volumeHelp')}
        locked={locked('speech.volume')}
        error={errors['speech.volume']}
      >
        {(c) => (
          <select
            {...c}
            className="input--short"
            value={values.volumePercent}
            onChange={(e) => set('volumePercent', Number(e.target.value))}
          >
            {VOLUME_STEPS.map((p) => (
              <option key={p} value={p}>
                {t('settings.speech.volumeValue', { percent: p })}
              </option>
            ))}
          </select>
        )}
      </Field>
      <Field
        name="speech.voice"
        label={t('settings.speech.voice')}
        help={t('settings.speech.voiceHelp')}
        locked={locked('speech.voice')}
        error={errors['speech.voice']}
      >
        {(c) => (
          <select {...c} value={values.voice} onChange={(e) => set('voice', SpeechVoice.parse(e.target.value))}>
            {SpeechVoice.options.map((v) => (
              <option key={v} value={v}>
                {t(`settings.speech.voiceValue.${v}`)}
              </option>
            ))}
          </select>
        )}
      </Field>
      <LockableCheckbox
        name="speech.headsetOnly"
        label={t('settings.speech.headsetOnly')}
        checked={values.headsetOnly}
        locked={locked('speech.headsetOnly')}
        onChange={(checked) => set('headsetOnly', checked)}
      />
      <Field
        name="speech.headsetOutput"
        label={t('settings.speech.headsetOutput')}
        help={t('settings.speech.headsetOutputHelp')}
        locked={locked('speech.headsetOutput')}
        error={errors['speech.headsetOutput']}
      >
        {(c) => (
          <input
            {...c}
            type="text"
            autoComplete="off"
            spellCheck={false}
            maxLength={MAX_HEADSET_OUTPUT + 50}
            value={values.headsetOutput}
            onChange={(e) => set('headsetOutput', e.target.value)}
          />
        )}
      </Field>
      <fieldset
        className="checkbox-group"
        data-field="speech.privateElements"
        disabled={elementsLock !== false}
        aria-describedby={elementsHelpId}
      >
        <legend>{t('settings.speech.privateElements')}</legend>
        <p id={elementsHelpId} className="field-help">
          {t('settings.speech.privateElementsHelp')}
          {elementsLock === false ? null : ` ${lockedNote(elementsLock, t)}`}
        </p>
        <div className="checkbox-grid">
          {elements.map((id) => (
            <label key={id} className="checkbox">
              <input
                type="checkbox"
                value={id}
                checked={values.privateElements.includes(id)}
                onChange={(e) =>
                  set(
                    'privateElements',
                    e.target.checked ? [...values.privateElements, id] : values.privateElements.filter((x) => x !== id),
                  )
                }
              />
              {elementLabel(id)}
            </label>
          ))}
        </div>
        {elementsError ? <p className="field-error">{formErrorText(elementsError, t)}</p> : null}
      </fieldset>
      <fieldset className="speech-keys" data-testid="speech-keys">
        <legend>{t('settings.speech.keys')}</legend>
        <p className="field-help">{t('settings.speech.keysHelp')}</p>
        {SPEECH_ACTIONS.map((action) => (
          <KeyRow
            key={action}
            action={action}
            codes={values.keys[action]}
            locked={locked(`speech.keys.${action}`)}
            error={errors[`speech.keys.${action}`]}
            onAdd={(code) => set('keys', withKey(values.keys, action, code))}
            onRemove={(code) => set('keys', withoutKey(values.keys, action, code))}
          />
        ))}
        {anyKeyOpen ? (
          <button
            type="button"
            className="button button--secondary"
            data-testid="speech-keys-reset"
            onClick={() =>
              set(
                'keys',
                defaultKeys(values.keys, (a) => locked(`speech.keys.${a}`) === false),
              )
            }
          >
            {t('settings.speech.resetKeys')}
          </button>
        ) : null}
      </fieldset>
    </fieldset>
  );
}

function LockableCheckbox(props: {
  name: string;
  label: string;
  checked: boolean;
  locked: LockSource | boolean;
  onChange: (checked: boolean) => void;
}): ReactNode {
  const { t } = useTranslation();
  const noteId = useId();
  const isLocked = props.locked !== false;
  return (
    <div className="field" data-field={props.name}>
      <label className="checkbox">
        <input
          type="checkbox"
          checked={props.checked}
          disabled={isLocked}
          {...(isLocked ? { 'aria-describedby': noteId } : {})}
          onChange={(e) => props.onChange(e.target.checked)}
        />
        {props.label}
      </label>
      {isLocked ? (
        <p id={noteId} className="field-locked" data-locked-by={typeof props.locked === 'string' ? props.locked : undefined}>
          {lockedNote(props.locked, t)}
        </p>
      ) : null}
    </div>
  );
}

/**
 * One action's keys: each one with a button to remove it, and a button that takes the next key pressed.
 * Tab leaves (keyboard users must be able to move on) and Escape cancels; any other key is taken.
 */
function KeyRow(props: {
  action: SpeechAction;
  codes: readonly string[];
  locked: LockSource | boolean;
  error: FormError | undefined;
  onAdd: (code: string) => void;
  onRemove: (code: string) => void;
}): ReactNode {
  const { t } = useTranslation();
  const [capturing, setCapturing] = useState(false);
  const labelId = useId();
  const noteId = useId();
  const isLocked = props.locked !== false;
  const actionName = t(`settings.speech.action.${props.action}`);
  const keypad = t('settings.speech.keypad');
  const full = props.codes.length >= MAX_KEYS_PER_ACTION;
  const onKeyDown = (event: KeyboardEvent<HTMLButtonElement>): void => {
    if (!capturing) return;
    if (event.code === 'Tab') {
      setCapturing(false);
      return;
    }
    event.preventDefault();
    event.stopPropagation();
    setCapturing(false);
    if (event.code !== 'Escape' && event.code !== '') props.onAdd(event.code);
  };
  return (
    <div
      className={`key-row${props.error ? ' field--invalid' : ''}`}
      role="group"
      aria-labelledby={labelId}
      data-field={`speech.keys.${props.action}`}
    >
      <span id={labelId} className="key-row-action">
        {actionName}
      </span>
      <ul className="key-list">
        {props.codes.length === 0 ? <li className="key-none">{t('settings.speech.noKeys')}</li> : null}
        {props.codes.map((code) => (
          <li key={code} data-code={code}>
            <kbd>{keyLabel(code, keypad)}</kbd>
            {isLocked ? null : (
              <button
                type="button"
                className="key-remove"
                aria-label={t('settings.speech.removeKey', { key: keyLabel(code, keypad), action: actionName })}
                onClick={() => props.onRemove(code)}
              >
                <span aria-hidden="true">✕</span>
              </button>
            )}
          </li>
        ))}
      </ul>
      {isLocked ? (
        <p id={noteId} className="field-locked" data-locked-by={typeof props.locked === 'string' ? props.locked : undefined}>
          {lockedNote(props.locked, t)}
        </p>
      ) : (
        <button
          type="button"
          className={`button button--secondary key-capture${capturing ? ' key-capture--on' : ''}`}
          aria-pressed={capturing}
          disabled={full && !capturing}
          data-testid={`speech-key-add-${props.action}`}
          onClick={() => setCapturing(true)}
          onKeyDown={onKeyDown}
          onBlur={() => setCapturing(false)}
        >
          {capturing ? t('settings.speech.capturing') : t('settings.speech.addKey')}
        </button>
      )}
      {props.error ? (
        <p className="field-error" data-testid="field-error">
          <span aria-hidden="true">✕ </span>
          {formErrorText(props.error, t)}
        </p>
      ) : null}
    </div>
  );
}
