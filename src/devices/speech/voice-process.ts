/**
 * The built-in voice's supervisor (docs/speech-voice.md): starts the voice process (eSpeak NG in a process
 * of its own, voice-entry.ts) when the service starts, so the first utterance does not wait for the engine
 * to load; sends it requests and bounds each by a deadline; keeps a bounded queue (beyond it a request is
 * refused at once with a clear error); restarts the process with a growing wait after it stops (a child that
 * dies at once forever is started about twenty times in ten minutes, never in a tight loop); and ends it on
 * `close` (`shutdown`, then SIGKILL). It never logs a text: requests are known here by their id.
 */
import { errorMessage } from '../shared/abort.js';
import type { ChildExit, ChildLauncher, LaunchedChild } from '../shared/child-launcher.js';
import { RestartBackoff } from '../shared/restart-backoff.js';
import { VoiceChildMessage, describeVoiceIssue, type VoiceName, type VoiceParentMessage } from './voice-protocol.js';

export interface VoiceLog {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

export interface VoiceProcessOptions {
  readonly launcher: ChildLauncher;
  readonly log: VoiceLog;
  /** Bound on one request, from when it is asked (default 3 s: a prompt late by more is worse than none). */
  readonly deadlineMs?: number;
  /** Requests waiting or in the child at once (default 8: a screen asks for one at a time, a repeat or two). */
  readonly maxQueue?: number;
  /** Bound on loading the engine (default 20 s); a child not ready by then is killed and started again. */
  readonly startMs?: number;
  readonly restartMinMs?: number;
  readonly restartMaxMs?: number;
  /** A child that lived this long was healthy: the next failure waits the shortest time again. */
  readonly healthyMs?: number;
  readonly random?: () => number;
  /** Bound on `close` waiting for the child to go after `shutdown` before it is killed (default 1 s). */
  readonly stopMs?: number;
}

export interface VoiceStatus {
  readonly state: 'starting' | 'ready' | 'failed' | 'stopped';
  /** The engine's name once a child said it (`eSpeak NG (WebAssembly, …)`), else `eSpeak NG`. */
  readonly engine: string;
  readonly detail?: string;
  /** Utterances made since start, and the median time to get one (request to samples, ms; last 101). */
  readonly made: number;
  readonly medianMs: number | null;
  /** How long the running child took to load the engine (ms). */
  readonly initMs?: number;
}

export interface VoiceAudio {
  /** 16-bit little-endian mono samples. */
  readonly pcm: Uint8Array;
  readonly sampleRate: number;
  readonly engine: string;
}

/** Why a request failed: `busy` (queue full), `timeout`, `stopped` (closed or the process went), `engine`. */
export class VoiceError extends Error {
  override readonly name = 'VoiceError';
  constructor(
    readonly reason: 'busy' | 'timeout' | 'stopped' | 'engine',
    message: string,
  ) {
    super(message);
  }
}

type Answer = { readonly t: 'audio'; readonly pcm: Uint8Array } | { readonly t: 'phonemes'; readonly ipa: string };

interface Pending {
  readonly message: Extract<VoiceParentMessage, { id: number }>;
  readonly askedAt: number;
  readonly timer: NodeJS.Timeout;
  sent: boolean;
  resolve(answer: Answer): void;
  reject(error: VoiceError): void;
}

const RECENT = 101;

function describeExit(exit: ChildExit): string {
  if (exit.signal) return `killed by ${exit.signal}`;
  if (exit.code === null) return 'it could not be started';
  return `exited with code ${exit.code}`;
}

export class VoiceProcess {
  private readonly deadlineMs: number;
  private readonly maxQueue: number;
  private readonly startMs: number;
  private readonly stopMs: number;
  private readonly backoff: RestartBackoff;
  private readonly pending = new Map<number, Pending>();
  private readonly recent: number[] = [];
  private child: LaunchedChild | undefined;
  private ready = false;
  private startTimer: NodeJS.Timeout | undefined;
  private restartTimer: NodeJS.Timeout | undefined;
  private closed = false;
  private closing: Promise<void> | undefined;
  private nextId = 1;
  private made = 0;
  private engine = 'eSpeak NG';
  private sampleRate = 22_050;
  private initMs: number | undefined;
  private state: VoiceStatus['state'] = 'stopped';
  private detail: string | undefined = 'not started';
  private lastFailure: string | undefined;
  /** Children started so far (tests count restarts). */
  starts = 0;

  constructor(private readonly options: VoiceProcessOptions) {
    this.deadlineMs = options.deadlineMs ?? 3_000;
    this.maxQueue = options.maxQueue ?? 8;
    this.startMs = options.startMs ?? 20_000;
    this.stopMs = options.stopMs ?? 1_000;
    this.backoff = new RestartBackoff({
      restartMinMs: options.restartMinMs ?? 500,
      restartMaxMs: options.restartMaxMs ?? 30_000,
      healthyMs: options.healthyMs ?? 60_000,
      random: options.random ?? Math.random,
    });
  }

  /** Starts the process (idempotent); requests made before it is ready wait for it within their deadline. */
  start(): void {
    if (this.closed || this.child !== undefined || this.restartTimer !== undefined) return;
    this.launch();
  }

  /** The running child's pid (tests check it is gone after `close`). */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  status(): VoiceStatus {
    const sorted = [...this.recent].sort((a, b) => a - b);
    const median = sorted.length === 0 ? null : (sorted[Math.floor(sorted.length / 2)] ?? null);
    return {
      state: this.state,
      engine: this.engine,
      ...(this.detail === undefined ? {} : { detail: this.detail.slice(0, 300) }),
      made: this.made,
      medianMs: median === null ? null : Math.round(median * 10) / 10,
      ...(this.initMs === undefined ? {} : { initMs: Math.round(this.initMs) }),
    };
  }

  /** The samples of `text` in `voice` at `wpm`. */
  async speak(text: string, voice: VoiceName, wpm: number): Promise<VoiceAudio> {
    const answer = await this.request((id) => ({ t: 'speak', id, text, voice, wpm }));
    if (answer.t !== 'audio') throw new VoiceError('engine', 'the voice process answered with something else than samples');
    return { pcm: answer.pcm, sampleRate: this.sampleRate, engine: this.engine };
  }

  /** The IPA phonemes eSpeak NG makes of `text` in `voice`. */
  async phonemes(text: string, voice: VoiceName): Promise<string> {
    const answer = await this.request((id) => ({ t: 'phonemes', id, text, voice }));
    if (answer.t !== 'phonemes') throw new VoiceError('engine', 'the voice process answered with something else than phonemes');
    return answer.ipa;
  }

  /** Ends the process and every timer; what waits is rejected. Resolves once the child has gone. */
  close(): Promise<void> {
    this.closing ??= this.doClose();
    return this.closing;
  }

  private async doClose(): Promise<void> {
    this.closed = true;
    clearTimeout(this.restartTimer);
    clearTimeout(this.startTimer);
    this.restartTimer = undefined;
    this.failAll(new VoiceError('stopped', 'the built-in voice was stopped'), () => true);
    const child = this.child;
    this.setState('stopped', 'stopped with the kiosk');
    if (child === undefined) return;
    await new Promise<void>((resolve) => {
      let done = false;
      const finish = (): void => {
        if (done) return;
        done = true;
        clearTimeout(kill);
        clearTimeout(giveUp);
        resolve();
      };
      this.onChildGone = finish;
      const kill = setTimeout(() => child.kill(), this.stopMs);
      // A child that does not report its exit even after SIGKILL does not hold the service's stop forever.
      const giveUp = setTimeout(finish, this.stopMs + 2_000);
      child.postMessage({ t: 'shutdown' } satisfies VoiceParentMessage);
    });
  }

  private onChildGone: (() => void) | undefined;

  private request(make: (id: number) => Pending['message']): Promise<Answer> {
    if (this.closed) return Promise.reject(new VoiceError('stopped', 'the built-in voice is stopped'));
    if (this.pending.size >= this.maxQueue)
      return Promise.reject(
        new VoiceError('busy', `the built-in voice is busy: ${this.pending.size} utterances wait already (at most ${this.maxQueue})`),
      );
    const id = this.nextId++;
    const message = make(id);
    return new Promise<Answer>((resolve, reject) => {
      const timer = setTimeout(() => this.timedOut(id), this.deadlineMs);
      const entry: Pending = { message, askedAt: performance.now(), timer, sent: false, resolve, reject };
      this.pending.set(id, entry);
      if (this.ready) this.send(entry);
      else this.start();
    });
  }

  private send(entry: Pending): void {
    entry.sent = true;
    this.child?.postMessage(entry.message);
  }

  private timedOut(id: number): void {
    const entry = this.pending.get(id);
    if (entry === undefined) return;
    this.pending.delete(id);
    entry.reject(
      new VoiceError(
        'timeout',
        `the built-in voice did not answer within ${this.deadlineMs} ms${this.ready ? '' : ` (${this.detail ?? 'starting'})`}`,
      ),
    );
    // The child works in order and synchronously: one that holds a sent request past its deadline is stuck
    // (or far too slow for speech); a fresh one serves the next customer.
    if (entry.sent && this.child !== undefined) {
      this.options.log.warn({ event: 'voice_process_stuck', ms: this.deadlineMs }, 'the voice process missed a deadline; killing it');
      this.child.kill();
    }
  }

  private failAll(error: VoiceError, which: (entry: Pending) => boolean): void {
    for (const [id, entry] of this.pending) {
      if (!which(entry)) continue;
      clearTimeout(entry.timer);
      this.pending.delete(id);
      entry.reject(error);
    }
  }

  private setState(state: VoiceStatus['state'], detail?: string): void {
    this.state = state;
    this.detail = detail;
  }

  private launch(): void {
    this.starts += 1;
    this.ready = false;
    this.setState('starting', this.lastFailure === undefined ? 'loading eSpeak NG' : `loading eSpeak NG again (${this.lastFailure})`);
    // Counted from the attempt, so a launcher that throws at once still makes the wait grow.
    this.backoff.started(Date.now());
    let child: LaunchedChild;
    try {
      child = this.options.launcher();
    } catch (e) {
      this.stopped({ code: null, signal: null }, errorMessage(e));
      return;
    }
    this.child = child;
    child.onMessage((raw) => this.received(child, raw));
    child.onExit((exit) => {
      if (this.child === child) this.stopped(exit);
    });
    this.drain(child.stdout, 'stdout');
    this.drain(child.stderr, 'stderr');
    this.startTimer = setTimeout(() => {
      if (this.child !== child || this.ready) return;
      this.lastFailure = `it did not load eSpeak NG within ${this.startMs} ms`;
      child.kill();
    }, this.startMs);
  }

  /**
   * The child's own output, counted, never logged as it is: the engine's prints are switched off, so
   * anything here is a crash report, and a crash report could quote what was being said.
   */
  private drain(stream: NodeJS.ReadableStream | null, name: 'stdout' | 'stderr'): void {
    if (!stream) return;
    let bytes = 0;
    stream.on('data', (chunk: Buffer | string) => {
      bytes += chunk.length;
    });
    stream.on('end', () => {
      if (bytes > 0)
        this.options.log.warn(
          { event: 'voice_process_output', stream: name, count: bytes },
          `the voice process wrote ${bytes} bytes to its ${name}`,
        );
    });
  }

  private received(child: LaunchedChild, raw: unknown): void {
    if (this.child !== child) return;
    const parsed = VoiceChildMessage.safeParse(raw);
    if (!parsed.success) {
      const id = (raw as { id?: unknown } | null)?.id;
      const entry = typeof id === 'number' ? this.pending.get(id) : undefined;
      const detail = `the voice process sent an invalid message (${describeVoiceIssue(parsed.error)})`;
      this.options.log.warn({ event: 'voice_process_invalid_message' }, detail);
      if (entry !== undefined && typeof id === 'number') this.settle(id, entry, () => entry.reject(new VoiceError('engine', detail)));
      return;
    }
    const message = parsed.data;
    switch (message.t) {
      case 'ready': {
        clearTimeout(this.startTimer);
        this.ready = true;
        this.engine = message.engine;
        this.sampleRate = message.sampleRate;
        this.initMs = message.initMs;
        this.lastFailure = undefined;
        this.setState('ready');
        this.options.log.info(
          { event: 'voice_process_ready', ms: Math.round(message.initMs) },
          `built-in voice ready: ${message.engine}, loaded in ${Math.round(message.initMs)} ms`,
        );
        for (const entry of this.pending.values()) if (!entry.sent) this.send(entry);
        return;
      }
      case 'failed':
        this.lastFailure = message.detail;
        return;
      case 'audio':
      case 'phonemes': {
        const entry = this.pending.get(message.id);
        if (entry === undefined) return; // timed out meanwhile
        this.settle(message.id, entry, () => {
          if (message.t === 'audio') {
            this.made += 1;
            this.recent.push(performance.now() - entry.askedAt);
            if (this.recent.length > RECENT) this.recent.shift();
            entry.resolve({ t: 'audio', pcm: message.pcm });
          } else entry.resolve({ t: 'phonemes', ipa: message.ipa });
        });
        return;
      }
      case 'error': {
        const entry = this.pending.get(message.id);
        if (entry !== undefined)
          this.settle(message.id, entry, () => entry.reject(new VoiceError('engine', `the built-in voice failed: ${message.detail}`)));
        return;
      }
    }
  }

  private settle(id: number, entry: Pending, how: () => void): void {
    clearTimeout(entry.timer);
    this.pending.delete(id);
    how();
  }

  private stopped(exit: ChildExit, launchError?: string): void {
    clearTimeout(this.startTimer);
    this.child = undefined;
    this.ready = false;
    const gone = this.onChildGone;
    this.onChildGone = undefined;
    gone?.();
    if (this.closed) return;
    const why = launchError ?? this.lastFailure ?? describeExit(exit);
    this.lastFailure = why;
    // What the stopped child held is lost; what never reached it waits for the next one (within its deadline).
    this.failAll(new VoiceError('stopped', `the voice process stopped (${why})`), (entry) => entry.sent);
    const wait = this.backoff.delayAfterStop(Date.now());
    this.setState('failed', `the voice process stopped (${why}); starting it again in ${Math.ceil(wait / 1000)} s`);
    this.options.log.warn(
      { event: 'voice_process_stopped', ms: wait },
      `the voice process stopped (${why}); starting it again in ${wait} ms`,
    );
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      if (!this.closed) this.launch();
    }, wait);
  }
}
