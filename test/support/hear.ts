/**
 * Hears an utterance of the built-in voice (docs/speech-voice.md): the text is spoken by the real voice
 * process (eSpeak NG, WebAssembly, forked as the browser host forks it), written as a WAV file, and checked
 * with Debian's tools:
 *
 * - `sox <wav> -n stat`: not silent (RMS amplitude above a floor) and a length sane for the text;
 * - the phonemes: the engine's own IPA for the text (the voice process's `phonemes` request) against Debian's
 *   `espeak-ng -q -v <voice> --ipa` for the same text in the language's voice, after normalising what the two
 *   versions print differently (separators, stress, language-switch marks); their edit distance must stay
 *   within a bound measured on the prompts. So the wrong voice (Spanish text in the English voice) fails.
 *
 * Both Debian tools are needed: a missing one fails the test loudly (apt-get install espeak-ng sox); it is
 * never skipped (.ci/run installs them).
 *
 *   const report = await hearUtterance('Acerque su teléfono al lector.', 'es');
 *   expect(report.problems).toEqual([]);
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SPEECH_SAMPLE_RATE, type SpeechRequest } from '../../src/common/speech.js';
import { VoiceProcess } from '../../src/devices/speech/voice-process.js';
import { forkVoiceLauncher } from '../../src/devices/speech/voice-launcher.js';
import type { VoiceName } from '../../src/devices/speech/voice-protocol.js';
import { VOICE_OF_LANGUAGE, wordsPerMinute } from '../../src/devices/speech/voices.js';

type Language = SpeechRequest['language'];

/**
 * Below this RMS amplitude (sox, full scale 1) the audio counts as silent. eSpeak NG's speech measured
 * 0.073–0.089 on the sample prompts of the three languages; a digital silence is 0.
 */
export const RMS_FLOOR = 0.01;

/**
 * How far the engine's phonemes may be from Debian's, as edit operations per phoneme of Debian's string.
 * Measured on ten sample prompts in three languages (the ones in test/unit/devices/speech/hear.test.ts): the
 * WebAssembly build and Debian's 1.51 agreed exactly on nine and differed by 0.017 on the tenth (one sound
 * in the long Spanish prompt); the same texts in a wrong voice were 0.60–0.83 away. 0.15 leaves room for a
 * word or two a newer version says differently and still catches a wrong voice by four times over.
 */
export const PHONEME_DISTANCE_BOUND = 0.15;

/**
 * A sane length for a text: eSpeak NG at its normal rate said 10.7–20.6 characters a second on the sample
 * prompts (numbers and pauses are the slow ones). The band (6 to 32 a second, plus a second) is wide so only
 * a truncated or runaway utterance fails it.
 */
export function durationBand(text: string, rate = 1): { readonly min: number; readonly max: number } {
  const chars = Array.from(text).length;
  return { min: chars / 32 / rate, max: chars / 6 / rate + 1 };
}

export interface HeardReport {
  readonly text: string;
  readonly language: Language;
  /** The voice that spoke (the language's, unless a test forced another). */
  readonly voice: VoiceName;
  readonly seconds: number;
  readonly rms: number;
  readonly engineIpa: string;
  readonly debianIpa: string;
  /** Edit distance of the normalised phonemes, per phoneme of Debian's. */
  readonly phonemeDistance: number;
  /** What is wrong; empty when the utterance was heard as it should be. */
  readonly problems: readonly string[];
}

/** A tool of Debian that must be here: fails loudly (never skips) when it is not. */
function run(tool: 'sox' | 'espeak-ng', args: readonly string[]): string {
  const result = spawnSync(tool, args, { encoding: 'utf8', timeout: 30_000 });
  if (result.error && (result.error as NodeJS.ErrnoException).code === 'ENOENT')
    throw new Error(
      `${tool} is missing: install Debian's ${tool} package (apt-get install -y --no-install-recommends espeak-ng sox). The tests that hear the built-in voice fail without it; they are never skipped.`,
    );
  if (result.status !== 0) throw new Error(`${tool} ${args.join(' ')} failed (${String(result.status)}): ${result.stderr}`);
  // sox stat prints on stderr.
  return `${result.stdout}${result.stderr}`;
}

/** A 16-bit mono WAV file of little-endian samples. */
export function wavFile(pcm: Uint8Array, sampleRate = SPEECH_SAMPLE_RATE): Buffer {
  const header = Buffer.alloc(44);
  header.write('RIFF', 0, 'ascii');
  header.writeUInt32LE(36 + pcm.byteLength, 4);
  header.write('WAVEfmt ', 8, 'ascii');
  header.writeUInt32LE(16, 16); // fmt chunk size
  header.writeUInt16LE(1, 20); // PCM
  header.writeUInt16LE(1, 22); // mono
  header.writeUInt32LE(sampleRate, 24);
  header.writeUInt32LE(sampleRate * 2, 28); // byte rate
  header.writeUInt16LE(2, 32); // block align
  header.writeUInt16LE(16, 34); // bits per sample
  header.write('data', 36, 'ascii');
  header.writeUInt32LE(pcm.byteLength, 40);
  return Buffer.concat([header, pcm]);
}

/** sox's `stat` of the samples: RMS amplitude and length in seconds. */
export function soxStat(pcm: Uint8Array, sampleRate = SPEECH_SAMPLE_RATE): { readonly rms: number; readonly seconds: number } {
  const dir = mkdtempSync(join(tmpdir(), 'mdl-kiosk-hear-'));
  try {
    const wav = join(dir, 'utterance.wav');
    writeFileSync(wav, wavFile(pcm, sampleRate));
    const out = run('sox', [wav, '-n', 'stat']);
    const field = (name: string): number => {
      const m = new RegExp(`^${name}:\\s+(-?[0-9.]+)`, 'm').exec(out);
      if (m?.[1] === undefined) throw new Error(`sox stat printed no "${name}":\n${out}`);
      return Number(m[1]);
    };
    return { rms: field('RMS\\s+amplitude'), seconds: field('Length \\(seconds\\)') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** What is wrong with these samples for this text: silent, too short or too long. */
export function audioProblems(pcm: Uint8Array, text: string, rate = 1): { problems: string[]; rms: number; seconds: number } {
  const { rms, seconds } = soxStat(pcm);
  const band = durationBand(text, rate);
  const problems: string[] = [];
  if (rms < RMS_FLOOR) problems.push(`silent: RMS amplitude ${rms} under ${RMS_FLOOR}`);
  if (seconds < band.min || seconds > band.max)
    problems.push(
      `length ${seconds.toFixed(2)} s outside ${band.min.toFixed(2)}–${band.max.toFixed(2)} s for ${Array.from(text).length} characters`,
    );
  return { problems, rms, seconds };
}

/**
 * The phonemes as both versions agree to print them: no word or phoneme separators, no stress or
 * syllable marks, no language-switch marks (`(en)`), no tie bars; what is left is the sounds in order.
 */
export function normalisePhonemes(ipa: string): string[] {
  // Tie bars (U+0361, U+035C) are combining marks: removed on their own, not in a character class.
  return Array.from(
    ipa
      .normalize('NFC')
      .replace(/\([a-z-]+\)/g, '')
      .replace(/\u0361|\u035c/g, '')
      .replace(/[_\sˈˌ.‿]/g, ''),
  );
}

/** Levenshtein distance of two sequences (small: a prompt's phonemes). */
export function editDistance(a: readonly string[], b: readonly string[]): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      row.push(Math.min((previous[j] ?? 0) + 1, (row[j - 1] ?? 0) + 1, (previous[j - 1] ?? 0) + cost));
    }
    previous = row;
  }
  return previous[b.length] ?? 0;
}

/** Debian's eSpeak NG's phonemes of `text` in `voice`. */
export function debianPhonemes(text: string, voice: VoiceName): string {
  return run('espeak-ng', ['-q', '-v', voice, '--ipa', '--', text]);
}

let shared: VoiceProcess | undefined;

/** The voice process the hearing tests share (one engine load for the file); `stopHearing` ends it. */
export function hearingVoice(): VoiceProcess {
  if (shared === undefined) {
    const quiet = { info: () => undefined, warn: () => undefined };
    // A generous deadline: the tests run beside others on two cores.
    shared = new VoiceProcess({ launcher: forkVoiceLauncher(), log: quiet, deadlineMs: 20_000, startMs: 60_000 });
    shared.start();
  }
  return shared;
}

export async function stopHearing(): Promise<void> {
  const voice = shared;
  shared = undefined;
  await voice?.close();
}

/**
 * Speaks `text` in `language` through the real voice process and checks it (see the top of this file).
 * `voice` forces another voice than the language's (a test of the wrong voice being caught): the phonemes
 * are still compared with Debian's in the language's own voice.
 */
export async function hearUtterance(
  text: string,
  language: Language,
  options: { voice?: VoiceName; rate?: number } = {},
): Promise<HeardReport> {
  const expected = VOICE_OF_LANGUAGE[language];
  const voice = options.voice ?? expected;
  const process = hearingVoice();
  const audio = await process.speak(text, voice, wordsPerMinute(options.rate));
  const heard = audioProblems(audio.pcm, text, options.rate);
  const engineIpa = await process.phonemes(text, voice);
  const debianIpa = debianPhonemes(text, expected);
  const mine = normalisePhonemes(engineIpa);
  const theirs = normalisePhonemes(debianIpa);
  const phonemeDistance = editDistance(mine, theirs) / Math.max(1, theirs.length);
  const problems = [...heard.problems];
  if (phonemeDistance > PHONEME_DISTANCE_BOUND)
    problems.push(
      `phonemes ${phonemeDistance.toFixed(3)} away from Debian's espeak-ng -v ${expected} (bound ${PHONEME_DISTANCE_BOUND}): ${mine.join('')} against ${theirs.join('')}`,
    );
  return { text, language, voice, seconds: heard.seconds, rms: heard.rms, engineIpa, debianIpa, phonemeDistance, problems };
}
