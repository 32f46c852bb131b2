/**
 * CameraSession in Node with a fake camera (tracks that stop and end), fake mediaDevices (getUserMedia,
 * enumerateDevices, devicechange), a fake <video> that presents frames on a fake-timer clock and a fake
 * decoder: the camera opens as chosen in the settings, is released on stop (every track stopped, listeners
 * removed), camera errors are classified, an unplugged or missing camera is reopened when it comes back,
 * at most maxDecodesPerSecond frames reach the decoder with one in flight, and a code held in view is
 * reported once per repeat window, unmodified.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { CameraState } from '../../../src/common/kiosk-api.js';
import {
  CameraSession,
  type CameraDevices,
  type CameraSessionOptions,
  type FrameDecoder,
} from '../../../src/renderer/qr/camera-session.js';
import type { DecodeOutcome } from '../../../src/renderer/qr/decoder-client.js';

/** The repeat window of the session's RepeatFilter (docs: "again every 3 s at most"). */
const REPEAT_WINDOW_MS = 3_000;

class FakeTrack {
  readyState: 'live' | 'ended' = 'live';
  stopCalls = 0;
  readonly #ended = new Set<() => void>();

  constructor(readonly kind: 'video' | 'audio' = 'video') {}

  stop(): void {
    this.stopCalls += 1;
    this.readyState = 'ended';
  }
  addEventListener(type: string, listener: () => void): void {
    if (type === 'ended') this.#ended.add(listener);
  }
  removeEventListener(type: string, listener: () => void): void {
    if (type === 'ended') this.#ended.delete(listener);
  }
  get endedListeners(): number {
    return this.#ended.size;
  }
  /** The device went away: the browser ends the track and fires `ended` (stop() is not called). */
  unplug(): void {
    this.readyState = 'ended';
    for (const listener of [...this.#ended]) listener();
  }
}

class FakeStream {
  constructor(readonly tracks: readonly FakeTrack[]) {}
  getTracks(): FakeTrack[] {
    return [...this.tracks];
  }
  getVideoTracks(): FakeTrack[] {
    return this.tracks.filter((t) => t.kind === 'video');
  }
}

interface FakeDevice {
  readonly kind: MediaDeviceKind;
  readonly deviceId: string;
}

class FakeMediaDevices {
  readonly constraints: MediaStreamConstraints[] = [];
  readonly streams: FakeStream[] = [];
  /** Errors the next getUserMedia calls reject with, in order. */
  readonly failures: Error[] = [];
  devices: FakeDevice[] = [{ kind: 'videoinput', deviceId: 'cam-front' }];
  /** Tracks of the next stream (one video track unless a test says otherwise). */
  nextTracks: () => FakeTrack[] = () => [new FakeTrack('video')];
  /** When set, getUserMedia waits for the test to call it (a camera that is slow to open). */
  hold: ((open: () => void) => void) | undefined;
  readonly #deviceChange = new Set<() => void>();

  getUserMedia(constraints: MediaStreamConstraints): Promise<FakeStream> {
    this.constraints.push(constraints);
    const failure = this.failures.shift();
    if (failure !== undefined) return Promise.reject(failure);
    const stream = new FakeStream(this.nextTracks());
    this.streams.push(stream);
    const hold = this.hold;
    if (hold === undefined) return Promise.resolve(stream);
    return new Promise((resolve) => {
      hold(() => resolve(stream));
    });
  }
  enumerateDevices(): Promise<MediaDeviceInfo[]> {
    return Promise.resolve(this.devices.map((d) => ({ ...d, label: '', groupId: 'g', toJSON: () => d })));
  }
  addEventListener(type: string, listener: () => void): void {
    if (type === 'devicechange') this.#deviceChange.add(listener);
  }
  removeEventListener(type: string, listener: () => void): void {
    if (type === 'devicechange') this.#deviceChange.delete(listener);
  }
  get deviceChangeListeners(): number {
    return this.#deviceChange.size;
  }
  deviceChange(): void {
    for (const listener of [...this.#deviceChange]) listener();
  }
  allTracks(): FakeTrack[] {
    return this.streams.flatMap((s) => s.getTracks());
  }
  liveTracks(): FakeTrack[] {
    return this.allTracks().filter((t) => t.readyState === 'live');
  }
}

/** A <video> that presents a frame to its requestVideoFrameCallback callbacks when the test says so. */
class FakeVideo {
  muted = false;
  srcObject: unknown = null;
  paused = true;
  readyState = 0;
  videoWidth = 0;
  videoHeight = 0;
  playError: Error | undefined;
  #nextHandle = 1;
  readonly #callbacks = new Map<number, VideoFrameRequestCallback>();

  constructor(readonly size = { width: 1_280, height: 720 }) {}

  play(): Promise<void> {
    if (this.playError !== undefined) return Promise.reject(this.playError);
    if (this.srcObject === null) return Promise.reject(new Error('no source'));
    this.paused = false;
    this.readyState = 4; // HAVE_ENOUGH_DATA
    this.videoWidth = this.size.width;
    this.videoHeight = this.size.height;
    return Promise.resolve();
  }
  pause(): void {
    this.paused = true;
  }
  requestVideoFrameCallback(callback: VideoFrameRequestCallback): number {
    const handle = this.#nextHandle++;
    this.#callbacks.set(handle, callback);
    return handle;
  }
  cancelVideoFrameCallback(handle: number): void {
    this.#callbacks.delete(handle);
  }
  get pendingFrameCallbacks(): number {
    return this.#callbacks.size;
  }
  /** A new frame is shown: run (and forget) the callbacks waiting for it, as the browser does. */
  presentFrame(): void {
    if (this.srcObject === null || this.paused) return;
    const callbacks = [...this.#callbacks.values()];
    this.#callbacks.clear();
    for (const callback of callbacks) callback(0, {} as VideoFrameCallbackMetadata);
  }
}

/** A decoder that answers after `answerMs` with `text()`, and records what it was given and when. */
class FakeDecoder implements FrameDecoder {
  ready = true;
  failed = false;
  failure: string | undefined;
  answerMs = 0;
  text: () => string | null = () => null;
  /** When set, the next decodes reject with this (a frame the worker could not decode). */
  rejectWith: Error | undefined;
  readonly calls: { at: number; width: number; height: number; bytes: number }[] = [];
  inFlight = 0;
  maxInFlight = 0;

  constructor(readonly clock: () => number) {}

  get busy(): boolean {
    return this.inFlight > 0;
  }
  // Deliberately answers even while busy: keeping one frame in flight is the session's job.
  decode(pixels: ArrayBuffer, width: number, height: number): Promise<DecodeOutcome> {
    this.calls.push({ at: this.clock(), width, height, bytes: pixels.byteLength });
    this.inFlight += 1;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    const text = this.text();
    const failure = this.rejectWith;
    return new Promise((resolve, reject) => {
      setTimeout(() => {
        this.inFlight -= 1;
        if (failure !== undefined) reject(failure);
        else resolve({ text, ms: 1 });
      }, this.answerMs);
    });
  }
}

function fakeCanvas(): { canvas: HTMLCanvasElement; drawn: number } {
  const state = { drawn: 0 };
  const context = {
    drawImage: () => {
      state.drawn += 1;
    },
    getImageData: (_x: number, _y: number, width: number, height: number) => ({ data: new Uint8ClampedArray(width * height * 4) }),
  };
  const canvas = { width: 300, height: 150, getContext: () => context };
  return {
    canvas: canvas as unknown as HTMLCanvasElement,
    get drawn() {
      return state.drawn;
    },
  };
}

interface Rig {
  readonly session: CameraSession;
  readonly media: FakeMediaDevices;
  readonly video: FakeVideo;
  readonly decoder: FakeDecoder;
  readonly states: [CameraState, string | undefined][];
  readonly texts: { at: number; text: string }[];
  readonly now: () => number;
  /** The camera shows frames at `fps` until the returned function is called. */
  film(fps?: number): () => void;
}

let origin = 0;

function rig(
  options: Partial<Pick<CameraSessionOptions, 'deviceId' | 'maxDecodesPerSecond'>> & { video?: FakeVideo; media?: FakeMediaDevices } = {},
): Rig {
  const now = (): number => Date.now() - origin;
  const media = options.media ?? new FakeMediaDevices();
  const video = options.video ?? new FakeVideo();
  const decoder = new FakeDecoder(now);
  const states: [CameraState, string | undefined][] = [];
  const texts: { at: number; text: string }[] = [];
  const session = new CameraSession({
    video: video as unknown as HTMLVideoElement,
    deviceId: options.deviceId ?? null,
    maxDecodesPerSecond: options.maxDecodesPerSecond ?? 5,
    decoder,
    onState: (state, detail) => states.push([state, detail]),
    onText: (text) => texts.push({ at: now(), text }),
    mediaDevices: media as unknown as CameraDevices,
    now,
    createCanvas: () => fakeCanvas().canvas,
  });
  return {
    session,
    media,
    video,
    decoder,
    states,
    texts,
    now,
    film(fps = 100) {
      const timer = setInterval(() => {
        video.presentFrame();
      }, 1_000 / fps);
      return () => {
        clearInterval(timer);
      };
    },
  };
}

/** Lets pending promises and due timers run. */
async function settle(ms = 0): Promise<void> {
  await vi.advanceTimersByTimeAsync(ms);
}

function named(name: string, extra: Record<string, unknown> = {}): Error {
  return Object.assign(new Error(`${name} from the fake camera`), { name }, extra);
}

beforeEach(() => {
  vi.useFakeTimers();
  origin = Date.now();
});

afterEach(() => {
  vi.useRealTimers();
});

describe('CameraSession: opening and releasing the camera', () => {
  it('starts: starting → active, the default camera at 1280×720 (ideal), no audio, the preview muted and playing', async () => {
    const r = rig();
    r.session.start();
    expect(r.states).toEqual([['starting', undefined]]);
    await settle();
    expect(r.states).toEqual([
      ['starting', undefined],
      ['active', undefined],
    ]);
    expect(r.media.constraints).toEqual([{ audio: false, video: { width: { ideal: 1280 }, height: { ideal: 720 } } }]);
    expect(r.video.srcObject).toBe(r.media.streams[0]);
    expect(r.video.muted).toBe(true);
    expect(r.video.paused).toBe(false);
    expect(r.media.liveTracks()).toHaveLength(1);
    expect(r.media.streams[0]?.tracks[0]?.endedListeners).toBe(1);
    expect(r.video.pendingFrameCallbacks).toBe(1);
    r.session.stop();
  });

  it('asks for the camera chosen in the settings as an exact deviceId (never a silent fallback to another one)', async () => {
    const r = rig({ deviceId: 'cam-usb-2' });
    r.session.start();
    await settle();
    expect(r.media.constraints).toEqual([
      { audio: false, video: { deviceId: { exact: 'cam-usb-2' }, width: { ideal: 1280 }, height: { ideal: 720 } } },
    ]);
    expect(r.states.at(-1)).toEqual(['active', undefined]);
    r.session.stop();
  });

  it('stop(): every track stopped, the ended listener removed, the video detached, no frame callback left, then silence', async () => {
    const r = rig();
    r.media.nextTracks = () => [new FakeTrack('video'), new FakeTrack('audio')];
    r.decoder.text = () => 'mdoc:held-up';
    r.session.start();
    const stopFilming = r.film();
    await settle(500);
    expect(r.states.at(-1)).toEqual(['active', undefined]);
    expect(r.texts).toHaveLength(1);
    const decodes = r.decoder.calls.length;
    expect(decodes).toBeGreaterThan(0);

    r.session.stop();
    const tracks = r.media.allTracks();
    expect(tracks).toHaveLength(2);
    expect(tracks.every((t) => t.readyState === 'ended' && t.stopCalls === 1)).toBe(true);
    expect(tracks.every((t) => t.endedListeners === 0)).toBe(true);
    expect(r.video.srcObject).toBeNull();
    expect(r.video.paused).toBe(true);
    expect(r.video.pendingFrameCallbacks).toBe(0);
    expect(r.media.deviceChangeListeners).toBe(0);

    const statesAtStop = r.states.length;
    await settle(10_000);
    stopFilming();
    expect(r.decoder.calls).toHaveLength(decodes);
    expect(r.texts).toHaveLength(1);
    expect(r.states).toHaveLength(statesAtStop);
    expect(vi.getTimerCount()).toBe(0);
    r.session.stop(); // twice is harmless
    expect(tracks.every((t) => t.stopCalls === 1)).toBe(true);
  });

  it('stop() while the camera is still opening: the stream that arrives afterwards is stopped at once, nothing reported', async () => {
    const r = rig();
    let open: (() => void) | undefined;
    r.media.hold = (resolve) => {
      open = resolve;
    };
    r.session.start();
    await settle();
    expect(r.states).toEqual([['starting', undefined]]);
    r.session.stop();
    expect(open).toBeDefined();
    open?.();
    await settle();
    expect(r.media.allTracks()).toHaveLength(1);
    expect(r.media.liveTracks()).toEqual([]);
    expect(r.video.srcObject).toBeNull();
    expect(r.states).toEqual([['starting', undefined]]);
  });

  it('without mediaDevices (not a secure context) it says so as an error instead of throwing', async () => {
    const video = new FakeVideo();
    const states: [CameraState, string | undefined][] = [];
    const session = new CameraSession({
      video: video as unknown as HTMLVideoElement,
      deviceId: null,
      maxDecodesPerSecond: 5,
      decoder: new FakeDecoder(() => 0),
      onState: (state, detail) => states.push([state, detail]),
      onText: () => undefined,
      // Node has no navigator.mediaDevices: the default is what an insecure page gets.
    });
    session.start();
    await settle();
    expect(states.map(([s]) => s)).toEqual(['starting', 'error']);
    expect(states[1]?.[1]).toMatch(/mediaDevices is unavailable/);
    session.stop();
  });
});

describe('CameraSession: camera problems', () => {
  it.each([
    ['NotAllowedError', {}, 'denied', 'NotAllowedError'],
    ['PermissionDeniedError', {}, 'denied', 'PermissionDeniedError'],
    ['SecurityError', {}, 'denied', 'SecurityError'],
    ['NotFoundError', {}, 'missing', 'NotFoundError'],
    ['OverconstrainedError', { constraint: 'deviceId' }, 'missing', 'OverconstrainedError (deviceId)'],
    ['NotReadableError', {}, 'error', 'NotReadableError'],
    ['AbortError', {}, 'error', 'AbortError'],
    ['TypeError', {}, 'error', 'TypeError'],
  ] as const)('getUserMedia failing with %s → %s', async (name, extra, state, detail) => {
    const r = rig({ deviceId: 'cam-usb-2' });
    r.media.failures.push(named(name, extra));
    r.session.start();
    await settle();
    expect(r.states).toEqual([
      ['starting', undefined],
      [state, detail],
    ]);
    expect(r.media.liveTracks()).toEqual([]);
    // Only a missing camera can come back by itself: the session then listens for devicechange.
    expect(r.media.deviceChangeListeners).toBe(state === 'missing' ? 1 : 0);
    r.session.stop();
    expect(r.media.deviceChangeListeners).toBe(0);
  });

  it('the staff detail is the error name, never its message', async () => {
    const r = rig();
    r.media.failures.push(Object.assign(new Error('/home/kiosk/secret path'), { name: 'NotReadableError' }));
    r.session.start();
    await settle();
    expect(r.states.at(-1)).toEqual(['error', 'NotReadableError']);
    r.session.stop();
  });

  it('a preview that will not play is an error, and the camera is released', async () => {
    const video = new FakeVideo();
    video.playError = named('NotSupportedError');
    const r = rig({ video });
    r.session.start();
    await settle();
    expect(r.states.at(-1)).toEqual(['error', 'video: NotSupportedError']);
    expect(r.media.liveTracks()).toEqual([]);
    r.session.stop();
  });

  it('a missing camera is opened when one is plugged in (devicechange), not before', async () => {
    const r = rig();
    r.media.failures.push(named('NotFoundError'));
    r.media.devices = [{ kind: 'audioinput', deviceId: 'mic' }];
    r.session.start();
    await settle();
    expect(r.states.at(-1)).toEqual(['missing', 'NotFoundError']);

    r.media.deviceChange(); // a microphone came and went: still no camera
    await settle();
    expect(r.media.constraints).toHaveLength(1);
    expect(r.states.at(-1)).toEqual(['missing', 'NotFoundError']);

    r.media.devices = [...r.media.devices, { kind: 'videoinput', deviceId: 'cam-front' }];
    r.media.deviceChange();
    await settle();
    expect(r.media.constraints).toHaveLength(2);
    expect(r.states.slice(-2)).toEqual([
      ['starting', undefined],
      ['active', undefined],
    ]);
    expect(r.media.deviceChangeListeners).toBe(0);
    expect(r.media.liveTracks()).toHaveLength(1);
    r.session.stop();
    expect(r.media.liveTracks()).toEqual([]);
  });

  it('unplugged: the track ends → camera released, `unplugged`; a devicechange with the chosen camera back → reopened, active', async () => {
    const r = rig({ deviceId: 'cam-usb-2' });
    r.media.devices = [{ kind: 'videoinput', deviceId: 'cam-usb-2' }];
    r.session.start();
    const stopFilming = r.film();
    await settle(300);
    expect(r.states.at(-1)).toEqual(['active', undefined]);
    const first = r.media.streams[0]?.tracks[0];
    if (first === undefined) throw new Error('no track');

    r.media.devices = [];
    first.unplug();
    expect(r.states.at(-1)).toEqual(['unplugged', 'the camera track ended']);
    expect(first.endedListeners).toBe(0);
    expect(r.video.srcObject).toBeNull();
    expect(r.video.pendingFrameCallbacks).toBe(0);
    expect(r.media.deviceChangeListeners).toBe(1);
    const decodes = r.decoder.calls.length;
    await settle(1_000);
    expect(r.decoder.calls).toHaveLength(decodes); // no frames from a camera that is gone

    // Another camera is plugged in: not the one chosen in the settings, so nothing is opened.
    r.media.devices = [{ kind: 'videoinput', deviceId: 'cam-front' }];
    r.media.deviceChange();
    await settle();
    expect(r.media.constraints).toHaveLength(1);
    expect(r.states.at(-1)?.[0]).toBe('unplugged');

    // The chosen camera is back.
    r.media.devices = [...r.media.devices, { kind: 'videoinput', deviceId: 'cam-usb-2' }];
    r.media.deviceChange();
    await settle();
    expect(r.media.constraints).toHaveLength(2);
    expect(r.media.constraints[1]).toMatchObject({ video: { deviceId: { exact: 'cam-usb-2' } } });
    expect(r.states.slice(-2)).toEqual([
      ['starting', undefined],
      ['active', undefined],
    ]);
    expect(r.media.deviceChangeListeners).toBe(0);
    expect(r.video.srcObject).toBe(r.media.streams[1]);
    await settle(500);
    expect(r.decoder.calls.length).toBeGreaterThan(decodes); // frames are decoded again

    r.session.stop();
    stopFilming();
    expect(r.media.liveTracks()).toEqual([]);
  });

  it('stop() while waiting for an unplugged camera removes the devicechange listener; a later devicechange opens nothing', async () => {
    const r = rig();
    r.session.start();
    await settle();
    r.media.streams[0]?.tracks[0]?.unplug();
    expect(r.media.deviceChangeListeners).toBe(1);
    r.session.stop();
    expect(r.media.deviceChangeListeners).toBe(0);
    r.media.deviceChange();
    await settle();
    expect(r.media.constraints).toHaveLength(1);
  });

  it('a decoder that failed ends the session with `error` and releases the camera', async () => {
    const r = rig();
    r.session.start();
    const stopFilming = r.film();
    await settle(300);
    r.decoder.failed = true;
    r.decoder.failure = 'the QR decode worker failed: boom';
    await settle(300);
    stopFilming();
    expect(r.states.at(-1)).toEqual(['error', 'decoder: the QR decode worker failed: boom']);
    expect(r.media.liveTracks()).toEqual([]);
    r.session.stop();
  });

  it('one frame the decoder rejects is tolerated; three in a row end the session with `error`', async () => {
    const r = rig({ maxDecodesPerSecond: 10 });
    r.session.start();
    const stopFilming = r.film();
    await settle(150);
    r.decoder.rejectWith = new Error('frame lost');
    await settle(150); // one or two rejected frames
    r.decoder.rejectWith = undefined;
    await settle(300);
    expect(r.states.at(-1)).toEqual(['active', undefined]);
    r.decoder.rejectWith = new Error('worker gone');
    await settle(1_000);
    stopFilming();
    expect(r.states.at(-1)).toEqual(['error', 'decoder: worker gone']);
    expect(r.media.liveTracks()).toEqual([]);
    r.session.stop();
  });
});

describe('CameraSession: decoding frames', () => {
  /** The largest number of decodes that started within any 1-second window [t, t + 1000). */
  function busiestSecond(times: readonly number[]): number {
    return Math.max(0, ...times.map((t) => times.filter((u) => u >= t && u < t + 1_000).length));
  }

  it.each([
    [1, 1],
    [5, 5],
    [15, 15],
    [1_000, 30], // the host bounds the setting to 1–30; the session does too
  ])('maxDecodesPerSecond %i: a 100 fps camera gets at most %i frames a second to the decoder', async (setting, cap) => {
    const r = rig({ maxDecodesPerSecond: setting });
    r.session.start();
    const stopFilming = r.film(100);
    const seconds = 4;
    await settle(seconds * 1_000);
    stopFilming();
    r.session.stop();
    const times = r.decoder.calls.map((c) => c.at);
    expect(busiestSecond(times)).toBeLessThanOrEqual(cap);
    // …and the cap is a cap, not a stall: the decoder is kept close to its rate.
    expect(times.length).toBeGreaterThanOrEqual(Math.floor(seconds * cap * 0.75));
    expect(r.decoder.maxInFlight).toBe(1);
  });

  it('one frame in flight: a slow decoder is never handed a second frame, and gets the next one as soon as it is free', async () => {
    const r = rig({ maxDecodesPerSecond: 30 });
    r.decoder.answerMs = 450;
    r.session.start();
    const stopFilming = r.film(100);
    await settle(3_000);
    stopFilming();
    r.session.stop();
    expect(r.decoder.maxInFlight).toBe(1);
    const times = r.decoder.calls.map((c) => c.at);
    // 3 s / 450 ms ≈ 6.7 answers: each frame waits for the previous answer, none queue behind it.
    expect(times.length).toBeGreaterThanOrEqual(6);
    expect(times.length).toBeLessThanOrEqual(7);
    for (let i = 1; i < times.length; i += 1) {
      const gap = (times[i] ?? 0) - (times[i - 1] ?? 0);
      expect(gap).toBeGreaterThanOrEqual(450);
      expect(gap).toBeLessThanOrEqual(450 + 20); // the next frame after the answer (100 fps)
    }
  });

  it('does not decode before the decoder is ready, and starts as soon as it is', async () => {
    const r = rig({ maxDecodesPerSecond: 10 });
    r.decoder.ready = false;
    r.session.start();
    const stopFilming = r.film(100);
    await settle(1_000);
    expect(r.decoder.calls).toEqual([]);
    r.decoder.ready = true;
    await settle(50);
    stopFilming();
    r.session.stop();
    expect(r.decoder.calls.length).toBe(1);
  });

  it('frames wider than 1920 px are scaled down before decoding (aspect kept); smaller ones are not', async () => {
    const big = rig({ video: new FakeVideo({ width: 2_560, height: 1_440 }) });
    big.session.start();
    let stopFilming = big.film();
    await settle(50);
    stopFilming();
    big.session.stop();
    expect(big.decoder.calls[0]).toEqual({ at: expect.any(Number) as number, width: 1_920, height: 1_080, bytes: 1_920 * 1_080 * 4 });

    const small = rig({ video: new FakeVideo({ width: 640, height: 480 }) });
    small.session.start();
    stopFilming = small.film();
    await settle(50);
    stopFilming();
    small.session.stop();
    expect(small.decoder.calls[0]).toMatchObject({ width: 640, height: 480 });
  });
});

describe('CameraSession: reporting texts', () => {
  it('a code held in view is reported once, then again only after the repeat window; a different code at once', async () => {
    const r = rig({ maxDecodesPerSecond: 10 });
    let text = 'mdoc:held-up';
    r.decoder.text = () => text;
    r.session.start();
    const stopFilming = r.film(100);
    await settle(7_000);
    const held = r.texts.map((t) => t.at);
    expect(r.texts.every((t) => t.text === 'mdoc:held-up')).toBe(true);
    expect(r.decoder.calls.length).toBeGreaterThan(50); // decoded ~70 times, reported 3 times
    expect(held).toHaveLength(3);
    for (let i = 1; i < held.length; i += 1) {
      const gap = (held[i] ?? 0) - (held[i - 1] ?? 0);
      expect(gap).toBeGreaterThanOrEqual(REPEAT_WINDOW_MS);
      expect(gap).toBeLessThan(REPEAT_WINDOW_MS + 150); // the first decode after the window
    }

    const before = r.texts.length;
    const shownAt = r.now();
    text = 'mdoc:another-phone';
    await settle(200);
    expect(r.texts).toHaveLength(before + 1);
    expect(r.texts.at(-1)?.text).toBe('mdoc:another-phone');
    expect((r.texts.at(-1)?.at ?? Infinity) - shownAt).toBeLessThan(150);
    stopFilming();
    r.session.stop();
  });

  it('hands the text over exactly as decoded, and frames without a code report nothing', async () => {
    const r = rig({ maxDecodesPerSecond: 10 });
    let text: string | null = null;
    r.decoder.text = () => text;
    r.session.start();
    const stopFilming = r.film(100);
    await settle(1_000);
    expect(r.decoder.calls.length).toBeGreaterThan(5);
    expect(r.texts).toEqual([]);
    text = ' mdoc:owBjMS4x\r\n';
    await settle(200);
    stopFilming();
    r.session.stop();
    expect(r.texts.map((t) => t.text)).toEqual([' mdoc:owBjMS4x\r\n']);
  });

  it('a new session reports a code the previous one already reported (the next scanning period starts afresh)', async () => {
    const media = new FakeMediaDevices();
    const first = rig({ media });
    first.decoder.text = () => 'mdoc:same';
    first.session.start();
    let stopFilming = first.film();
    await settle(300);
    stopFilming();
    first.session.stop();
    expect(first.texts).toHaveLength(1);

    const second = rig({ media });
    second.decoder.text = () => 'mdoc:same';
    second.session.start();
    stopFilming = second.film();
    await settle(300);
    stopFilming();
    second.session.stop();
    expect(second.texts).toHaveLength(1);
    expect(media.liveTracks()).toEqual([]);
  });
});
