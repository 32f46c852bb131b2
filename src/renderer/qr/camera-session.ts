/**
 * One period of scanning with the camera: open it, show it in a <video>, hand frames to the decode worker
 * at a capped rate, report what the camera does, and release everything on `stop()` (every track stopped,
 * so the camera light goes off; listeners and timers removed). React-free, so CameraPreview stays small.
 */
import type { CameraState } from '../../common/kiosk-api.js';
import { classifyCameraError } from './camera-errors.js';
import type { QrDecoder } from './decoder-client.js';
import { recordCameraToScan, recordDecode } from './qr-timings.js';
import { RepeatFilter } from './scan-text.js';

/** What the session uses of a decoder (a `QrDecoder` on the screen; tests pass their own). */
export type FrameDecoder = Pick<QrDecoder, 'ready' | 'busy' | 'failed' | 'failure' | 'decode'>;

/** What the session uses of `navigator.mediaDevices` (tests pass their own). */
export type CameraDevices = Pick<MediaDevices, 'getUserMedia' | 'enumerateDevices' | 'addEventListener' | 'removeEventListener'>;

export interface CameraSessionOptions {
  readonly video: HTMLVideoElement;
  /** A camera chosen in the settings (exact), or null for the default one. */
  readonly deviceId: string | null;
  readonly maxDecodesPerSecond: number;
  /** The decoder for this session (a failed one ends the session with `error`). */
  readonly decoder: FrameDecoder;
  readonly onState: (state: CameraState, detail?: string) => void;
  /** A decoded text, exactly as the decoder produced it; repeats within a few seconds are filtered out. */
  readonly onText: (text: string) => void;
  /** The cameras; default `navigator.mediaDevices` (absent outside a secure context). */
  readonly mediaDevices?: CameraDevices;
  /** Milliseconds, for the decode cap and the repeat window; default `performance.now()`. */
  readonly now?: () => number;
  /** The scratch canvas frames are drawn on; default a detached `<canvas>`. */
  readonly createCanvas?: () => HTMLCanvasElement;
}

/** Frames wider than this are scaled down before decoding (a QR code at a counter needs no more). */
const MAX_DECODE_WIDTH = 1_920;
/** Decode failures in a row that mean the decoder is broken (one slow or failed frame is not). */
const MAX_DECODE_FAILURES = 3;
/** HTMLMediaElement.HAVE_CURRENT_DATA, spelled out so the session does not need the DOM's globals. */
const HAVE_CURRENT_DATA = 2;

/** `navigator.mediaDevices` is absent in an insecure context, although the DOM types say otherwise. */
function browserMediaDevices(): CameraDevices | undefined {
  return typeof navigator === 'undefined' ? undefined : navigator.mediaDevices;
}

function stopStream(stream: MediaStream | undefined): void {
  if (stream === undefined) return;
  for (const track of stream.getTracks()) track.stop();
}

export class CameraSession {
  readonly #options: CameraSessionOptions;
  readonly #intervalMs: number;
  readonly #media: CameraDevices | undefined;
  readonly #now: () => number;
  readonly #repeats = new RepeatFilter();
  #stopped = false;
  #stream: MediaStream | undefined;
  #track: MediaStreamTrack | undefined;
  #frameHandle: number | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #waitingForDevice = false;
  #canvas: HTMLCanvasElement | undefined;
  #context: CanvasRenderingContext2D | undefined;
  #lastGrabAt = Number.NEGATIVE_INFINITY;
  #firstFrameAt: number | undefined;
  #scanned = false;
  #failures = 0;

  constructor(options: CameraSessionOptions) {
    this.#options = options;
    const rate = Number.isFinite(options.maxDecodesPerSecond) ? Math.min(30, Math.max(1, options.maxDecodesPerSecond)) : 5;
    this.#intervalMs = 1_000 / rate;
    this.#media = options.mediaDevices ?? browserMediaDevices();
    this.#now = options.now ?? (() => performance.now());
  }

  start(): void {
    void this.#open();
  }

  stop(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#release();
    this.#stopWaitingForDevice();
    this.#repeats.reset();
    // The canvas holds the last frame's pixels: drop them.
    if (this.#canvas !== undefined) this.#canvas.width = this.#canvas.height = 0;
    this.#canvas = undefined;
    this.#context = undefined;
  }

  #report(state: CameraState, detail?: string): void {
    if (!this.#stopped) this.#options.onState(state, detail);
  }

  /** Read after an await: `stop()` may have run meanwhile (a method, so the check is not narrowed away). */
  #ended(): boolean {
    return this.#stopped;
  }

  async #open(): Promise<void> {
    if (this.#stopped) return;
    this.#report('starting');
    const media = this.#media;
    if (media === undefined) {
      // Only in an insecure context or a browser without cameras: nothing to wait for.
      this.#report('error', 'navigator.mediaDevices is unavailable (not a secure context?)');
      return;
    }
    const { deviceId } = this.#options;
    let stream: MediaStream;
    try {
      stream = await media.getUserMedia({
        audio: false,
        video: { ...(deviceId === null ? {} : { deviceId: { exact: deviceId } }), width: { ideal: 1280 }, height: { ideal: 720 } },
      });
    } catch (e) {
      if (this.#ended()) return;
      const failure = classifyCameraError(e);
      this.#report(failure.state, failure.detail);
      if (failure.state === 'missing') this.#waitForDevice();
      return;
    }
    if (this.#ended()) {
      stopStream(stream);
      return;
    }
    const track = stream.getVideoTracks()[0];
    if (track === undefined) {
      stopStream(stream);
      this.#report('missing', 'the stream has no video track');
      this.#waitForDevice();
      return;
    }
    this.#stream = stream;
    this.#track = track;
    track.addEventListener('ended', this.#onTrackEnded);
    const { video } = this.#options;
    video.muted = true;
    video.srcObject = stream;
    try {
      await video.play();
    } catch (e) {
      if (this.#ended() || this.#stream !== stream) return;
      this.#release();
      this.#report('error', `video: ${classifyCameraError(e).detail}`);
      return;
    }
    if (this.#ended() || this.#stream !== stream) return;
    this.#report('active');
    this.#scheduleFrame();
  }

  readonly #onTrackEnded = (): void => {
    if (this.#stopped) return;
    this.#release();
    this.#report('unplugged', 'the camera track ended');
    this.#waitForDevice();
  };

  /** Stops the stream and the frame loop (the session may open the camera again later). */
  #release(): void {
    if (this.#frameHandle !== undefined) this.#options.video.cancelVideoFrameCallback(this.#frameHandle);
    this.#frameHandle = undefined;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#track?.removeEventListener('ended', this.#onTrackEnded);
    this.#track = undefined;
    stopStream(this.#stream);
    this.#stream = undefined;
    const { video } = this.#options;
    video.pause();
    video.srcObject = null;
    this.#firstFrameAt = undefined;
  }

  #waitForDevice(): void {
    if (this.#stopped || this.#waitingForDevice) return;
    this.#waitingForDevice = true;
    this.#media?.addEventListener('devicechange', this.#onDeviceChange);
  }

  #stopWaitingForDevice(): void {
    if (!this.#waitingForDevice) return;
    this.#waitingForDevice = false;
    this.#media?.removeEventListener('devicechange', this.#onDeviceChange);
  }

  readonly #onDeviceChange = (): void => {
    void (async () => {
      const media = this.#media;
      if (media === undefined) return;
      let devices: MediaDeviceInfo[];
      try {
        devices = await media.enumerateDevices();
      } catch {
        return;
      }
      if (this.#stopped || !this.#waitingForDevice || this.#stream !== undefined) return;
      const { deviceId } = this.#options;
      // Without permission the ids are empty strings: any camera then counts as "back".
      const back = devices.some((d) => d.kind === 'videoinput' && (deviceId === null || d.deviceId === '' || d.deviceId === deviceId));
      if (!back) return;
      this.#stopWaitingForDevice();
      await this.#open();
    })();
  };

  #scheduleFrame(): void {
    if (this.#stopped || this.#stream === undefined) return;
    const { video } = this.#options;
    if (typeof video.requestVideoFrameCallback === 'function') {
      this.#frameHandle = video.requestVideoFrameCallback(this.#onFrame);
    } else {
      this.#timer = setTimeout(this.#onFrame, Math.min(this.#intervalMs, 100));
    }
  }

  readonly #onFrame = (): void => {
    this.#frameHandle = undefined;
    this.#timer = undefined;
    if (this.#stopped || this.#stream === undefined) return;
    const { video } = this.#options;
    const now = this.#now();
    if (video.readyState >= HAVE_CURRENT_DATA && video.videoWidth > 0) {
      this.#firstFrameAt ??= now;
      if (now - this.#lastGrabAt >= this.#intervalMs) this.#grab(now);
    }
    this.#scheduleFrame();
  };

  #grab(now: number): void {
    const { decoder } = this.#options;
    if (decoder.failed) {
      this.#release();
      this.#report('error', `decoder: ${decoder.failure ?? 'failed'}`.slice(0, 250));
      return;
    }
    if (decoder.busy || !decoder.ready) return;
    const { video } = this.#options;
    const scale = Math.min(1, MAX_DECODE_WIDTH / video.videoWidth);
    const width = Math.max(1, Math.round(video.videoWidth * scale));
    const height = Math.max(1, Math.round(video.videoHeight * scale));
    const context = this.#canvasContext(width, height);
    if (context === undefined) return;
    context.drawImage(video, 0, 0, width, height);
    const pixels = context.getImageData(0, 0, width, height).data.buffer;
    const pending = decoder.decode(pixels, width, height);
    if (pending === null) return;
    this.#lastGrabAt = now;
    const firstFrameAt = this.#firstFrameAt;
    pending.then(
      ({ text, ms }) => {
        const answeredAt = this.#now();
        recordDecode(ms, answeredAt, width, height, text !== null);
        this.#failures = 0;
        if (this.#stopped || text === null || !this.#repeats.accept(text, answeredAt)) return;
        if (!this.#scanned && firstFrameAt !== undefined) recordCameraToScan(firstFrameAt, answeredAt);
        this.#scanned = true;
        this.#options.onText(text);
      },
      (e: unknown) => {
        if (this.#stopped) return;
        this.#failures += 1;
        if (this.#failures < MAX_DECODE_FAILURES) return;
        this.#release();
        this.#report('error', `decoder: ${e instanceof Error ? e.message : 'failed'}`.slice(0, 250));
      },
    );
  }

  #canvasContext(width: number, height: number): CanvasRenderingContext2D | undefined {
    if (this.#canvas === undefined) {
      this.#canvas = this.#options.createCanvas?.() ?? document.createElement('canvas');
      // Pixels are read back every frame: keep the canvas in CPU memory.
      this.#context = this.#canvas.getContext('2d', { willReadFrequently: true, alpha: false }) ?? undefined;
    }
    if (this.#canvas.width !== width) this.#canvas.width = width;
    if (this.#canvas.height !== height) this.#canvas.height = height;
    return this.#context;
  }
}
