/**
 * What the diagnostics screen's Speech card says (issue 32), as plain rows: from the screen's last speech
 * report (the voice in use, the output, whether playing works, the OS voices per language) and the built-in
 * voice's state and median synthesis time. No utterance text ever reaches diagnostics (the contract has none).
 */
import { LANGUAGES } from '../../common/kiosk-api.js';
import type { SpeechDiagnostics } from '../../common/speech.js';

type T = (key: string, options?: Record<string, unknown>) => string;

export interface SpeechRow {
  /** Stable name of the row (tests and `data-row`). */
  readonly name: string;
  readonly label: string;
  readonly value: string;
  /** The row says something is wrong (shown as a problem). */
  readonly problem?: boolean;
}

export interface SpeechCard {
  /** "The screen has not reported speech yet" when it has not. */
  readonly notice: string | null;
  readonly rows: readonly SpeechRow[];
}

export function speechCard(speech: SpeechDiagnostics | undefined, t: T): SpeechCard {
  const rows: SpeechRow[] = [];
  const screen = speech?.screen ?? null;
  if (screen !== null) {
    rows.push({
      name: 'active',
      label: t('diagnostics.speech.active'),
      value: screen.active ? t('diagnostics.speech.yes') : t('diagnostics.speech.no'),
    });
    const voiceName = screen.voiceName || (screen.engine === 'built_in' ? (speech?.builtIn.engine ?? '') : '');
    rows.push({
      name: 'voice',
      label: t('diagnostics.speech.voice'),
      value: t(`diagnostics.speech.voiceValue.${screen.engine}`, { name: voiceName }),
      ...(screen.engine === 'none' ? { problem: true } : {}),
    });
    const output = t(`diagnostics.speech.outputValue.${screen.output}`);
    rows.push({
      name: 'output',
      label: t('diagnostics.speech.output'),
      value: screen.outputName && screen.output !== 'none' ? `${output}: ${screen.outputName}` : output,
      ...(screen.output === 'none' ? { problem: true } : {}),
    });
    const works =
      screen.outputWorks === null
        ? t('diagnostics.speech.outputWorksValue.notYet')
        : screen.outputWorks
          ? t('diagnostics.speech.outputWorksValue.yes')
          : screen.problem
            ? t('diagnostics.speech.outputWorksValue.noBecause', { problem: screen.problem })
            : t('diagnostics.speech.outputWorksValue.no');
    rows.push({
      name: 'outputWorks',
      label: t('diagnostics.speech.outputWorks'),
      value: works,
      ...(screen.outputWorks === false ? { problem: true } : {}),
    });
    // One row per language: staff look for the language a customer used.
    for (const language of LANGUAGES) {
      const names = screen.systemVoices[language] ?? [];
      rows.push({
        name: `voices.${language}`,
        label: t(`diagnostics.speech.voices.${language}`),
        value: names.length > 0 ? names.slice(0, 5).join(', ') : t(`diagnostics.speech.noVoice.${language}`),
      });
    }
  }
  if (speech !== undefined) {
    const { builtIn } = speech;
    const state = t(`diagnostics.speech.builtInState.${builtIn.state}`);
    const detail = [builtIn.engine, builtIn.detail].filter((x) => x !== undefined && x !== '').join(' — ');
    rows.push({
      name: 'builtIn',
      label: t('diagnostics.speech.builtIn'),
      value: detail ? `${state} (${detail})` : state,
      ...(builtIn.state === 'failed' ? { problem: true } : {}),
    });
    rows.push({
      name: 'median',
      label: t('diagnostics.speech.median'),
      value:
        builtIn.medianMs === null
          ? t('diagnostics.speech.medianNone')
          : t('diagnostics.speech.medianValue', { ms: Math.round(builtIn.medianMs), count: builtIn.made }),
    });
  }
  return { notice: screen === null ? t('diagnostics.speech.notReported') : null, rows };
}
