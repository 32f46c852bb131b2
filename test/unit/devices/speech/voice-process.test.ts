/**
 * The built-in voice's supervisor (src/devices/speech/voice-process.ts) and its child's server
 * (voice-server.ts): requests answered, refused beyond the queue, bounded by a deadline (a stuck child is
 * killed and replaced), invalid messages refused both ways, restarts after a crash with a growing wait
 * (a child that dies at once forever: bounded starts per minute, never a tight loop), and nothing left
 * running after `close` — the last with the real voice process, checked by its pid.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { ChildLauncher } from '../../../../src/devices/shared/child-launcher.js';
import { forkVoiceLauncher } from '../../../../src/devices/speech/voice-launcher.js';
import { VoiceError, VoiceProcess } from '../../../../src/devices/speech/voice-process.js';
import type { VoiceChildMessage } from '../../../../src/devices/speech/voice-protocol.js';
import { serveVoice } from '../../../../src/devices/speech/voice-server.js';
import { VOICE_OF_LANGUAGE, wordsPerMinute } from '../../../../src/devices/speech/voices.js';
import { fakeEngine, InProcessChild, serveFake } from '../../../support/voice-fixtures.js';

interface Harness {
  readonly voice: VoiceProcess;
  readonly children: InProcessChild[];
  readonly warnings: string[];
}

const open: VoiceProcess[] = [];

function harness(
  options: { readonly launch?: (child: InProcessChild) => void } & Partial<ConstructorParameters<typeof VoiceProcess>[0]> = {},
): Harness {
  const children: InProcessChild[] = [];
  const warnings: string[] = [];
  const launcher: ChildLauncher = () => {
    const child = new InProcessChild();
    children.push(child);
    if (options.launch) options.launch(child);
    else serveFake(child);
    return child;
  };
  const voice = new VoiceProcess({
    launcher,
    log: { info: () => undefined, warn: (_f, m) => warnings.push(m) },
    random: () => 0.5,
    ...options,
  });
  open.push(voice);
  return { voice, children, warnings };
}

afterEach(async () => {
  vi.useRealTimers();
  await Promise.all(open.splice(0).map((v) => v.close()));
});

describe('the voice process supervisor', () => {
  it('starts the child at start, answers samples and phonemes, and counts what it made', async () => {
    const { voice, children } = harness();
    voice.start();
    expect(children).toHaveLength(1);
    const audio = await voice.speak('hello', 'en-us', 175);
    expect(audio.pcm.byteLength).toBe(10);
    expect(audio.engine).toBe('fake eSpeak NG');
    expect(await voice.phonemes('hola', 'es')).toBe('ipa of 4');
    const status = voice.status();
    expect(status.state).toBe('ready');
    expect(status.made).toBe(1);
    expect(status.medianMs).not.toBeNull();
  });

  it('refuses at once beyond its queue, with a clear error', async () => {
    // A child that never answers: every request stays queued.
    const { voice } = harness({ maxQueue: 2, launch: () => undefined, deadlineMs: 60_000 });
    const first = expect(voice.speak('one', 'en-us', 175)).rejects.toThrow(VoiceError);
    const second = expect(voice.speak('two', 'en-us', 175)).rejects.toThrow(/stopped/);
    await expect(voice.speak('three', 'en-us', 175)).rejects.toThrow(/busy: 2 utterances wait already \(at most 2\)/);
    await voice.close();
    await first;
    await second;
  });

  it('rejects a request past its deadline and kills a child that holds it, then serves from a fresh one', async () => {
    vi.useFakeTimers();
    let stuck = true;
    const { voice, children } = harness({
      deadlineMs: 3_000,
      launch: (child) => {
        // Ready at once, then silent while `stuck` (a hung engine); a real server once not.
        if (stuck) {
          child.send({ t: 'ready', engine: 'stuck engine', sampleRate: 22_050, initMs: 1 });
          return;
        }
        serveFake(child);
      },
    });
    voice.start();
    await vi.advanceTimersByTimeAsync(0);
    const late = voice.speak('late', 'en-us', 175);
    const caught = expect(late).rejects.toThrow(/did not answer within 3000 ms/);
    await vi.advanceTimersByTimeAsync(3_000);
    await caught;
    expect(children[0]?.killed).toBe(true);
    stuck = false;
    await vi.advanceTimersByTimeAsync(1_000); // the first restart waits 0.375–0.5 s
    expect(children).toHaveLength(2);
    const audio = voice.speak('fresh', 'en-us', 175);
    await vi.advanceTimersByTimeAsync(0);
    expect((await audio).pcm.byteLength).toBe(10);
  });

  it('a request asked while the engine loads waits for it; an engine failure rejects only its request', async () => {
    const { voice } = harness();
    const early = voice.speak('early', 'fr', 175); // starts the child itself
    expect((await early).pcm.byteLength).toBe(10);
    await expect(voice.speak('throw', 'fr', 175)).rejects.toThrow(/the built-in voice failed: planted engine failure/);
    expect((await voice.speak('after', 'fr', 175)).pcm.byteLength).toBe(10);
  });

  it('refuses what the child sends out of shape, and the child refuses what the parent sends out of shape', async () => {
    const { voice, children, warnings } = harness({
      launch: (child) => {
        child.send({ t: 'ready', engine: 'odd engine', sampleRate: 22_050, initMs: 1 });
        child.toChild.push((m) => {
          const id = (m as { id: number }).id;
          child.send({ t: 'audio', id, pcm: new Uint8Array(3), ms: 1 }); // odd byte count: not 16-bit samples
        });
      },
    });
    await expect(voice.speak('x', 'en-us', 175)).rejects.toThrow(/invalid message \(pcm: not 16-bit samples/);
    expect(warnings.some((w) => w.includes('invalid message'))).toBe(true);
    expect(children).toHaveLength(1);

    // The real server: a message with an id but a voice it does not have is answered with an error, not thrown.
    const sent: VoiceChildMessage[] = [];
    let deliver: (m: unknown) => void = () => undefined;
    serveVoice({ send: (m) => sent.push(m), onMessage: (l) => (deliver = l) }, () => Promise.resolve(fakeEngine()), {
      exit: () => undefined,
    });
    await Promise.resolve();
    await Promise.resolve();
    deliver({ t: 'speak', id: 7, text: 'hi', voice: 'klingon', wpm: 175 });
    deliver({ t: 'speak', id: 8, text: 'x'.repeat(601), voice: 'en-us', wpm: 175 });
    deliver('not even an object');
    expect(sent.flatMap((m) => (m.t === 'error' ? [m.id] : []))).toEqual([7, 8]);
    // The refusal names the field, never the value (a customer's text).
    expect(JSON.stringify(sent)).not.toContain('xxxxxxxx');
  });

  it('a child that dies at once forever is started again with a growing wait: bounded per minute, never a tight loop', async () => {
    vi.useFakeTimers();
    const { voice, children } = harness({ launch: (child) => child.exit({ code: 1, signal: null }) });
    voice.start();
    await vi.advanceTimersByTimeAsync(60_000);
    const firstMinute = children.length;
    // 0.375, 0.75, 1.5, 3, 6, 12, 22.5 s (three quarters of 0.5 × 2^n, capped at 30 s): 8 starts in the first minute.
    expect(firstMinute).toBeGreaterThanOrEqual(5);
    expect(firstMinute).toBeLessThanOrEqual(10);
    await vi.advanceTimersByTimeAsync(9 * 60_000);
    // Then one every 22.5 s at most (three per minute): about twenty-five in ten minutes, never hundreds.
    expect(children.length).toBeLessThanOrEqual(firstMinute + 9 * 3);
    const status = voice.status();
    expect(status.state).toBe('failed');
    expect(status.detail).toMatch(/the voice process stopped \(exited with code 1\); starting it again in \d+ s/);
    await voice.close();
    const after = children.length;
    await vi.advanceTimersByTimeAsync(10 * 60_000);
    expect(children.length).toBe(after);
    expect(voice.status().state).toBe('stopped');
  });

  it('a launcher that throws counts as a failed start, not a crash of the kiosk', async () => {
    vi.useFakeTimers();
    let calls = 0;
    const voice = new VoiceProcess({
      launcher: () => {
        calls += 1;
        throw new Error('utilityProcess is not available');
      },
      log: { info: () => undefined, warn: () => undefined },
      random: () => 0.5,
    });
    open.push(voice);
    voice.start();
    expect(voice.status().detail).toMatch(/utilityProcess is not available/);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(calls).toBeGreaterThan(1);
    expect(calls).toBeLessThanOrEqual(10);
  });
});

describe('the real voice process (eSpeak NG forked as the browser host forks it)', () => {
  it('speaks, and after close nothing is left running (checked by pid)', { timeout: 60_000 }, async () => {
    const voice = new VoiceProcess({
      launcher: forkVoiceLauncher(),
      log: { info: () => undefined, warn: () => undefined },
      deadlineMs: 30_000,
      startMs: 60_000,
    });
    open.push(voice);
    voice.start();
    const pid = voice.pid;
    expect(pid).toBeTypeOf('number');
    const audio = await voice.speak('Hello.', 'en-us', 175);
    // About half a second of 16-bit samples at 22,050 Hz.
    expect(audio.pcm.byteLength).toBeGreaterThan(10_000);
    expect(audio.sampleRate).toBe(22_050);
    expect(audio.engine).toMatch(/^eSpeak NG \(WebAssembly, @echogarden\/espeak-ng-emscripten 0\.3\.5\)$/);
    await voice.close();
    expect(() => process.kill(pid ?? -1, 0)).toThrow(/ESRCH/);
    expect(voice.status().state).toBe('stopped');
  });
});

describe('voices and rates', () => {
  it('each language has its eSpeak NG voice, and a rate becomes words per minute within eSpeak NG’s bounds', () => {
    expect(VOICE_OF_LANGUAGE).toEqual({ en: 'en-us', es: 'es', fr: 'fr' });
    expect(wordsPerMinute()).toBe(175);
    expect(wordsPerMinute(0.5)).toBe(88);
    expect(wordsPerMinute(2)).toBe(350);
    expect(wordsPerMinute(0.1)).toBe(80);
    expect(wordsPerMinute(10)).toBe(450);
  });
});
