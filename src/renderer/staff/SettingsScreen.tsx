/**
 * Settings (behind the staff PIN). The API key is write-only: the host says only whether one is set, and
 * a typed key is dropped from this component's state as soon as it is saved. Keys set by the environment
 * are shown disabled. Field errors (ours before sending, the host's after) appear next to their fields.
 * The request profile applies at once when chosen (`setProfile`, which also persists it); Save sends the
 * other fields.
 */
import { useEffect, useState, type SyntheticEvent, type ReactNode } from 'react';
import { useTranslation } from 'react-i18next';
import { BleRoles, LANGUAGES, type KioskApi, type LockSource, type ScreenState, type Settings } from '../../common/kiosk-api.js';
import { PasteScan } from '../qr/PasteScan.js';
import { Field } from './Field.js';
import { PinChange } from './PinChange.js';
import { SpeechSettingsSection } from './SpeechSettingsSection.js';
import {
  buildUpdate,
  hostErrors,
  lockOf,
  valuesFrom,
  type FieldKey,
  type FormError,
  type FormValues,
  type TimeoutKey,
} from './settings-form.js';
import { errorText } from '../../common/error-text.js';

type ProfileStatus = { kind: 'idle' } | { kind: 'saving'; name: string } | { kind: 'saved' } | { kind: 'failed'; message: string };
type SaveStatus =
  | { kind: 'idle' }
  | { kind: 'saving' }
  | { kind: 'saved' }
  | { kind: 'unchanged' }
  | { kind: 'invalid'; other: string[] }
  | { kind: 'failed'; message: string };

interface CameraOption {
  readonly deviceId: string;
  readonly label: string;
}

function useCameras(): CameraOption[] {
  const { t } = useTranslation();
  const [cameras, setCameras] = useState<CameraOption[]>([]);
  useEffect(() => {
    let live = true;
    const devices = typeof navigator !== 'undefined' ? (navigator.mediaDevices as MediaDevices | undefined) : undefined;
    if (!devices) return undefined;
    devices
      .enumerateDevices()
      .then((list) => {
        if (!live) return;
        const video = list.filter((d) => d.kind === 'videoinput' && d.deviceId !== '');
        setCameras(video.map((d, i) => ({ deviceId: d.deviceId, label: d.label || t('settings.cameraUnnamed', { n: i + 1 }) })));
      })
      .catch(() => {
        // No permission or no media devices: the list offers the system default only.
      });
    return () => {
      live = false;
    };
  }, [t]);
  return cameras;
}

export function SettingsScreen(props: { api: KioskApi; state: ScreenState; onScan: (text: string) => Promise<string> }): ReactNode {
  const { t } = useTranslation();
  const { api } = props;
  const [settings, setSettings] = useState<Settings | null>(null);
  const [loadError, setLoadError] = useState<string | null>(null);
  const [values, setValues] = useState<FormValues | null>(null);
  const [errors, setErrors] = useState<Partial<Record<FieldKey, FormError>>>({});
  const [status, setStatus] = useState<SaveStatus>({ kind: 'idle' });
  const [pasteResult, setPasteResult] = useState<string | null>(null);
  const [profileStatus, setProfileStatus] = useState<ProfileStatus>({ kind: 'idle' });
  const cameras = useCameras();

  useEffect(() => {
    let live = true;
    api
      .getSettings({})
      .then((s) => {
        if (!live) return;
        setSettings(s);
        setValues(valuesFrom(s));
      })
      .catch((e: unknown) => {
        if (live) setLoadError(errorText(e));
      });
    return () => {
      live = false;
    };
  }, [api]);

  if (loadError !== null) return <p className="form-message form-message--problem">{t('settings.loadFailed', { message: loadError })}</p>;
  if (!settings || !values) return <p className="body-text">{t('settings.loading')}</p>;

  const set = <K extends keyof FormValues>(key: K, value: FormValues[K]): void => {
    setValues({ ...values, [key]: value });
    setStatus({ kind: 'idle' });
  };
  const setTimeoutValue = (key: TimeoutKey, value: string): void => {
    set('timeouts', { ...values.timeouts, [key]: value });
  };
  // Truthy when locked: the source that sets the key (the field names it), or true when the host did not say.
  const locked = (key: FieldKey): LockSource | boolean => lockOf(key, settings);

  const save = async (): Promise<void> => {
    const built = buildUpdate(values, settings);
    setErrors(built.errors);
    if (Object.keys(built.errors).length > 0) {
      setStatus({ kind: 'invalid', other: [] });
      return;
    }
    if (Object.keys(built.update).length === 0) {
      setStatus({ kind: 'unchanged' });
      return;
    }
    setStatus({ kind: 'saving' });
    try {
      const result = await api.saveSettings(built.update);
      if (result.ok) {
        setSettings(result.settings);
        setValues(valuesFrom(result.settings));
        setErrors({});
        setStatus({ kind: 'saved' });
      } else {
        const mapped = hostErrors(result.errors);
        setErrors(mapped.byField);
        setStatus({ kind: 'invalid', other: mapped.other });
      }
    } catch (e) {
      setStatus({ kind: 'failed', message: errorText(e) });
    }
  };
  const onSubmit = (event: SyntheticEvent): void => {
    event.preventDefault();
    void save();
  };

  const chooseProfile = async (name: string): Promise<void> => {
    if (name === settings.profile || profileStatus.kind === 'saving') return;
    setProfileStatus({ kind: 'saving', name });
    try {
      await api.setProfile({ name });
      setSettings((s) => (s ? { ...s, profile: name } : s));
      setProfileStatus({ kind: 'saved' });
    } catch (e) {
      setProfileStatus({ kind: 'failed', message: errorText(e) });
    }
  };

  const shownProfile = profileStatus.kind === 'saving' ? profileStatus.name : settings.profile;
  const profiles = props.state.profiles.some((p) => p.name === shownProfile)
    ? props.state.profiles
    : [...props.state.profiles, { name: shownProfile, label: shownProfile }];
  const profileError =
    profileStatus.kind === 'failed'
      ? { kind: 'host' as const, message: t('settings.profileFailed', { message: profileStatus.message }) }
      : errors.profile;
  const savedCameraMissing = values.cameraDeviceId !== '' && !cameras.some((c) => c.deviceId === values.cameraDeviceId);
  const languageNames = { en: t('lang.en'), es: t('lang.es'), fr: t('lang.fr') };
  const roleNames: Record<BleRoles, string> = {
    both: t('settings.bleRole.both'),
    central: t('settings.bleRole.central'),
    peripheral: t('settings.bleRole.peripheral'),
    none: t('settings.bleRole.none'),
  };
  const timeoutLabels: Record<TimeoutKey, string> = {
    resultDisplayMs: t('settings.resultDisplay'),
    errorDisplayMs: t('settings.errorDisplay'),
    removePhoneMs: t('settings.removePhone'),
  };

  return (
    <div className="staff-columns">
      <form className="settings-form" onSubmit={onSubmit} noValidate>
        <Field
          name="backendUrl"
          label={t('settings.backendUrl')}
          help={t('settings.backendUrlHelp')}
          locked={locked('backendUrl')}
          error={errors.backendUrl}
        >
          {(c) => (
            <input
              {...c}
              type="url"
              inputMode="url"
              autoComplete="off"
              spellCheck={false}
              value={values.backendUrl}
              onChange={(e) => set('backendUrl', e.target.value)}
            />
          )}
        </Field>
        <Field
          name="apiKey"
          label={t('settings.apiKey')}
          note={t('settings.apiKeyStatus', { status: settings.apiKeySet ? t('settings.apiKeySet') : t('settings.apiKeyNotSet') })}
          help={t('settings.apiKeyHelp')}
          locked={locked('apiKey')}
          error={errors.apiKey}
        >
          {(c) => (
            <input
              {...c}
              type="password"
              autoComplete="new-password"
              spellCheck={false}
              value={values.apiKey}
              onChange={(e) => set('apiKey', e.target.value)}
            />
          )}
        </Field>
        {settings.apiKeySet && !locked('apiKey') ? (
          <label className="checkbox">
            <input
              type="checkbox"
              checked={values.clearApiKey}
              disabled={values.apiKey !== ''}
              onChange={(e) => set('clearApiKey', e.target.checked)}
            />
            {t('settings.apiKeyClear')}
          </label>
        ) : null}
        <Field
          name="profile"
          label={t('settings.profile')}
          note={profileStatus.kind === 'saved' ? t('settings.profileChanged') : undefined}
          help={locked('profile') ? undefined : t('settings.profileHelp')}
          locked={locked('profile')}
          error={profileError}
        >
          {(c) => (
            <select {...c} value={shownProfile} onChange={(e) => void chooseProfile(e.target.value)}>
              {profiles.map((p) => (
                <option key={p.name} value={p.name}>
                  {p.label}
                </option>
              ))}
            </select>
          )}
        </Field>
        <Field
          name="pcscReader"
          label={t('settings.pcscReader')}
          help={t('settings.pcscReaderHelp')}
          locked={locked('pcscReader')}
          error={errors.pcscReader}
        >
          {(c) => (
            <input
              {...c}
              type="text"
              autoComplete="off"
              spellCheck={false}
              value={values.pcscReader}
              onChange={(e) => set('pcscReader', e.target.value)}
            />
          )}
        </Field>
        <Field name="bleRoles" label={t('settings.bleRoles')} locked={locked('bleRoles')} error={errors.bleRoles}>
          {(c) => (
            <select {...c} value={values.bleRoles} onChange={(e) => set('bleRoles', BleRoles.parse(e.target.value))}>
              {BleRoles.options.map((r) => (
                <option key={r} value={r}>
                  {roleNames[r]}
                </option>
              ))}
            </select>
          )}
        </Field>
        <Field name="cameraDeviceId" label={t('settings.camera')} locked={locked('cameraDeviceId')} error={errors.cameraDeviceId}>
          {(c) => (
            <select {...c} value={values.cameraDeviceId} onChange={(e) => set('cameraDeviceId', e.target.value)}>
              <option value="">{t('settings.cameraDefault')}</option>
              {cameras.map((cam) => (
                <option key={cam.deviceId} value={cam.deviceId}>
                  {cam.label}
                </option>
              ))}
              {savedCameraMissing ? <option value={values.cameraDeviceId}>{t('settings.cameraSaved')}</option> : null}
            </select>
          )}
        </Field>
        <Field
          name="defaultLanguage"
          label={t('settings.defaultLanguage')}
          locked={locked('defaultLanguage')}
          error={errors.defaultLanguage}
        >
          {(c) => (
            <select
              {...c}
              value={values.defaultLanguage}
              onChange={(e) => set('defaultLanguage', LANGUAGES.find((l) => l === e.target.value) ?? values.defaultLanguage)}
            >
              {LANGUAGES.map((l) => (
                <option key={l} value={l} lang={l}>
                  {languageNames[l]}
                </option>
              ))}
            </select>
          )}
        </Field>
        <fieldset className="timeouts">
          <legend>{t('settings.timeouts')}</legend>
          {(['resultDisplayMs', 'errorDisplayMs', 'removePhoneMs'] as const).map((key) => (
            <Field
              key={key}
              name={`timeouts.${key}`}
              label={timeoutLabels[key]}
              locked={locked(`timeouts.${key}`)}
              error={errors[`timeouts.${key}`]}
            >
              {(c) => (
                <input
                  {...c}
                  type="text"
                  inputMode="numeric"
                  autoComplete="off"
                  className="input--short"
                  value={values.timeouts[key]}
                  onChange={(e) => setTimeoutValue(key, e.target.value)}
                />
              )}
            </Field>
          ))}
        </fieldset>
        <SpeechSettingsSection values={values.speech} onChange={(speech) => set('speech', speech)} locked={locked} errors={errors} />
        <div className="form-actions">
          <button type="submit" className="button button--primary" disabled={status.kind === 'saving'} data-testid="settings-save">
            {status.kind === 'saving' ? t('settings.saving') : t('settings.save')}
          </button>
          <p className="form-message" role="status" data-testid="settings-status">
            {status.kind === 'saved' ? t('settings.saved') : null}
            {status.kind === 'unchanged' ? t('settings.nothingChanged') : null}
            {status.kind === 'invalid' ? [t('settings.fixErrors'), ...status.other].join(' ') : null}
            {status.kind === 'failed' ? t('settings.saveFailed', { message: status.message }) : null}
          </p>
        </div>
      </form>
      <div className="staff-side">
        <PinChange api={api} />
        <section className="staff-card" aria-labelledby="paste-title">
          <h2 id="paste-title">{t('settings.pasteTitle')}</h2>
          <PasteScan
            onScan={(text) => {
              setPasteResult(null);
              void props.onScan(text).then(setPasteResult);
            }}
          />
          <p className="form-message" role="status">
            {pasteResult}
          </p>
        </section>
      </div>
    </div>
  );
}
