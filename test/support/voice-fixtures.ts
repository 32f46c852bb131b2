/**
 * Doubles for the built-in voice's tests: a child process in this process (messages structured-cloned
 * both ways, as over a real channel) and an engine that needs no WebAssembly.
 */
import type { ChildExit, LaunchedChild } from '../../src/devices/shared/child-launcher.js';
import type { VoiceChildMessage } from '../../src/devices/speech/voice-protocol.js';
import { serveVoice, type VoiceEngine } from '../../src/devices/speech/voice-server.js';

/** A child in this process: messages structured-cloned both ways, as over a real channel. */
export class InProcessChild implements LaunchedChild {
  static nextPid = 90_000;
  readonly pid = InProcessChild.nextPid++;
  readonly stdout = null;
  readonly stderr = null;
  readonly toChild: ((m: unknown) => void)[] = [];
  readonly posted: unknown[] = [];
  private readonly toParent: ((m: unknown) => void)[] = [];
  private readonly exits: ((e: ChildExit) => void)[] = [];
  gone = false;
  killed = false;

  postMessage(message: unknown): void {
    if (this.gone) return;
    this.posted.push(message);
    const copy = structuredClone(message);
    queueMicrotask(() => {
      for (const l of this.toChild) l(copy);
    });
  }
  onMessage(listener: (message: unknown) => void): void {
    this.toParent.push(listener);
  }
  onExit(listener: (exit: ChildExit) => void): void {
    this.exits.push(listener);
  }
  send(message: unknown): void {
    if (this.gone) return;
    const copy = structuredClone(message);
    queueMicrotask(() => {
      for (const l of this.toParent) l(copy);
    });
  }
  exit(exit: ChildExit): void {
    if (this.gone) return;
    this.gone = true;
    queueMicrotask(() => {
      for (const l of this.exits) l(exit);
    });
  }
  kill(): void {
    this.killed = true;
    this.exit({ code: null, signal: 'SIGKILL' });
  }
}

/** An engine that makes one sample per character (value 1000), or hangs/throws for planted texts. */
export function fakeEngine(): VoiceEngine {
  return {
    name: 'fake eSpeak NG',
    sampleRate: 22_050,
    speak(text) {
      if (text === 'throw') throw new Error('planted engine failure');
      return new Uint8Array(new Int16Array(text.length).fill(1000).buffer);
    },
    phonemes: (text) => `ipa of ${text.length}`,
  };
}

/** The real server (voice-server.ts) with the fake engine, in `child`. */
export function serveFake(child: InProcessChild): InProcessChild {
  serveVoice(
    { send: (m: VoiceChildMessage) => child.send(m), onMessage: (l) => child.toChild.push(l) },
    () => Promise.resolve(fakeEngine()),
    { exit: (code) => child.exit({ code, signal: null }) },
  );
  return child;
}
