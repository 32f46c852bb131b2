/**
 * bench:ui's speech figure (issue 32): a screen change → the first audio sample of its prompt, as the screen
 * measures it (`speech:latency`, from the `speech:screen` mark when a new utterance is due to the
 * AudioBufferSourceNode's start). The whole kiosk with its real built-in voice (eSpeak NG in its own process)
 * and speech always on; Chromium here has no OS voice, so every utterance is the built-in voice's. Each run is
 * one NFC verification: Ready, the in-between screens, the answer, then Ready again.
 *
 * The first utterance of each text asks the voice process for its samples; later ones of a fixed prompt come
 * from the screen's cache: both are in the figure, and the cold ones (first time a text is said) apart.
 */
import { startBrowserStack, type BrowserStack } from '../support/e2e-browser.js';
import { delay } from './bench-tools.js';

export interface SpeechFigures {
  /** Every screen change that was spoken, ms. */
  readonly latencies: number[];
  /** The first one of the run (the voice process's first request and the AudioContext's start). */
  readonly first: number;
  readonly verifications: number;
}

/** No OS voice, so the built-in voice speaks even where Chromium has one (the path measured is the same on every OS). */
const BUILT_IN_ONLY = `(() => { if (globalThis.speechSynthesis) Object.defineProperty(globalThis.speechSynthesis, 'getVoices', { value: () => [] }); })();`;

export async function measureSpeech(runs: number, progress: (line: string) => void): Promise<SpeechFigures> {
  let stack: BrowserStack | undefined;
  try {
    progress(`speech: a kiosk with its built-in voice and speech always on, ${runs} NFC verifications`);
    stack = await startBrowserStack({ voice: true, config: { speech: { mode: 'always' }, timeouts: { resultDisplayMs: 10_000 } } });
    await stack.page.addInitScript({ content: BUILT_IN_ONLY });
    await stack.page.reload();
    await stack.waitForScreen('ready', 30_000);
    let verifications = 0;
    for (let i = 0; i < runs; i++) {
      // Ready's prompt is heard before the phone arrives, as a customer would.
      await delay(1_500);
      stack.counter.rig.tap();
      await stack.waitForScreen('result', 60_000);
      stack.counter.rig.lift();
      // The answer's first sentence starts before "Next customer".
      await delay(1_000);
      await stack.page.getByTestId('next-button').click({ timeout: 5_000 });
      await stack.waitForScreen('ready', 20_000);
      verifications++;
    }
    const latencies = await stack.page.evaluate(() => performance.getEntriesByName('speech:latency').map((e) => e.duration));
    return { latencies, first: latencies[0] ?? Number.NaN, verifications };
  } finally {
    await stack?.stop().catch(() => undefined);
  }
}
