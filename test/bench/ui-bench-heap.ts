/**
 * The kiosk page's memory as the DevTools protocol reports it, after forced garbage collection: the JS heap
 * of the page's main thread (`Runtime.getHeapUsage`: V8 heap, Blink's garbage-collected heap, array-buffer
 * backing stores), the DOM counters (`Memory.getDOMCounters`: documents, nodes, JS event listeners) and the
 * live dedicated workers (Playwright tracks them). Workers' own heaps are not included.
 */
import type { CDPSession, Page } from 'playwright-core';

export interface HeapSample {
  /** V8 heap in use, bytes. */
  readonly usedBytes: number;
  /** Blink's garbage-collected heap (DOM wrappers' C++ side), bytes. */
  readonly embedderBytes: number;
  /** Array-buffer backing stores and external strings, bytes. */
  readonly backingBytes: number;
  readonly documents: number;
  readonly nodes: number;
  readonly listeners: number;
  readonly workers: number;
}

/** Several full collections: one can leave garbage that a finaliser or a weak reference freed only then. */
const GC_ROUNDS = 3;

export async function heapSample(cdp: CDPSession, page: Page): Promise<HeapSample> {
  for (let i = 0; i < GC_ROUNDS; i++) await cdp.send('HeapProfiler.collectGarbage');
  const usage = await cdp.send('Runtime.getHeapUsage');
  const counters = await cdp.send('Memory.getDOMCounters');
  return {
    usedBytes: usage.usedSize,
    embedderBytes: usage.embedderHeapUsedSize,
    backingBytes: usage.backingStorageSize,
    documents: counters.documents,
    nodes: counters.nodes,
    listeners: counters.jsEventListeners,
    workers: page.workers().length,
  };
}

export function mb(bytes: number): number {
  return bytes / (1024 * 1024);
}

export function describeHeap(s: HeapSample): string {
  return `js heap ${mb(s.usedBytes).toFixed(2)} MB, blink heap ${mb(s.embedderBytes).toFixed(2)} MB, array buffers ${mb(s.backingBytes).toFixed(2)} MB, ${s.nodes} DOM nodes, ${s.listeners} listeners, ${s.documents} documents, ${s.workers} workers`;
}

/** Least-squares slope of y over x (MB per verification, from the samples taken during the run). */
export function slope(points: readonly (readonly [number, number])[]): number {
  const n = points.length;
  if (n < 2) return Number.NaN;
  const mx = points.reduce((s, [x]) => s + x, 0) / n;
  const my = points.reduce((s, [, y]) => s + y, 0) / n;
  let num = 0;
  let den = 0;
  for (const [x, y] of points) {
    num += (x - mx) * (y - my);
    den += (x - mx) * (x - mx);
  }
  return den === 0 ? Number.NaN : num / den;
}
