/**
 * The UI benchmark's side inside the kiosk page: a probe installed with `context.addInitScript` (init
 * scripts run before the page's own scripts and are not subject to its CSP, so the app needs no hook of its
 * own), and the page callbacks that read what it and the app recorded.
 *
 * The probe watches `main[data-screen]` with a MutationObserver and records every screen change twice:
 * when it is in the DOM and after the next frame (requestAnimationFrame, then a message task: the frame
 * that shows it has been produced). It also notes when the Ready screen's heading is first visible, when a
 * result's portrait is drawn, and how many object URLs are alive (URL.createObjectURL/revokeObjectURL are
 * wrapped: a leak of blob: URLs would show here and not in the JS heap).
 *
 * The probe is plain JavaScript in a string: a compiled function would carry tsx's helpers into the page.
 */
import type { Page } from 'playwright-core';

export interface ScreenMark {
  readonly name: string | null;
  /** Date.now() when the screen was seen in the DOM (the same clock as the host's). */
  readonly at: number;
  /** performance.now() when seen in the DOM, and after the next frame (null until then). */
  readonly t: number;
  readonly paintedT: number | null;
  /** performance.now() when a result screen's portrait was drawn (`data-portrait-state="shown"`). */
  readonly portraitT: number | null;
}

export interface ReadyPaint {
  /** performance.now() (relative to navigation start) when Ready and its heading were visible in the DOM. */
  readonly inDomT: number;
  /** … and after the next frame. */
  readonly paintedT: number;
  /** First contentful paint of the load (any content, e.g. the "connecting" screen), for comparison. */
  readonly fcpT: number | null;
}

export interface CameraTiming {
  /** performance.now() of the first video frame of the camera session (the measure's start). */
  readonly startT: number;
  readonly durationMs: number;
}

export interface DecodeTiming {
  readonly durationMs: number;
  readonly width: number;
  readonly height: number;
  readonly found: boolean;
}

const PROBE = '__mdlKioskUiBench';

export const PAGE_PROBE_SCRIPT = `(() => {
  if (globalThis.${PROBE} !== undefined || typeof document === 'undefined') return;
  const state = { screens: [], ready: null, liveObjectUrls: 0, createdObjectUrls: 0 };
  Object.defineProperty(globalThis, '${PROBE}', { value: state });

  const live = new Set();
  const create = URL.createObjectURL.bind(URL);
  const revoke = URL.revokeObjectURL.bind(URL);
  URL.createObjectURL = (object) => {
    const url = create(object);
    live.add(url);
    state.createdObjectUrls += 1;
    state.liveObjectUrls = live.size;
    return url;
  };
  URL.revokeObjectURL = (url) => {
    live.delete(String(url));
    state.liveObjectUrls = live.size;
    revoke(url);
  };

  const afterNextFrame = (done) => requestAnimationFrame(() => {
    const channel = new MessageChannel();
    channel.port1.onmessage = () => { channel.port1.close(); done(performance.now()); };
    channel.port2.postMessage(null);
  });
  const visible = (element) => {
    const box = element.getBoundingClientRect();
    const style = getComputedStyle(element);
    return box.width > 0 && box.height > 0 && style.visibility !== 'hidden' && Number(style.opacity) > 0 && element.textContent.trim() !== '';
  };

  let last;
  let current;
  const check = () => {
    const main = document.querySelector('main[data-screen]');
    const name = main === null ? null : main.getAttribute('data-screen');
    if (name !== last) {
      last = name;
      const mark = { name, at: Date.now(), t: performance.now(), paintedT: null, portraitT: null };
      current = mark;
      state.screens.push(mark);
      if (state.screens.length > 1000) state.screens.shift();
      afterNextFrame((t) => { mark.paintedT = t; });
    }
    if (name === 'result' && current.portraitT === null && main.querySelector('[data-testid="portrait"][data-portrait-state="shown"]') !== null) {
      current.portraitT = performance.now();
    }
    if (name === 'ready' && state.ready === null) {
      const heading = main.querySelector('h1');
      if (heading !== null && visible(heading)) {
        const ready = { inDomT: performance.now(), paintedT: null };
        state.ready = ready;
        afterNextFrame((t) => { ready.paintedT = t; });
      }
    }
  };
  new MutationObserver(check).observe(document, {
    subtree: true, childList: true, characterData: true, attributes: true, attributeFilter: ['data-screen', 'data-portrait-state'],
  });
})();`;

// ---------------------------------------------------------------- page callbacks (they run in Chromium)

interface ProbeState {
  screens: ScreenMark[];
  ready: { inDomT: number; paintedT: number | null } | null;
  liveObjectUrls: number;
  createdObjectUrls: number;
}

interface PageEntry {
  readonly name: string;
  readonly entryType: string;
  readonly startTime: number;
  readonly duration: number;
  readonly detail?: unknown;
}

// The page's globals, typed for this Node project (no DOM lib; see test/support/page-globals.ts).
declare const globalThis: { [PROBE]?: ProbeState };
declare const performance: {
  readonly timeOrigin: number;
  getEntriesByName(name: string): PageEntry[];
  getEntriesByType(type: string): PageEntry[];
  clearMeasures(name?: string): void;
};

/**
 * Waits until `selector` matches, holding no handle on the element. (`page.waitForSelector` returns an
 * ElementHandle: one never disposed keeps its element alive in the page — and with it a whole detached
 * screen — which shows up as a leak of ~100 DOM nodes per verification that is the benchmark's own.)
 */
export async function waitForElement(page: Page, selector: string, timeoutMs: number): Promise<void> {
  await page.locator(selector).first().waitFor({ state: 'attached', timeout: timeoutMs });
}

/** Waits for the probe to see the Ready screen painted after the latest navigation, then reads it. */
export async function readyPaint(page: Page, timeoutMs: number): Promise<ReadyPaint> {
  const handle = await page.waitForFunction(() => typeof globalThis.__mdlKioskUiBench?.ready?.paintedT === 'number', undefined, {
    timeout: timeoutMs,
    polling: 50,
  });
  await handle.dispose();
  return page.evaluate(() => {
    const ready = globalThis.__mdlKioskUiBench?.ready;
    if (ready === null || ready === undefined || ready.paintedT === null) throw new Error('the probe saw no Ready screen');
    const fcp = performance.getEntriesByType('paint').find((e) => e.name === 'first-contentful-paint');
    return { inDomT: ready.inDomT, paintedT: ready.paintedT, fcpT: fcp?.startTime ?? null };
  });
}

/** The screen changes the probe saw since the last call (taken out of the page). */
export function takeScreenMarks(page: Page): Promise<ScreenMark[]> {
  return page.evaluate(() => globalThis.__mdlKioskUiBench?.screens.splice(0) ?? []);
}

export function objectUrls(page: Page): Promise<{ live: number; created: number }> {
  return page.evaluate(() => ({
    live: globalThis.__mdlKioskUiBench?.liveObjectUrls ?? -1,
    created: globalThis.__mdlKioskUiBench?.createdObjectUrls ?? -1,
  }));
}

/** The renderer's `mdl-kiosk:qr-decode` measures (src/renderer/qr/qr-timings.ts). */
export function decodeTimings(page: Page): Promise<DecodeTiming[]> {
  return page.evaluate(() =>
    performance.getEntriesByName('mdl-kiosk:qr-decode').map((e) => {
      const detail = (typeof e.detail === 'object' && e.detail !== null ? e.detail : {}) as {
        width?: unknown;
        height?: unknown;
        found?: unknown;
      };
      return { durationMs: e.duration, width: Number(detail.width), height: Number(detail.height), found: detail.found === true };
    }),
  );
}

/** The renderer's `mdl-kiosk:qr-camera-to-scan` measures: first video frame of a camera session → text handed over. */
export function cameraTimings(page: Page): Promise<CameraTiming[]> {
  return page.evaluate(() =>
    performance.getEntriesByName('mdl-kiosk:qr-camera-to-scan').map((e) => ({ startT: e.startTime, durationMs: e.duration })),
  );
}

/** performance.timeOrigin of the page (ms since the epoch): turns page times into the host's clock. */
export function timeOrigin(page: Page): Promise<number> {
  return page.evaluate(() => performance.timeOrigin);
}

/** How many User Timing measures the page holds (the renderer's QR timings, bounded at 500 per name). */
export function measureCount(page: Page): Promise<number> {
  return page.evaluate(() => performance.getEntriesByType('measure').length);
}

/** Drops the page's User Timing measures (at the very end: to tell their share of the heap from the rest). */
export function clearMeasures(page: Page): Promise<void> {
  return page.evaluate(() => {
    performance.clearMeasures();
  });
}
