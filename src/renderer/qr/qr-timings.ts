/**
 * QR timings as User Timing measures, so a benchmark driving the page (Playwright) can read them without
 * any global hook in the app:
 *
 *   performance.getEntriesByName(QR_DECODE_MEASURE)         // one per decoded frame; duration = worker decode ms,
 *                                                           //   detail = { width, height, found }
 *   performance.getEntriesByName(QR_CAMERA_TO_SCAN_MEASURE) // first video frame shown → text handed to onScan
 *
 * Only durations, frame sizes and found/not found: never the decoded text. The entries are bounded (the
 * kiosk runs for days; user timing entries are otherwise kept for the page's life).
 */

export const QR_DECODE_MEASURE = 'mdl-kiosk:qr-decode';
export const QR_CAMERA_TO_SCAN_MEASURE = 'mdl-kiosk:qr-camera-to-scan';

/** Above this many entries of one name, the oldest batch is dropped (clearMeasures clears by name only). */
const MAX_ENTRIES = 500;
const counts = new Map<string, number>();

function measure(name: string, start: number, duration: number, detail: Record<string, unknown>): void {
  const count = (counts.get(name) ?? 0) + 1;
  if (count > MAX_ENTRIES) {
    performance.clearMeasures(name);
    counts.set(name, 1);
  } else {
    counts.set(name, count);
  }
  performance.measure(name, { start, duration, detail });
}

/** One frame decoded in the worker (`ms`) and answered at `answeredAt` (performance.now()). */
export function recordDecode(ms: number, answeredAt: number, width: number, height: number, found: boolean): void {
  measure(QR_DECODE_MEASURE, Math.max(0, answeredAt - ms), ms, { width, height, found });
}

/** From the first video frame of this camera session (`firstFrameAt`) to a text handed over at `scannedAt`. */
export function recordCameraToScan(firstFrameAt: number, scannedAt: number): void {
  measure(QR_CAMERA_TO_SCAN_MEASURE, firstFrameAt, Math.max(0, scannedAt - firstFrameAt), {});
}

/** The median of `values` (NaN for none): what the benchmark reports. */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}
