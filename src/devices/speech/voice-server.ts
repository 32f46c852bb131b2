/**
 * The voice process's side of the channel: loads the engine once, says `ready` (or `failed`, then ends),
 * and answers each request in the order it came. Every incoming message is validated; one that does not
 * parse is dropped, or answered with an error when its id can be read. Nothing here logs or prints a text:
 * an error names the request, never what it was asked to say.
 */
import { errorMessage } from '../shared/abort.js';
import type { ChildChannel } from '../shared/child-channel.js';
import { VoiceName, VoiceParentMessage, describeVoiceIssue, type VoiceChildMessage } from './voice-protocol.js';

/**
 * What the server needs of an engine (voice-engine.ts loads eSpeak NG; tests give a double). Kept here, not
 * beside the loader, so code that only serves or supervises never reaches the engine's package.
 */
export interface VoiceEngine {
  /** For diagnostics: `eSpeak NG (WebAssembly, @echogarden/espeak-ng-emscripten 0.3.5)`. */
  readonly name: string;
  readonly sampleRate: number;
  /** 16-bit mono samples of `text`, little-endian bytes. */
  speak(text: string, voice: VoiceName, wpm: number): Uint8Array;
  /** The IPA phonemes of `text` in `voice`. */
  phonemes(text: string, voice: VoiceName): string;
}

export interface ServeVoiceOptions {
  /** Ends the process (after `shutdown`, or when the engine cannot load); default process.exit. */
  readonly exit?: (code: number) => void;
  readonly now?: () => number;
}

export function serveVoice(
  channel: ChildChannel<VoiceChildMessage>,
  load: () => Promise<VoiceEngine>,
  options: ServeVoiceOptions = {},
): void {
  const exit = options.exit ?? ((code: number) => process.exit(code));
  const now = options.now ?? (() => performance.now());
  let engine: VoiceEngine | undefined;
  // Requests that came while the engine loads wait for it (the parent holds its own deadline on each).
  const early: unknown[] = [];

  const handle = (raw: unknown): void => {
    const parsed = VoiceParentMessage.safeParse(raw);
    if (!parsed.success) {
      const id = (raw as { id?: unknown } | null)?.id;
      if (typeof id === 'number' && Number.isSafeInteger(id) && id >= 0)
        channel.send({ t: 'error', id, detail: `refused: ${describeVoiceIssue(parsed.error)}` });
      return;
    }
    const message = parsed.data;
    if (message.t === 'shutdown') {
      exit(0);
      return;
    }
    if (engine === undefined) {
      early.push(raw);
      return;
    }
    try {
      if (message.t === 'speak') {
        const started = now();
        const pcm = engine.speak(message.text, message.voice, message.wpm);
        channel.send({ t: 'audio', id: message.id, pcm, ms: Math.max(0, now() - started) });
      } else {
        channel.send({ t: 'phonemes', id: message.id, ipa: engine.phonemes(message.text, message.voice) });
      }
    } catch (e) {
      // The engine's message names its failure; eSpeak NG's errors never carry the input text.
      channel.send({ t: 'error', id: message.id, detail: errorMessage(e).slice(0, 300) });
    }
  };

  channel.onMessage(handle);
  const started = now();
  load().then(
    (loaded) => {
      // One short utterance per voice before `ready`: WebAssembly compiles lazily and each voice loads its
      // dictionary on first use, so without this the first prompts after loading were several times slower
      // (measured here: 0.5 s and 0.2 s for the first English ones, under 0.1 s once warm).
      for (const voice of VoiceName.options) loaded.speak('OK.', voice, 175);
      engine = loaded;
      channel.send({ t: 'ready', engine: loaded.name.slice(0, 100), sampleRate: loaded.sampleRate, initMs: Math.max(0, now() - started) });
      for (const raw of early.splice(0)) handle(raw);
    },
    (e: unknown) => {
      channel.send({ t: 'failed', detail: `the built-in voice could not load eSpeak NG: ${errorMessage(e)}`.slice(0, 300) });
      exit(1);
    },
  );
}
