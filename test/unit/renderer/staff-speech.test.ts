/**
 * The staff screens' speech parts (issue 32) as plain data and markup: the Speech section of the settings
 * form (only what changed is sent, volume in steps, the keys as one object with locked actions kept, a key
 * for two actions refused, a headset output name too long refused), the key names staff read, and the
 * diagnostics' Speech card in every language.
 */
import { createElement } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { I18nextProvider } from 'react-i18next';
import { describe, expect, it } from 'vitest';
import { LANGUAGES, type Language, type Settings } from '../../../src/common/kiosk-api.js';
import { DEFAULT_SPEECH_KEYS, DEFAULT_SPEECH_SETTINGS, type SpeechDiagnostics, type SpeechReport } from '../../../src/common/speech.js';
import { createI18n } from '../../../src/renderer/i18n/index.js';
import { speechCard } from '../../../src/renderer/staff/speech-card.js';
import { SpeechSettingsSection } from '../../../src/renderer/staff/SpeechSettingsSection.js';
import { buildUpdate, hostErrors, lockOf, valuesFrom } from '../../../src/renderer/staff/settings-form.js';
import { defaultKeys, keyLabel, nearestVolumeStep, withKey, withoutKey } from '../../../src/renderer/staff/speech-form.js';
import { fixtureSettings } from '../../support/screen-fixtures.js';

type T = (key: string, options?: Record<string, unknown>) => string;
const tFor = (language: Language): T => {
  const i18n = createI18n(language);
  return i18n.t.bind(i18n);
};

const settingsWith = (patch: Partial<Settings>): Settings => ({ ...fixtureSettings(), ...patch });

describe('the settings form: speech', () => {
  it('sends nothing for speech when nothing changed', () => {
    const settings = fixtureSettings();
    expect(buildUpdate(valuesFrom(settings), settings).update.speech).toBeUndefined();
  });

  it('sends only the changed speech keys; the volume in tenths', () => {
    const settings = fixtureSettings();
    const values = valuesFrom(settings);
    const built = buildUpdate(
      { ...values, speech: { ...values.speech, mode: 'always', volumePercent: 50, headsetOutput: '  USB Jack ' } },
      settings,
    );
    expect(built.errors).toEqual({});
    expect(built.update).toEqual({ speech: { mode: 'always', volume: 0.5, headsetOutput: 'USB Jack' } });
    expect(nearestVolumeStep(0.83)).toBe(80);
    expect(nearestVolumeStep(0.1)).toBe(10);
  });

  it('sends the private elements as a set in the screen’s order', () => {
    const settings = settingsWith({ speech: { ...DEFAULT_SPEECH_SETTINGS, privateElements: ['age_over_21', 'given_name'] } });
    const values = valuesFrom(settings);
    expect(
      buildUpdate({ ...values, speech: { ...values.speech, privateElements: ['given_name', 'age_over_21'] } }, settings).update,
    ).toEqual({});
    const built = buildUpdate(
      { ...values, speech: { ...values.speech, privateElements: ['age_over_21', 'family_name', 'given_name'] } },
      settings,
    );
    expect(built.update.speech?.privateElements).toEqual(['given_name', 'family_name', 'age_over_21']);
  });

  it('sends every action’s keys when one changed, a locked action with the value in effect', () => {
    const settings = settingsWith({ locked: ['speech.keys.start'], lockedBy: { 'speech.keys.start': 'managed' } });
    const values = valuesFrom(settings);
    const keys = withKey(withKey(values.speech.keys, 'stop', 'KeyS'), 'start', 'KeyQ');
    const built = buildUpdate({ ...values, speech: { ...values.speech, keys } }, settings);
    expect(built.update.speech?.keys).toEqual({ ...DEFAULT_SPEECH_KEYS, stop: [...DEFAULT_SPEECH_KEYS.stop, 'KeyS'] });
    expect(lockOf('speech.keys.start', settings)).toBe('managed');
    expect(lockOf('speech.keys.stop', settings)).toBe(false);
  });

  it('refuses a key given to two actions, and a headset output name over 200 characters', () => {
    const settings = fixtureSettings();
    const values = valuesFrom(settings);
    const keys = withKey(values.speech.keys, 'stop', 'Numpad5');
    const built = buildUpdate({ ...values, speech: { ...values.speech, keys, headsetOutput: 'x'.repeat(201) } }, settings);
    expect(built.errors['speech.keys.stop']).toEqual({ kind: 'keyTwice', code: 'Numpad5', action: 'start' });
    expect(built.errors['speech.headsetOutput']).toEqual({ kind: 'tooLong', max: 200 });
  });

  it('adds a key once, only a valid code, at most 8; removes and resets to the defaults', () => {
    let keys = withKey(DEFAULT_SPEECH_KEYS, 'pause', 'Numpad0');
    expect(keys).toBe(DEFAULT_SPEECH_KEYS);
    expect(withKey(DEFAULT_SPEECH_KEYS, 'pause', 'Num pad')).toBe(DEFAULT_SPEECH_KEYS);
    for (const code of ['KeyA', 'KeyB', 'KeyC', 'KeyD', 'KeyE', 'KeyF', 'KeyG', 'KeyH']) keys = withKey(keys, 'stop', code);
    expect(keys.stop).toHaveLength(8);
    keys = withoutKey(keys, 'start', 'Numpad5');
    expect(keys.start).toEqual(['Digit5', 'NumpadEnter']);
    const reset = defaultKeys(keys, (a) => a !== 'stop');
    expect(reset.start).toEqual(DEFAULT_SPEECH_KEYS.start);
    expect(reset.stop).toHaveLength(8);
  });

  it('places the host’s speech field errors by their key', () => {
    const mapped = hostErrors([
      { key: 'speech.volume', message: 'too loud' },
      { key: 'speech.keys.start', message: 'set by the managed file' },
    ]);
    expect(Object.keys(mapped.byField)).toEqual(['speech.volume', 'speech.keys.start']);
    expect(mapped.other).toEqual([]);
  });

  it('names keys as staff see them on the keypad', () => {
    expect(
      ['Numpad5', 'NumpadEnter', 'NumpadAdd', 'NumpadSubtract', 'NumpadMultiply', 'NumpadDivide', 'Digit5', 'KeyL', 'ArrowUp', 'Enter'].map(
        (c) => keyLabel(c, 'Keypad'),
      ),
    ).toEqual(['Keypad 5', 'Keypad Enter', 'Keypad +', 'Keypad −', 'Keypad *', 'Keypad /', '5', 'L', '↑', 'Enter']);
  });

  it.each(LANGUAGES)('renders the Speech section in %s: every label translated, locked actions named, elements labelled', (language) => {
    const i18n = createI18n(language);
    const settings = settingsWith({
      locked: ['speech.keys.start', 'speech.mode'],
      lockedBy: { 'speech.keys.start': 'managed', 'speech.mode': 'managed' },
    });
    const values = valuesFrom(settings);
    const html = renderToStaticMarkup(
      createElement(
        I18nextProvider,
        { i18n },
        createElement(SpeechSettingsSection, {
          values: values.speech,
          onChange: () => undefined,
          locked: (key) => lockOf(key, settings),
          errors: {},
        }),
      ),
    );
    const t = i18n.t.bind(i18n);
    expect(html).toContain(t('settings.speech.title'));
    expect(html).toContain(t('settings.speech.headsetOutputHelp'));
    expect(html).toContain(t('label.mdl.given_name', { ns: 'outcome' }));
    expect(html).toContain(t('label.mdl.age_over_nn', { ns: 'outcome', age: 21 }));
    expect(html).toContain(t('settings.speech.volumeValue', { percent: 80 }));
    // The start action is locked: no add button, its source named; the others can be added to.
    expect(html).not.toContain('data-testid="speech-key-add-start"');
    expect(html).toContain('data-testid="speech-key-add-stop"');
    expect(html.match(/data-locked-by="managed"/g)).toHaveLength(2);
    expect(html).not.toMatch(/settings\.speech\./);
  });
});

const SCREEN: SpeechReport = {
  active: true,
  engine: 'system',
  voiceName: 'Microsoft Zira',
  output: 'headset',
  outputName: 'USB Headset',
  outputWorks: false,
  problem: 'NotAllowedError: play() failed',
  systemVoices: { en: ['Microsoft Zira', 'Microsoft David'], fr: ['Microsoft Hortense'] },
};
const REPORT: SpeechDiagnostics = {
  screen: SCREEN,
  builtIn: { state: 'ready', engine: 'espeak-ng 1.51 (wasm)', made: 12, medianMs: 41.6 },
};

describe('the diagnostics Speech card', () => {
  it('says the voice, the output, why it does not work, the OS voices per language and the built-in voice', () => {
    const card = speechCard(REPORT, tFor('en'));
    expect(card.notice).toBeNull();
    const rows = Object.fromEntries(card.rows.map((r) => [r.name, r]));
    expect(rows.voice?.value).toBe('the computer’s voice: Microsoft Zira');
    expect(rows.output?.value).toBe('headset (private): USB Headset');
    expect(rows.outputWorks).toMatchObject({ value: 'no: NotAllowedError: play() failed', problem: true });
    expect(rows['voices.en']).toMatchObject({ label: 'The computer’s English voices', value: 'Microsoft Zira, Microsoft David' });
    expect(rows['voices.es']?.value).toBe('no Spanish voice: the built-in voice is used');
    expect(rows['voices.fr']?.value).toBe('Microsoft Hortense');
    expect(rows.builtIn?.value).toBe('ready (espeak-ng 1.51 (wasm))');
    expect(rows.median?.value).toBe('42 ms over 12');
  });

  it('says the built-in voice by its engine, and "not yet" before anything played', () => {
    const card = speechCard(
      { ...REPORT, screen: { ...SCREEN, engine: 'built_in', voiceName: '', output: 'speaker', outputName: '', outputWorks: null } },
      tFor('en'),
    );
    const rows = Object.fromEntries(card.rows.map((r) => [r.name, r.value]));
    expect(rows.voice).toBe('the built-in voice (espeak-ng 1.51 (wasm))');
    expect(rows.output).toBe('speaker');
    expect(rows.outputWorks).toBe('not yet: nothing has played');
  });

  it('says the screen has not reported speech yet, and still shows the built-in voice', () => {
    const card = speechCard(
      { screen: null, builtIn: { state: 'failed', engine: 'espeak-ng', detail: 'no data files', made: 0, medianMs: null } },
      tFor('en'),
    );
    expect(card.notice).toBe('The screen has not reported speech yet.');
    expect(card.rows.map((r) => [r.name, r.value, r.problem ?? false])).toEqual([
      ['builtIn', 'failed (espeak-ng — no data files)', true],
      ['median', 'none made yet', false],
    ]);
    expect(speechCard(undefined, tFor('en'))).toEqual({ notice: 'The screen has not reported speech yet.', rows: [] });
  });

  it.each(LANGUAGES)('has words for every value in %s', (language) => {
    const t = tFor(language);
    for (const engine of ['system', 'built_in', 'none'] as const) {
      for (const output of ['speaker', 'headset', 'none'] as const) {
        for (const outputWorks of [true, false, null]) {
          const card = speechCard({ ...REPORT, screen: { ...SCREEN, engine, output, outputWorks } }, t);
          for (const row of card.rows) expect(`${row.label} ${row.value}`).not.toMatch(/diagnostics\.speech|\{\{/);
        }
      }
    }
    for (const state of ['starting', 'ready', 'failed', 'stopped'] as const) {
      const card = speechCard({ screen: null, builtIn: { state, engine: 'e', made: 0, medianMs: null } }, t);
      expect(card.notice).not.toMatch(/diagnostics\./);
      for (const row of card.rows) expect(row.value).not.toMatch(/diagnostics\.speech/);
    }
  });
});
