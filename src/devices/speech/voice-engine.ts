/**
 * eSpeak NG compiled to WebAssembly (@echogarden/espeak-ng-emscripten), loaded once in the voice process.
 * The package stays a node_modules runtime dependency (never inlined into a bundle): its glue finds
 * `espeak-ng.data` (24 MB, the voices and dictionaries) beside its own module, and here it is told so
 * explicitly, so the data is read from the package's folder wherever the process's working directory is
 * (inside app.asar in the packaged app: a utility process reads the archive through Electron's fs).
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { ESpeakNGWorker } from '@echogarden/espeak-ng-emscripten';
import { MAX_VOICE_PCM_BYTES, type VoiceName } from './voice-protocol.js';
import type { VoiceEngine } from './voice-server.js';

const PACKAGE = '@echogarden/espeak-ng-emscripten';

/** The package's folder and version, from its package.json (the engine itself does not say its version). */
function packageFacts(): { readonly dir: string; readonly version: string } {
  const manifest = createRequire(import.meta.url).resolve(`${PACKAGE}/package.json`);
  const parsed = JSON.parse(readFileSync(manifest, 'utf8')) as { version?: unknown };
  return { dir: dirname(manifest), version: typeof parsed.version === 'string' ? parsed.version.slice(0, 20) : 'unknown' };
}

export async function loadVoiceEngine(): Promise<VoiceEngine> {
  const { dir, version } = packageFacts();
  const { default: factory } = await import('@echogarden/espeak-ng-emscripten');
  // The glue's own prints go nowhere: eSpeak NG may echo what it could not say, and that is a customer's text.
  const module = await factory({ locateFile: (path) => join(dir, path), print: () => undefined, printErr: () => undefined });
  const worker: ESpeakNGWorker = new module.eSpeakNGWorker();
  let current: VoiceName | undefined;
  const use = (voice: VoiceName): void => {
    if (current === voice) return;
    worker.set_voice(voice);
    current = voice;
  };
  return {
    name: `eSpeak NG (WebAssembly, ${PACKAGE} ${version})`,
    sampleRate: worker.get_samplerate(),
    speak(text, voice, wpm) {
      use(voice);
      worker.set_rate(wpm);
      const chunks: Int16Array[] = [];
      let samples = 0;
      const limit = MAX_VOICE_PCM_BYTES / 2;
      worker.synthesize(text, (chunk) => {
        if (chunk === null || chunk.length === 0) return 0;
        // Copied: the glue's buffer is its own. Past the bound (60 s) the rest is cut and eSpeak NG stopped
        // (a non-zero return), so no text makes more than one answer can carry.
        const take = Math.min(chunk.length, limit - samples);
        chunks.push(chunk.slice(0, take));
        samples += take;
        return samples >= limit ? 1 : 0;
      });
      const out = new Int16Array(samples);
      let at = 0;
      for (const chunk of chunks) {
        out.set(chunk, at);
        at += chunk.length;
      }
      // Int16Array is the platform's byte order; every platform the kiosk ships for is little-endian.
      return new Uint8Array(out.buffer);
    },
    phonemes(text, voice) {
      use(voice);
      const { code, ipa } = worker.synthesize_ipa(text);
      if (code !== 0) throw new Error(`eSpeak NG could not make phonemes (code ${code})`);
      return ipa;
    },
  };
}
