/**
 * What the screen says: every customer screen in every language has a prompt, the outcome answer follows
 * the outcome screen's decision (fail closed), Ready says the keys only while speech is on, and the keys,
 * sentences and outputs helpers behave.
 */
import { describe, expect, it } from 'vitest';
import { LANGUAGES, type Language } from '../../../src/common/kiosk-api.js';
import { DEFAULT_SPEECH_KEYS } from '../../../src/common/speech.js';
import type { KioskView } from '../../../src/common/kiosk-view.js';
import { CUSTOMER_SCREENS } from '../../../src/renderer/screens/screen-name.js';
import { findHeadset, isHeadset } from '../../../src/renderer/speech/audio-outputs.js';
import { pcmToFloat } from '../../../src/renderer/speech/built-in-voice.js';
import { MAX_PIECE, splitSentences } from '../../../src/renderer/speech/sentences.js';
import { SpeechKeyFilter, actionFor, nextLanguage, type SpeechKeyPress } from '../../../src/renderer/speech/speech-keys.js';
import { localVoicesFor } from '../../../src/renderer/speech/system-voice.js';
import {
  allPromptUtterances,
  fixedView,
  fixedPromptInputs,
  speechBadgeText,
  utteranceFor,
  type UtteranceInput,
} from '../../../src/renderer/speech/utterances.js';
import { chooseVoice } from '../../../src/renderer/speech/voice-choice.js';
import { ageAnswer, elementsAnswer, NS, outcome } from './outcome-fixtures.js';

const view = fixedView;

const input = (
  screen: UtteranceInput['screen'],
  v: KioskView | null,
  language: Language = 'en',
  more: Partial<UtteranceInput> = {},
): UtteranceInput => ({
  screen,
  view: v,
  language,
  sayKeys: false,
  private: false,
  privateElements: [],
  ...more,
});

const said = (i: UtteranceInput): string => utteranceFor(i)?.text ?? '';

describe('utterances', () => {
  it('every customer screen has a prompt in every language, and the languages differ', () => {
    for (const screen of [...CUSTOMER_SCREENS, 'cannot_verify' as const]) {
      const texts = LANGUAGES.map((language) => {
        const phase = screen === 'disconnected' || screen === 'waiting' ? 'ready' : screen;
        const v = view(phase, phase === 'result' ? { outcome: outcome({ answer: ageAnswer('met') }) } : {});
        const utterance = utteranceFor(input(screen, v, language));
        expect(utterance, `${screen} ${language}`).not.toBeNull();
        expect(utterance?.text.length, `${screen} ${language}`).toBeGreaterThan(5);
        expect(utterance?.language).toBe(language);
        return utterance?.text;
      });
      expect(new Set(texts).size, screen).toBe(3);
    }
  });

  it('allPromptUtterances covers every fixed prompt in every language, none private, none over the built-in voice limit', () => {
    const all = allPromptUtterances();
    for (const language of LANGUAGES) {
      const mine = all.filter((u) => u.language === language);
      expect(mine.length).toBeGreaterThanOrEqual(30);
      expect(new Set(mine.map((u) => u.key))).toEqual(new Set(all.filter((u) => u.language === 'en').map((u) => u.key)));
    }
    expect(all.every((u) => !u.private && u.text.length <= 600 && !u.text.includes('{{'))).toBe(true);
    expect(fixedPromptInputs('en').length).toBeGreaterThan(40);
  });

  it('Ready says where the reader is, the QR alternative, and the keys only while speech is on', () => {
    const ready = input('ready', view('ready'), 'en', { readerPosition: 'below' });
    expect(said(ready)).toBe(
      'Open your ID wallet, then hold your phone on the reader. The reader is below the screen. Or show its QR code to the camera.',
    );
    expect(said({ ...ready, sayKeys: true })).toContain('Press 5 to repeat');
    const noReader = input('ready', view('ready', { devices: { ...view('ready').devices, nfc: { usable: false } } }));
    expect(said(noReader)).toBe('Open your ID wallet, then show its QR code to the camera.');
    expect(said({ ...noReader, camera: 'denied' })).toContain('scanner');
  });

  it('says each moment of a verification', () => {
    expect(said(input('engaging', view('engaging', { transport: 'nfc' })))).toBe('Hold your phone still on the reader.');
    expect(said(input('transferring', view('transferring', { prompt: 'approve_on_phone' }), 'fr'))).toContain(
      'Acceptez sur votre téléphone',
    );
    expect(said(input('awaiting_card', view('awaiting_card'), 'es'))).toBe('Acerque otra vez el teléfono al lector.');
    expect(said(input('remove_phone', view('remove_phone', { prompt: 'remove_to_retry' })))).toContain('tap it again');
    expect(said(input('offline', view('offline', { error: { code: 'backend_not_answering', detail: '', retryable: true } })))).toContain(
      'not answering',
    );
  });

  it('each error code is said with the screen’s own line for it', () => {
    const error = (code: string, retryable = true): string =>
      said(input('error', view('error', { error: { code, detail: 'staff detail x1', retryable } })));
    expect(error('timeout')).toBe(
      'That did not work. That took too long. Please try again. Press 5 to hear this again. If it happens again, ask staff.',
    );
    expect(error('ble_link_lost')).toContain('The connection to your phone was lost');
    expect(error('no_input', false)).toMatch(/Please ask staff for help\.$/);
    expect(error('something_new')).toContain('Something went wrong');
    // The staff detail is never said.
    expect(error('timeout')).not.toContain('x1');
    expect(said(input('error', view('error', { error: { code: 'timeout', detail: '', retryable: true } }), 'es'))).toContain(
      'Ha tardado demasiado',
    );
  });

  it('the outcome is an answer, accepted only when the screen is green', () => {
    const result = (o: ReturnType<typeof outcome>, language: Language = 'en'): string =>
      said(input('result', view('result', { outcome: o }), language));
    expect(result(outcome({ answer: ageAnswer('met') }))).toBe('Age check: 21 or older — accepted.');
    expect(result(outcome({ answer: ageAnswer('not_met') }))).toBe('Age check: not 21 or older — not accepted.');
    expect(result(outcome({ answer: ageAnswer('met', 18) }), 'es')).toBe('Control de edad: 18 años o más — aceptado.');
    expect(result(outcome({ answer: ageAnswer('undetermined') }))).toContain('could not be verified');
    expect(result(outcome({ answer: elementsAnswer('met') }))).toBe('ID check: accepted.');
    expect(result(outcome({ answer: elementsAnswer('not_met', [{ identifier: 'portrait' }]) }))).toContain('not accepted');
    // A "verified" verdict the outcome contradicts (an authentication not Valid) is never accepted.
    expect(result(outcome({ answer: ageAnswer('met'), issuerAuthentication: 'Invalid' }))).toContain('could not be verified');
    expect(result(outcome({ answer: ageAnswer('met'), verdict: 'rejected', reasons: ['errors_reported'] }))).toContain('not accepted');
    expect(result(outcome({ answer: ageAnswer('met'), verdict: 'undetermined' }))).toContain('could not be verified');
    const declined = outcome({
      verdict: 'rejected',
      reasons: ['nothing_shared'],
      response: {},
      issuerAuthentication: 'Unchecked',
      deviceAuthentication: 'Unchecked',
    });
    expect(result(declined, 'fr')).toContain('Vous avez refusé de partager');
    for (const o of [outcome({ answer: ageAnswer('not_met') }), outcome({ verdict: 'rejected', reasons: ['x'] }), declined])
      for (const language of LANGUAGES)
        expect(result(o, language)).not.toMatch(/(— accepted|— aceptado|— accepté|: accepted|: aceptado|: accepté)\.$/);
  });

  it('a headset answer adds only the allowed elements of a verified document, marked private', () => {
    const o = outcome({
      answer: ageAnswer('met'),
      response: { [NS]: { given_name: 'Jane', family_name: 'Doe', birth_date: '1990-04-12', age_over_21: true } },
    });
    const headset = input('result', view('result', { outcome: o }), 'en', {
      private: true,
      privateElements: ['given_name', 'portrait', 'age_over_21'],
    });
    const utterance = utteranceFor(headset);
    expect(utterance?.private).toBe(true);
    expect(utterance?.text).toBe('Age check: 21 or older — accepted. For your ears only: Given names: Jane.');
    expect(utteranceFor({ ...headset, private: false })).toMatchObject({ private: false, text: 'Age check: 21 or older — accepted.' });
    const rejected = {
      ...headset,
      view: view('result', { outcome: { ...o, verdict: 'rejected', reasons: ['errors_reported'] } }),
    } as const;
    expect(utteranceFor(rejected)?.private).toBe(false);
  });

  it('the badge says speech is on and the volume, in the language', () => {
    expect(speechBadgeText('en', 0.8, false)).toBe('Speech on · volume 80 %');
    expect(speechBadgeText('fr', 0.3, true)).toBe('Voix activée, casque · volume 30 %');
  });
});

describe('speech helpers', () => {
  it('splits long texts into sentences and bounds each piece', () => {
    expect(splitSentences('One. Two? Three')).toEqual(['One.', 'Two?', 'Three']);
    const long = `${'word, '.repeat(80)}end.`;
    const pieces = splitSentences(long);
    expect(pieces.every((p) => p.length <= MAX_PIECE)).toBe(true);
    expect(pieces.join(' ').replace(/\s+/g, ' ')).toBe(long.trim().replace(/\s+/g, ' '));
  });

  it('maps keys to actions; ignores scanner bursts, modifiers, text fields and Enter on a control', () => {
    expect(actionFor('Numpad5', DEFAULT_SPEECH_KEYS)).toBe('start');
    expect(actionFor('NumpadMultiply', DEFAULT_SPEECH_KEYS)).toBe('language');
    expect(actionFor('KeyQ', DEFAULT_SPEECH_KEYS)).toBeNull();
    const filter = new SpeechKeyFilter();
    const press = (code: string, timeStamp: number, more: Partial<SpeechKeyPress> = {}): string | null =>
      filter.decide(
        {
          code,
          timeStamp,
          ctrlKey: false,
          altKey: false,
          metaKey: false,
          repeat: false,
          isComposing: false,
          inEditable: false,
          onControl: false,
          ...more,
        },
        DEFAULT_SPEECH_KEYS,
      );
    expect(press('Digit5', 1_000)).toBe('start');
    // A scanner typing "…5…" 10 ms after the previous key.
    expect(press('Digit5', 1_010)).toBeNull();
    expect(press('Digit0', 2_000, { inEditable: true })).toBeNull();
    expect(press('Digit0', 3_000, { ctrlKey: true })).toBeNull();
    expect(press('NumpadEnter', 4_000, { onControl: true })).toBeNull();
    expect(press('NumpadAdd', 5_000, { onControl: true })).toBe('volumeUp');
    expect(nextLanguage('en')).toBe('es');
    expect(nextLanguage('fr')).toBe('en');
  });

  it('finds a headset by its name or the configured output, and knows when it is the default', () => {
    const outputs = [
      { deviceId: 'default', label: 'Default - Built-in Audio Analog Stereo' },
      { deviceId: 'a1', label: 'Built-in Audio Analog Stereo' },
      { deviceId: 'h1', label: 'USB Headset Analog Stereo' },
    ];
    expect(findHeadset(outputs, '')).toEqual({ headset: outputs[2], isDefault: false });
    expect(findHeadset(outputs, 'analog stereo')?.headset.deviceId).toBe('a1');
    expect(findHeadset(outputs.slice(0, 2), '')).toBeNull();
    expect(
      findHeadset(
        [
          { deviceId: 'default', label: 'Default - Headphones' },
          { deviceId: 'x', label: 'Headphones' },
        ],
        '',
      )?.isDefault,
    ).toBe(true);
    // Without media permission the labels are empty: nothing is a headset.
    expect(findHeadset([{ deviceId: 'x', label: '' }], '')).toBeNull();
    expect(isHeadset({ deviceId: 'e', label: 'Galaxy Earbuds' }, '')).toBe(true);
  });

  it('chooses the voice: a routed headset always gets the built-in voice', () => {
    expect(chooseVoice('auto', true, false)).toBe('system');
    expect(chooseVoice('auto', false, false)).toBe('built_in');
    expect(chooseVoice('system', true, true)).toBe('built_in');
    expect(chooseVoice('built_in', true, false)).toBe('built_in');
  });

  it('picks local voices only, the default first', () => {
    const voice = (name: string, lang: string, localService: boolean, isDefault = false): SpeechSynthesisVoice => ({
      name,
      lang,
      localService,
      default: isDefault,
      voiceURI: name,
    });
    const voices = [voice('Net', 'es-ES', false), voice('A', 'es-MX', true), voice('B', 'es_ES', true, true), voice('C', 'en-US', true)];
    expect(localVoicesFor(voices, 'es').map((v) => v.name)).toEqual(['B', 'A']);
    expect(localVoicesFor(voices, 'fr')).toEqual([]);
  });

  it('decodes 16-bit little-endian samples', () => {
    const bytes = Uint8Array.from([0x00, 0x00, 0xff, 0x7f, 0x00, 0x80, 0xff, 0xff]);
    const floats = pcmToFloat(btoa(String.fromCharCode(...bytes)));
    expect(Array.from(floats)).toEqual([0, 32767 / 32768, -1, -1 / 32768]);
  });
});
