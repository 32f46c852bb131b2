/**
 * What the soak watches come back after warm-up: RSS, the JS heap after a full collection (node
 * --expose-gc), open file descriptors (/proc/self/fd), event listeners on the process and on the library
 * objects the kiosk drives (noble, bleno, the PC/SC binding's context and its readers), and the active timers and sockets (`process.getActiveResourcesInfo()`, which
 * lists what keeps the event loop alive: unref'd timers are not in it).
 *
 * Samples are taken with the kiosk idle and ready; the growth is reported from an early baseline, and a
 * least-squares slope per 1,000 verifications over the samples after warm-up tells a leak (growing with
 * the work done) from a one-off step (a cache filled once, JIT code).
 */
import type { EventEmitter } from 'node:events';
import { readdirSync } from 'node:fs';

export interface ResourceSample {
  /** Verifications finished when the sample was taken. */
  readonly runs: number;
  readonly rssMb: number;
  readonly heapMb: number;
  readonly fds: number;
  readonly listeners: number;
  readonly timers: number;
  readonly sockets: number;
}

export const METRICS = ['rssMb', 'heapMb', 'fds', 'listeners', 'timers', 'sockets'] as const;
export type Metric = (typeof METRICS)[number];

const MB = 1024 * 1024;

/** What a listener count needs of an emitter (the process, noble, bleno, the PC/SC binding's objects). */
export type EventEmitterLike = Pick<EventEmitter, 'eventNames' | 'listenerCount'>;

/** Every listener on an emitter (or the process), over all its events. */
export function listenerTotal(emitter: EventEmitterLike): number {
  return emitter.eventNames().reduce((sum, name) => sum + emitter.listenerCount(name), 0);
}

function openFds(): number {
  try {
    return readdirSync('/proc/self/fd').length;
  } catch {
    return Number.NaN; // not Linux: reported as NaN rather than guessed
  }
}

/** Collects twice: the first pass may only schedule finalisers whose objects the second frees. */
function collect(): boolean {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (typeof gc !== 'function') return false;
  gc();
  gc();
  return true;
}

export function gcAvailable(): boolean {
  return typeof (globalThis as { gc?: unknown }).gc === 'function';
}

function isSocket(resource: string): boolean {
  return /^(TCP|Pipe|TTY|UDP)/.test(resource) && resource !== 'TTYWrap';
}

/** Open sockets of the process now (TCP, pipes, UDP; not the terminal). */
export function activeSockets(): number {
  return process.getActiveResourcesInfo().filter(isSocket).length;
}

/**
 * One sample now; `emitters` are the objects whose listeners are counted (besides the process), and
 * `moreListeners` those counted elsewhere (listener sets of objects that are not emitters).
 */
export function sampleResources(runs: number, emitters: readonly EventEmitterLike[], moreListeners = 0): ResourceSample {
  collect();
  const resources = process.getActiveResourcesInfo();
  return {
    runs,
    rssMb: process.memoryUsage.rss() / MB,
    heapMb: process.memoryUsage().heapUsed / MB,
    fds: openFds(),
    listeners: listenerTotal(process) + emitters.reduce((sum, e) => sum + listenerTotal(e), 0) + moreListeners,
    timers: resources.filter((r) => r === 'Timeout').length,
    sockets: resources.filter(isSocket).length,
  };
}

/** Least-squares slope of `y` over `x`; NaN with fewer than two distinct x. */
export function slope(points: readonly (readonly [number, number])[]): number {
  const n = points.length;
  if (n < 2) return Number.NaN;
  const mx = points.reduce((s, [x]) => s + x, 0) / n;
  const my = points.reduce((s, [, y]) => s + y, 0) / n;
  let sxx = 0;
  let sxy = 0;
  for (const [x, y] of points) {
    sxx += (x - mx) ** 2;
    sxy += (x - mx) * (y - my);
  }
  return sxx === 0 ? Number.NaN : sxy / sxx;
}

/**
 * Theil–Sen slope (the median of the slopes between every pair of points): a few samples taken while the
 * process held something for a moment do not tilt it, where they would tilt a least-squares line.
 */
export function robustSlope(points: readonly (readonly [number, number])[]): number {
  const slopes: number[] = [];
  for (let i = 0; i < points.length; i++) {
    for (let j = i + 1; j < points.length; j++) {
      const [x1, y1] = points[i] as readonly [number, number];
      const [x2, y2] = points[j] as readonly [number, number];
      if (x2 !== x1) slopes.push((y2 - y1) / (x2 - x1));
    }
  }
  if (slopes.length === 0) return Number.NaN;
  slopes.sort((a, b) => a - b);
  const mid = Math.floor(slopes.length / 2);
  return slopes.length % 2 === 1 ? (slopes[mid] ?? Number.NaN) : ((slopes[mid - 1] ?? 0) + (slopes[mid] ?? 0)) / 2;
}

/**
 * Thresholds for a leak. RSS and heap: the slope after warm-up, per 1,000 verifications (a step that
 * stops growing is not a leak). File descriptors, listeners, timers and sockets must come back: the median
 * of the last few idle samples against the median of the first few after warm-up (a median, because the
 * process may hold one more for a moment when a sample is taken: the socket of a session being replaced,
 * a simulator's timer still running), and over a long soak their slope must stay near zero.
 */
export interface LeakBounds {
  readonly rssMbPer1000: number;
  readonly heapMbPer1000: number;
  readonly fds: number;
  readonly listeners: number;
  readonly timers: number;
  readonly sockets: number;
  /** Counts (fds, listeners, timers, sockets) per 1,000 verifications after warm-up. */
  readonly countPer1000: number;
}

export const DEFAULT_LEAK_BOUNDS: LeakBounds = {
  rssMbPer1000: 20,
  heapMbPer1000: 5,
  fds: 2,
  listeners: 2,
  // The timers are the whole process's: the mock backend's and the virtual phone's come and go with the runs.
  timers: 4,
  sockets: 2,
  countPer1000: 5,
};

export interface ResourceReport {
  /** The early baseline (the first sample, a few runs in). */
  readonly baseline: ResourceSample | undefined;
  readonly last: ResourceSample | undefined;
  /** Last − early baseline, per metric (the RESULT line's figures). */
  readonly growth: Readonly<Record<Metric, number>>;
  /** Per 1,000 verifications over the samples after warm-up (least squares for MB, Theil–Sen for counts). */
  readonly slopePer1000: Readonly<Record<Metric, number>>;
  /**
   * The last samples against the first after warm-up (what the count bounds judge): the lowest of each for
   * counts, the median for megabytes.
   */
  readonly settledGrowth: Readonly<Record<Metric, number>>;
  /** Post-warm-up samples the figures rest on. */
  readonly samples: number;
  readonly problems: readonly string[];
}

const COUNT_METRICS = ['fds', 'listeners', 'timers', 'sockets'] as const;
const MEDIAN_OF = 5;

function lowest(values: readonly number[]): number {
  return values.length === 0 ? Number.NaN : Math.min(...values);
}

function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

/**
 * Keeps the early baseline (the first sample), the last sample, and the samples after `warmupRuns` for
 * the slopes and medians (bounded: thinned to every other point when full, so a night-long soak keeps a
 * fixed amount; the first few after warm-up are kept apart so thinning never moves that reference).
 */
export class ResourceTracker {
  private early: ResourceSample | undefined;
  private latest: ResourceSample | undefined;
  private readonly head: ResourceSample[] = [];
  private points: ResourceSample[] = [];
  private readonly tail: ResourceSample[] = [];
  private stride = 1;
  private seen = 0;

  constructor(
    private readonly warmupRuns: number,
    private readonly maxPoints = 512,
  ) {}

  add(sample: ResourceSample): void {
    this.early ??= sample;
    this.latest = sample;
    if (sample.runs < this.warmupRuns) return;
    if (this.head.length < MEDIAN_OF) this.head.push(sample);
    this.tail.push(sample);
    if (this.tail.length > MEDIAN_OF) this.tail.shift();
    if (this.seen++ % this.stride !== 0) return;
    this.points.push(sample);
    if (this.points.length >= this.maxPoints) {
      this.points = this.points.filter((_, i) => i % 2 === 0);
      this.stride *= 2;
    }
  }

  get baseline(): ResourceSample | undefined {
    return this.early;
  }

  report(bounds: LeakBounds): ResourceReport {
    const growth = {} as Record<Metric, number>;
    const slopes = {} as Record<Metric, number>;
    const settled = {} as Record<Metric, number>;
    for (const metric of METRICS) {
      growth[metric] = this.latest && this.early ? this.latest[metric] - this.early[metric] : Number.NaN;
      const series = this.points.map((p) => [p.runs, p[metric]] as const);
      slopes[metric] = ((COUNT_METRICS as readonly Metric[]).includes(metric) ? robustSlope(series) : slope(series)) * 1_000;
      // Counts: the floor. Timers, sockets and listeners of work in flight (the mock backend's, the phone's)
      // come and go above it; a leaked one raises it. A median still moves with how busy the sampled moments were.
      const isCount = (COUNT_METRICS as readonly Metric[]).includes(metric);
      const level = isCount ? lowest : median;
      // A count's reference is never below the first idle sample: a head window that dipped under it (a fault
      // that left the kiosk without its pre-warmed session's timers) is not its floor, and a leak rises above both.
      const head = level(this.head.map((p) => p[metric]));
      const reference = isCount && this.early !== undefined ? Math.max(head, this.early[metric]) : head;
      settled[metric] = level(this.tail.map((p) => p[metric])) - reference;
    }
    const problems: string[] = [];
    // A slope from a handful of points over a few hundred runs is noise: judged only with enough behind it.
    const span = (this.points.at(-1)?.runs ?? 0) - (this.points[0]?.runs ?? 0);
    const enough = this.points.length >= 8 && span >= 200;
    // The medians compare two windows that must not overlap.
    const apart = this.seen >= 2 * MEDIAN_OF;
    if (enough && slopes.rssMb > bounds.rssMbPer1000)
      problems.push(`RSS grows ${slopes.rssMb.toFixed(1)} MB per 1,000 verifications after warm-up (bound ${bounds.rssMbPer1000})`);
    if (enough && slopes.heapMb > bounds.heapMbPer1000)
      problems.push(`heap grows ${slopes.heapMb.toFixed(2)} MB per 1,000 verifications after warm-up (bound ${bounds.heapMbPer1000})`);
    for (const metric of COUNT_METRICS) {
      if (enough && slopes[metric] > bounds.countPer1000)
        problems.push(`${metric} grow ${slopes[metric].toFixed(1)} per 1,000 verifications after warm-up (bound ${bounds.countPer1000})`);
      if (apart && settled[metric] > bounds[metric])
        problems.push(
          `${metric}: +${settled[metric]} when idle after warm-up (lowest of the last ${MEDIAN_OF} samples against the lowest of the first ${MEDIAN_OF}, or the first idle sample if higher; bound ${bounds[metric]})`,
        );
    }
    return {
      baseline: this.early,
      last: this.latest,
      growth,
      slopePer1000: slopes,
      settledGrowth: settled,
      samples: this.points.length,
      problems,
    };
  }
}
