/**
 * A customer who cannot see the screen, end to end (issue 32's "done when"): the whole kiosk in this process
 * (embedded mock backend, virtual phone, KioskService, browser host) with its real built-in voice — eSpeak NG in
 * its own process — and the screen in Debian's Chromium. No OS voice exists here, so every utterance is the
 * built-in voice's samples played through the page's AudioContext.
 *
 * - by NFC through a headset: plugging it in turns speech on in private mode, the ready prompt plays on the
 *   headset's output, a tap runs the verification and the answer — with the holder's given name, which staff
 *   allowed for the headset — plays there too;
 * - by QR on the speaker, in Spanish: 5 turns speech on, * switches to Spanish, a scan runs the verification,
 *   and the answer plays in Spanish with none of the holder's data.
 *
 * The page is instrumented from the test (addInitScript): the audio outputs it lists (a fake headset), where
 * the AudioContext sends its sound (`setSinkId`), and every AudioBufferSourceNode started with its length. What
 * the screen asks the voice for is read from the host WebSocket's frames.
 */
import type { WebSocket as PageSocket } from 'playwright-core';
import { afterEach, describe, expect, it } from 'vitest';
import {
  HOLDER_NEEDLES,
  assertBrowserPrerequisites,
  scannerTypes,
  startBrowserStack,
  stopBrowserStack,
  type BrowserStack,
} from '../support/e2e-browser.js';
import { FAKE_AUDIO_OUTPUTS_SCRIPT } from '../support/speech-page.js';

const INSTRUMENT = `(() => {
  const probe = { played: [], sinks: [] };
  globalThis.__heard = probe;
  const start = AudioBufferSourceNode.prototype.start;
  AudioBufferSourceNode.prototype.start = function (...args) {
    probe.played.push({ seconds: this.buffer ? this.buffer.duration : 0, sink: this.context.sinkId === undefined ? '' : String(this.context.sinkId), state: this.context.state });
    return start.apply(this, args);
  };
  if (AudioContext.prototype.setSinkId) {
    const setSinkId = AudioContext.prototype.setSinkId;
    AudioContext.prototype.setSinkId = function (id) { probe.sinks.push(String(id)); return setSinkId.call(this, id).catch(() => undefined); };
  }
})();
${FAKE_AUDIO_OUTPUTS_SCRIPT}`;

const READY_EN = 'Open your ID wallet, then hold your phone on the reader.';
const SPEAKER = { deviceId: 'default', kind: 'audiooutput', label: 'Default - Built-in Speaker', groupId: 'g0' };
const HEADSET = { deviceId: 'headset-1', kind: 'audiooutput', label: 'USB Headset Analog Stereo', groupId: 'g1' };

interface Played {
  readonly seconds: number;
  readonly sink: string;
  readonly state: string;
}
interface Heard {
  readonly played: Played[];
  readonly sinks: string[];
}
interface Asked {
  readonly text: string;
  readonly language: string;
  readonly private: boolean;
}
type PageGlobals = { __heard: Heard; __setOutputs(outputs: unknown): void };

let stack: BrowserStack | undefined;
afterEach(async () => {
  await stopBrowserStack(stack);
  stack = undefined;
}, 30_000);

/** The stack with the page instrumented and the voice's requests collected from the WebSocket. */
async function speakingStack(
  speech: Record<string, unknown>,
  config: Record<string, unknown> = {},
): Promise<{ stack: BrowserStack; asked: Asked[] }> {
  assertBrowserPrerequisites();
  const started = await startBrowserStack({ config: { ...config, speech }, voice: true });
  stack = started;
  const asked: Asked[] = [];
  started.page.on('websocket', (socket: PageSocket) =>
    socket.on('framesent', (frame) => {
      const payload = typeof frame.payload === 'string' ? frame.payload : frame.payload.toString('utf8');
      try {
        const message = JSON.parse(payload) as { intent?: string; args?: Partial<Asked> };
        if (message.intent === 'synthesizeSpeech' && typeof message.args?.text === 'string')
          asked.push({ text: message.args.text, language: String(message.args.language), private: message.args.private === true });
      } catch {
        // Not a call.
      }
    }),
  );
  await started.page.addInitScript({ content: INSTRUMENT });
  await started.page.reload();
  await started.waitForScreen('ready', 30_000);
  return { stack: started, asked };
}

const heard = (s: BrowserStack): Promise<Heard> => s.page.evaluate(() => (globalThis as unknown as PageGlobals).__heard);

/** Waits until a clip longer than `minSeconds` has started after `after` clips. */
async function playsAfter(s: BrowserStack, after: number, minSeconds: number): Promise<Played> {
  await expect.poll(async () => (await heard(s)).played.slice(after).some((p) => p.seconds >= minSeconds), { timeout: 20_000 }).toBe(true);
  const played = (await heard(s)).played.slice(after).find((p) => p.seconds >= minSeconds);
  if (played === undefined) throw new Error('no clip played');
  return played;
}

async function press(s: BrowserStack, key: string): Promise<void> {
  // A person's pace: keys closer than 50 ms read as a scanner's burst.
  await s.page.waitForTimeout(150);
  await s.page.keyboard.press(key);
}

describe('a customer who cannot see the screen', () => {
  it('by NFC through a headset: the ready prompt and the private answer play on the headset, with the allowed name', async () => {
    const { stack: s, asked } = await speakingStack({ mode: 'on_request', privateElements: ['given_name'] }, { profile: 'identity' });
    await s.page.evaluate((outputs) => (globalThis as unknown as PageGlobals).__setOutputs(outputs), [SPEAKER, HEADSET]);
    // The headset turns speech on: the ready prompt, synthesised by the real voice, plays on the headset.
    await expect.poll(() => asked.length, { timeout: 15_000 }).toBeGreaterThan(0);
    const ready = await playsAfter(s, 0, 1);
    expect(ready.state).toBe('running');
    expect((await heard(s)).sinks).toContain(HEADSET.deviceId);
    await s.shot('speech-headset-ready');

    const before = (await heard(s)).played.length;
    const askedBefore = asked.length;
    s.counter.rig.tap();
    await s.waitForScreen('result', 60_000);
    // The answer is asked for sentence by sentence, every piece of it marked private.
    await expect.poll(() => asked.slice(askedBefore).some((a) => a.private && a.text.includes('Jane')), { timeout: 15_000 }).toBe(true);
    const answer = asked.slice(askedBefore).filter((a) => a.private);
    expect(answer[0]?.text).toMatch(/^ID check: accepted/);
    // Staff allowed the given name on a headset: it is said there, and nothing else of the holder's.
    for (const needle of HOLDER_NEEDLES.filter((n) => n !== 'Jane')) for (const a of answer) expect(a.text).not.toContain(needle);
    await playsAfter(s, before, 1);
    // What went to the voice without the private flag never holds the holder's data.
    for (const a of asked.filter((x) => !x.private)) for (const needle of HOLDER_NEEDLES) expect(a.text).not.toContain(needle);
    await s.shot('speech-headset-result');
    expect(s.consoleMessages.filter((m) => m.startsWith('pageerror'))).toEqual([]);
  }, 120_000);

  it('by QR on the speaker, in Spanish: 5 starts speech, * switches language, the answer plays in Spanish without personal data', async () => {
    const { stack: s, asked } = await speakingStack({ mode: 'on_request' });
    // Ready's first sentence is made ahead while nobody listens (so the first press starts at once); nothing plays.
    await expect.poll(() => asked.map((a) => a.text), { timeout: 10_000 }).toEqual([READY_EN]);
    expect((await heard(s)).played).toEqual([]);
    await press(s, 'Digit5');
    await playsAfter(s, 0, 1);
    const english = asked.length;
    expect(asked[0]?.language).toBe('en');
    await press(s, 'NumpadMultiply');
    await expect.poll(() => asked.slice(english).some((a) => a.language === 'es'), { timeout: 15_000 }).toBe(true);
    await s.page.locator('html[lang="es"]').waitFor({ timeout: 5_000 });
    const beforeScan = (await heard(s)).played.length;
    await playsAfter(s, beforeScan - 1, 1);
    await s.shot('speech-spanish-ready');

    const askedBefore = asked.length;
    await scannerTypes(s.page, s.counter.presentQr());
    await s.waitForScreen('result', 60_000);
    await expect
      .poll(() => asked.slice(askedBefore).some((a) => a.language === 'es' && /^Control de edad/.test(a.text)), { timeout: 15_000 })
      .toBe(true);
    const answer = asked.slice(askedBefore).find((a) => /^Control de edad/.test(a.text));
    expect(answer?.private).toBe(false);
    for (const a of asked) for (const needle of HOLDER_NEEDLES) expect(a.text).not.toContain(needle);
    await playsAfter(s, beforeScan, 1);
    // Screen change → first audio sample, as the page measured it (speech:latency), for the note.
    const latencies = await s.page.evaluate(() => performance.getEntriesByName('speech:latency').map((e) => e.duration));
    expect(latencies.length).toBeGreaterThan(0);
    process.stderr.write(`speech latency (screen change → audio start), ms: ${latencies.map((l) => l.toFixed(0)).join(' ')}\n`);
    expect(s.consoleMessages.filter((m) => m.startsWith('pageerror'))).toEqual([]);
  }, 120_000);
});
