/**
 * The browser end-to-end harness: the whole kiosk in this process — the embedded mock backend, a virtual
 * counter (virtual NFC reader, Bluetooth and phone), the `KioskService` in test mode with short timeouts,
 * the browser host — and Debian's Chromium on the host's page, with a fresh profile and a fake camera.
 *
 * It records every request the browser makes (none may leave 127.0.0.1), the page's console, and the
 * kiosk's log, and stops everything by itself. Chromium missing is an error, never a skip.
 */
import { forkVoiceLauncher } from '../../src/devices/speech/voice-launcher.js';
import { expect } from 'vitest';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { QrScannedResult, dispatchIntent, type ScreenState } from '../../src/common/kiosk-api.js';
import type { KioskPhase } from '../../src/common/kiosk-view.js';
import { startHost, type RunningHost } from '../../src/host/server.js';
import type { VerificationReport } from '../../src/kiosk/kiosk.js';
import { createLogger } from '../../src/platform/log.js';
import { applySecurityHeaders } from '../../src/service/security-headers.js';
import { serveStatic } from '../../src/service/static-files.js';
import {
  createVirtualCounter,
  getTestPki,
  startPhonePage,
  type EmbeddedBackend,
  type PhonePage,
  type PhoneSettingsChange,
  type VirtualCounter,
} from '../../src/qa/index.js';
import { KioskService } from '../../src/service/kiosk-service.js';
import { hashPin } from '../../src/service/staff-pin.js';
import { writeBlankY4m, writeQrY4m } from './fake-camera.js';
import { LogCapture } from './harness.js';
import type { PageCaches, PageCanvas, PageDocument, PageIndexedDb, PageStorage } from './page-globals.js';

export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const CHROMIUM = '/usr/bin/chromium';
export const RENDERER_DIR = join(REPO, 'dist', 'renderer');
/** Every screen of every run (CI keeps the folder as an artifact; gitignored). */
export const SCREENSHOT_DIR = join(REPO, 'artifacts', 'screenshots');
/** The main screens, for the README. */
export const DOCS_SCREENS_DIR = join(REPO, 'docs', 'screens');
export const VIEWPORT = { width: 1280, height: 800 } as const;
export const TEST_PIN = '246810';

/** The test holder's data (DEFAULT_HOLDER_DATA of the virtual wallet): none of it may outlive the outcome. */
export const HOLDER_NEEDLES = ['Doe', 'Jane', 'D1234567'] as const;

/** Short enough for tests, long enough for real crypto in Chromium on 2 busy cores. */
export const BROWSER_E2E_TIMEOUTS = {
  backendReplyMs: 10_000,
  awaitCardMs: 15_000,
  bleSetupMs: 8_000,
  bleIdleMs: 12_000,
  armWaitMs: 10_000,
  resultDisplayMs: 60_000,
  errorDisplayMs: 60_000,
  removePhoneMs: 3_000,
};

export type CameraFeed = 'qr' | 'blank' | 'none';

export interface BrowserStackOptions {
  /** The virtual phone's settings at start. */
  readonly phone?: PhoneSettingsChange;
  /** `qr`: the fake camera films the phone's engagement QR (presented before Chromium starts); `blank`: an
   *  empty counter; `none`: no camera at all. Default `blank`. */
  readonly camera?: CameraFeed;
  /** The fake camera's frame size (default 640×480). */
  readonly cameraSize?: { readonly width: number; readonly height: number };
  /** Config overrides (deep-merged over the test timeouts). */
  readonly config?: Record<string, unknown>;
  /** `true` (default): the embedded backend is the demo's locked override; `false`: only its URL is given
   *  and the API key must come from the settings screen. */
  readonly backendOverride?: boolean;
  /** Staff PIN (default {@link TEST_PIN}); null: none set. */
  readonly pin?: string | null;
  readonly languageResetMs?: number;
  /** NFC reader latency per APDU, ms (keeps the NFC screen up long enough to look at). */
  readonly nfcLatencyMs?: number;
  /** Also serve the virtual phone page and open it in a second tab. */
  readonly phonePage?: boolean;
  /**
   * Start the built-in voice (eSpeak NG in its own process, as the browser host does). Off by default: it
   * costs about a second of CPU at each start, and only the speech tests listen.
   */
  readonly voice?: boolean;
}

export interface BrowserStack {
  readonly counter: VirtualCounter;
  readonly backend: EmbeddedBackend;
  readonly service: KioskService;
  readonly host: RunningHost;
  readonly context: BrowserContext;
  readonly page: Page;
  /** The virtual phone page's tab (option `phonePage`). */
  readonly phone: Page | undefined;
  readonly phonePage: PhonePage | undefined;
  readonly pin: string | null;
  /** The engagement the fake camera films (camera `qr`). */
  readonly cameraQr: string | undefined;
  /** The `.y4m` file Chromium's fake camera plays (absent with camera `none`). Chromium reads it again each
   *  time the page opens the camera, so replacing it (write elsewhere, then rename over it) while the camera
   *  is off changes what the next camera session films. */
  readonly cameraFile: string | undefined;
  readonly logs: LogCapture;
  readonly consoleMessages: string[];
  readonly requests: string[];
  readonly reports: VerificationReport[];
  /** Portraits (base64) the backend disclosed in this run, to search for afterwards. */
  readonly portraits: string[];
  /** The `data-screen` of the app root now. */
  screen(): Promise<string | null>;
  waitForScreen(names: string | readonly string[], timeoutMs?: number): Promise<string>;
  waitForPhase(phase: KioskPhase, timeoutMs?: number): Promise<ScreenState>;
  /**
   * Saves a 1280×800 screenshot as artifacts/screenshots/<name>.png, and docs/screens/<name>.png when `docs`
   * and UPDATE_DOCS_SCREENS=1 (the README's pictures are refreshed on purpose, not by every test run).
   */
  shot(name: string, options?: { readonly docs?: boolean }): Promise<void>;
  /** Requests that went anywhere but loopback (data:/blob: are local). */
  nonLocalRequests(): string[];
  stop(): Promise<void>;
}

function mergeDeep(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(over)) {
    const prev = out[key];
    const both =
      typeof prev === 'object' &&
      prev !== null &&
      !Array.isArray(prev) &&
      typeof value === 'object' &&
      value !== null &&
      !Array.isArray(value);
    out[key] = both ? mergeDeep(prev as Record<string, unknown>, value as Record<string, unknown>) : value;
  }
  return out;
}

/** Throws with what to do when the browser or the built screen is missing (a failure, never a skip). */
export function assertBrowserPrerequisites(): void {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `Chromium is missing at ${CHROMIUM}: install it (apt-get install chromium). The browser tests fail without it; they are never skipped.`,
    );
  }
  if (!existsSync(join(RENDERER_DIR, 'index.html'))) {
    throw new Error(
      `the kiosk screen is not built (${RENDERER_DIR}/index.html): run \`npm run build:renderer\` (npm test and npm run test:e2e do it first)`,
    );
  }
}

export async function startBrowserStack(options: BrowserStackOptions = {}): Promise<BrowserStack> {
  assertBrowserPrerequisites();
  const cleanups: (() => Promise<void>)[] = [];
  const cleanup = async (): Promise<void> => {
    for (const step of cleanups.reverse()) await step().catch(() => undefined);
  };
  try {
    const counter = await createVirtualCounter({
      pki: await getTestPki(),
      phoneEndTimeoutMs: 2_000,
      backend: true,
      ...(options.nfcLatencyMs === undefined ? {} : { nfc: { latencyMs: options.nfcLatencyMs } }),
    });
    cleanups.push(() => counter.stop());
    if (options.phone) await counter.reconfigurePhone(options.phone);
    const backend = counter.backend;
    if (backend === undefined) throw new Error('the virtual counter started no backend');

    const logs = new LogCapture();
    const dataDir = await mkdtemp(join(tmpdir(), 'mdl-kiosk-e2e-data-'));
    cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
    const pin = options.pin === undefined ? TEST_PIN : options.pin;
    const overrides = mergeDeep(
      {
        timeouts: BROWSER_E2E_TIMEOUTS,
        session: { offlineBackoffMinMs: 250, offlineBackoffMaxMs: 1_000 },
        log: { level: 'debug' },
        ...(pin === null ? {} : { staff: { pinHash: await hashPin(pin, { N: 2 ** 12, r: 8, p: 1 }) } }),
        ...(options.backendOverride === false ? { backend: { baseUrl: backend.url } } : {}),
      },
      options.config ?? {},
    );
    const service = new KioskService({
      devices: () => Promise.resolve({ ports: counter.rig.devices, qr: counter.rig.qr, close: () => Promise.resolve() }),
      dataDir,
      env: {},
      overrides,
      ...(options.backendOverride === false ? {} : { backendOverride: { baseUrl: backend.url, apiKey: backend.apiKey } }),
      testMode: true,
      logDestination: logs,
      ...(options.voice === true ? { voiceLauncher: forkVoiceLauncher() } : {}),
      ...(options.languageResetMs === undefined ? {} : { languageResetMs: options.languageResetMs }),
    });
    const reports: VerificationReport[] = [];
    const portraits: string[] = [];
    service.onVerification((report) => {
      reports.push(report);
      for (const elements of Object.values(report.outcome?.response ?? {})) {
        const portrait = elements.portrait;
        if (typeof portrait === 'string') portraits.push(portrait);
      }
    });
    await service.start();
    cleanups.push(() => service.stop());
    const host = await startHost({
      service,
      port: 0,
      rendererDir: RENDERER_DIR,
      log: createLogger({ level: 'debug', name: 'e2e-host' }, logs),
    });
    cleanups.push(() => host.stop());

    const camera = options.camera ?? 'blank';
    const mediaDir = await mkdtemp(join(tmpdir(), 'mdl-kiosk-e2e-camera-'));
    cleanups.push(() => rm(mediaDir, { recursive: true, force: true }));
    let cameraQr: string | undefined;
    let cameraFile: string | undefined;
    const cameraArgs: string[] = [];
    if (camera !== 'none') {
      const file = join(mediaDir, 'camera.y4m');
      cameraFile = file;
      const size = options.cameraSize ?? { width: 640, height: 480 };
      if (camera === 'qr') {
        cameraQr = counter.presentQr();
        writeQrY4m(file, cameraQr, { width: size.width, height: size.height, frames: 3 });
      } else {
        writeBlankY4m(file, { width: size.width, height: size.height, frames: 2 });
      }
      cameraArgs.push('--use-fake-ui-for-media-stream', '--use-fake-device-for-media-stream', `--use-file-for-fake-video-capture=${file}`);
    }

    const profileDir = await mkdtemp(join(tmpdir(), 'mdl-kiosk-e2e-chromium-'));
    cleanups.push(() => rm(profileDir, { recursive: true, force: true }));
    const context = await chromium.launchPersistentContext(profileDir, {
      executablePath: CHROMIUM,
      headless: true,
      viewport: VIEWPORT,
      locale: 'en-US',
      args: [
        // As the kiosk window (src/main/window.ts autoplayPolicy): speech may start without a touch.
        '--autoplay-policy=no-user-gesture-required',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        ...cameraArgs,
      ],
    });
    cleanups.push(() => context.close());
    const requests: string[] = [];
    const consoleMessages: string[] = [];
    context.on('request', (request) => requests.push(request.url()));
    const page = context.pages()[0] ?? (await context.newPage());
    page.on('console', (message) => consoleMessages.push(`${message.type()}: ${message.text()}`));
    page.on('pageerror', (error) => consoleMessages.push(`pageerror: ${error.message}`));
    page.on('worker', (worker) => worker.on('console', (message) => consoleMessages.push(`worker ${message.type()}: ${message.text()}`)));
    await page.goto(host.url);

    let phonePage: PhonePage | undefined;
    let phone: Page | undefined;
    if (options.phonePage === true) {
      phonePage = await startPhonePage({
        counter,
        scan: async (text) =>
          QrScannedResult.parse(await dispatchIntent(service, 'qrScanned', { text, source: 'scanner' }, () => service.staffUnlocked())),
        kioskPhase: () => service.state().view.phase,
      });
      const started = phonePage;
      cleanups.push(() => started.stop());
      phone = await context.newPage();
      phone.on('console', (message) => consoleMessages.push(`phone page ${message.type()}: ${message.text()}`));
      phone.on('pageerror', (error) => consoleMessages.push(`phone page error: ${error.message}`));
      await phone.goto(phonePage.url);
    }

    const screen = (): Promise<string | null> =>
      page
        .locator('main[data-screen]')
        .first()
        .getAttribute('data-screen', { timeout: 2_000 })
        .catch(() => null);
    const stack: BrowserStack = {
      counter,
      backend,
      service,
      host,
      context,
      page,
      phone,
      phonePage,
      pin,
      cameraQr,
      cameraFile,
      logs,
      consoleMessages,
      requests,
      reports,
      portraits,
      screen,
      async waitForScreen(names, timeoutMs = 20_000) {
        const list = typeof names === 'string' ? [names] : names;
        const selector = list.map((n) => `main[data-screen="${n}"]`).join(', ');
        try {
          await page.waitForSelector(selector, { timeout: timeoutMs });
        } catch {
          throw new Error(
            `the screen did not become ${list.join(' or ')} within ${timeoutMs} ms; it shows ${(await screen()) ?? 'nothing'} (kiosk phase ${service.state().view.phase}, error ${JSON.stringify(service.state().view.error)})`,
          );
        }
        return (await screen()) ?? '';
      },
      waitForPhase(phase, timeoutMs = 20_000) {
        return new Promise<ScreenState>((done, fail) => {
          const timer = setTimeout(() => {
            unsubscribe();
            fail(new Error(`the kiosk did not reach ${phase} within ${timeoutMs} ms (it is ${service.state().view.phase})`));
          }, timeoutMs);
          // onState calls back at once with the current state: unsubscribe after it has returned.
          const unsubscribe = service.onState((state) => {
            if (state.view.phase !== phase) return;
            clearTimeout(timer);
            queueMicrotask(() => unsubscribe());
            done(state);
          });
        });
      },
      async shot(name, shotOptions = {}) {
        mkdirSync(SCREENSHOT_DIR, { recursive: true });
        const file = join(SCREENSHOT_DIR, `${name}.png`);
        // Animations would make every run's picture differ; the kiosk honours reduced motion.
        await page.emulateMedia({ reducedMotion: 'reduce' });
        await page.screenshot({ path: file, animations: 'disabled', caret: 'hide' });
        // The README's pictures change only on purpose: `UPDATE_DOCS_SCREENS=1 npm run test:e2e`.
        if (shotOptions.docs === true && process.env.UPDATE_DOCS_SCREENS === '1') {
          mkdirSync(DOCS_SCREENS_DIR, { recursive: true });
          await copyFile(file, join(DOCS_SCREENS_DIR, `${name}.png`));
        }
      },
      nonLocalRequests() {
        return requests.filter((url) => !url.startsWith('http://127.0.0.1:') && !url.startsWith('data:') && !url.startsWith('blob:'));
      },
      stop: cleanup,
    };
    return stack;
  } catch (e) {
    await cleanup();
    throw e;
  }
}

// ---------------------------------------------------------------- page checks

// Page callbacks run in Chromium: these globals exist there (see page-globals.ts for why they are declared).
declare const document: PageDocument;
declare const window: { axe?: { run(context: PageDocument, options: object): Promise<AxeResult> }; caches?: PageCaches };
declare const localStorage: PageStorage;
declare const sessionStorage: PageStorage;
declare const indexedDB: PageIndexedDb;

interface AxeResult {
  readonly violations: readonly { id: string; impact: string | null; help: string; nodes: readonly { target: readonly unknown[] }[] }[];
}

export interface AxeViolation {
  readonly id: string;
  readonly impact: string | null;
  readonly help: string;
  readonly targets: string[];
}

/** Runs axe-core on the page (its source injected through the DevTools protocol: the page's CSP stays strict). */
export async function axeViolations(page: Page): Promise<AxeViolation[]> {
  const source = readFileSync(join(REPO, 'node_modules', 'axe-core', 'axe.min.js'), 'utf8');
  await page.evaluate(source);
  return page.evaluate(async (tags) => {
    const axe = window.axe;
    if (axe === undefined) throw new Error('axe-core did not load');
    const result = await axe.run(document, { runOnly: { type: 'tag', values: tags } });
    return result.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      targets: v.nodes.map((n) => JSON.stringify(n.target)),
    }));
  }, AXE_TAGS);
}

/** WCAG 2.0–2.2 A and AA, and axe's best practices. */
export const AXE_TAGS = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa', 'best-practice'];

export interface CanvasPixels {
  readonly width: number;
  readonly height: number;
  /** Distinct colours after quantising to 4 bits per channel. */
  readonly colours: number;
  /** Share of pixels close to each probe colour (r, g, b), within `tolerance` per channel. */
  readonly shares: number[];
}

/** Reads a canvas's pixels (copied onto a 2D canvas, so any context type works) and measures them. */
export async function canvasPixels(
  page: Page,
  selector: string,
  probes: readonly (readonly [number, number, number])[],
  tolerance = 24,
): Promise<CanvasPixels> {
  return page.evaluate(
    (args) => {
      const element = document.querySelector(args.selector) as PageCanvas | null;
      if (element === null || element.tagName !== 'CANVAS') throw new Error(`${args.selector} is not a canvas`);
      const copy = document.createElement('canvas');
      copy.width = element.width;
      copy.height = element.height;
      const context = copy.getContext('2d');
      if (context === null || element.width === 0 || element.height === 0)
        return { width: element.width, height: element.height, colours: 0, shares: args.probes.map(() => 0) };
      context.drawImage(element, 0, 0);
      const { data } = context.getImageData(0, 0, copy.width, copy.height);
      const colours = new Set<number>();
      const hits = args.probes.map(() => 0);
      for (let i = 0; i < data.length; i += 4) {
        const r = data[i] ?? 0;
        const g = data[i + 1] ?? 0;
        const b = data[i + 2] ?? 0;
        colours.add(((r >> 4) << 8) | ((g >> 4) << 4) | (b >> 4));
        args.probes.forEach((p, k) => {
          if (
            Math.abs(r - (p[0] ?? 0)) <= args.tolerance &&
            Math.abs(g - (p[1] ?? 0)) <= args.tolerance &&
            Math.abs(b - (p[2] ?? 0)) <= args.tolerance
          )
            hits[k] = (hits[k] ?? 0) + 1;
        });
      }
      const pixels = data.length / 4;
      return { width: copy.width, height: copy.height, colours: colours.size, shares: hits.map((h) => h / pixels) };
    },
    { selector, probes: probes.map((p) => [...p]), tolerance },
  );
}

/** The RGB bytes (base64) of a canvas as drawn, at its own size. */
export async function canvasRgb(page: Page, selector: string): Promise<{ width: number; height: number; rgb: string }> {
  return page.evaluate((sel) => {
    const element = document.querySelector(sel) as PageCanvas | null;
    if (element === null || element.tagName !== 'CANVAS') throw new Error(`${sel} is not a canvas`);
    const copy = document.createElement('canvas');
    copy.width = element.width;
    copy.height = element.height;
    const context = copy.getContext('2d');
    if (context === null || element.width === 0 || element.height === 0) return { width: element.width, height: element.height, rgb: '' };
    context.drawImage(element, 0, 0);
    const { data } = context.getImageData(0, 0, copy.width, copy.height);
    let binary = '';
    for (let i = 0; i < data.length; i += 4) binary += String.fromCharCode(data[i] ?? 0, data[i + 1] ?? 0, data[i + 2] ?? 0);
    return { width: copy.width, height: copy.height, rgb: btoa(binary) };
  }, selector);
}

/** Colours of the virtual wallet's drawn portrait (portrait.ts): skin, background, hair. */
export const PORTRAIT_COLOURS = { skin: [232, 190, 160], background: [214, 226, 240], hair: [70, 45, 30] } as const;

/** Everything the page keeps that a later customer or a thief could read: DOM, field values, storages, IndexedDB, caches. */
export async function pageTraces(page: Page): Promise<string> {
  return page.evaluate(async () => {
    const parts: string[] = [document.documentElement.outerHTML, document.title];
    for (const field of Array.from(document.querySelectorAll('input, textarea'))) parts.push(field.value ?? '');
    for (const storage of [localStorage, sessionStorage]) {
      for (let i = 0; i < storage.length; i++) {
        const key = storage.key(i);
        if (key !== null) parts.push(key, storage.getItem(key) ?? '');
      }
    }
    parts.push(...(await indexedDB.databases()).map((d) => `indexeddb:${d.name ?? ''}`));
    if (window.caches !== undefined) parts.push(...(await window.caches.keys()).map((k) => `cache:${k}`));
    return parts.join('\n');
  });
}

/** Where each needle was found after the outcome is gone: page traces, console, the kiosk's logs. */
export async function personalDataLeft(stack: BrowserStack, needles: readonly string[]): Promise<string[]> {
  const places: [string, string][] = [
    ['page', await pageTraces(stack.page)],
    ['console', stack.consoleMessages.join('\n')],
    ['kiosk log', stack.logs.text()],
  ];
  const found: string[] = [];
  for (const needle of needles)
    for (const [where, text] of places) if (text.includes(needle)) found.push(`${JSON.stringify(needle.slice(0, 24))} in the ${where}`);
  return found;
}

/** A slice from the middle of a base64 string: long enough to be unique, aligned so it matches any copy. */
export function base64Slice(base64: string, length = 48): string {
  const start = Math.floor(base64.length / 2 / 4) * 4;
  return base64.slice(start, start + length);
}

/** Saves the screen's picture and runs axe on it: every screen a test reaches is checked the same way. */
/**
 * The end of a browser test file: stops the stack (if `beforeAll` got as far as starting it) and asserts
 * that no request of the page left 127.0.0.1.
 */
export async function stopBrowserStack(stack: BrowserStack | undefined): Promise<void> {
  if (stack === undefined) return; // beforeAll failed (and cleaned up)
  const outside = stack.nonLocalRequests();
  await stack.stop();
  expect(outside, 'requests that left 127.0.0.1').toEqual([]);
}

export async function checkScreen(stack: BrowserStack, name: string, options: { readonly docs?: boolean } = {}): Promise<void> {
  await stack.shot(name, options);
  const violations = await axeViolations(stack.page);
  if (violations.length > 0) {
    throw new Error(
      `axe: ${violations.length} violation(s) on the ${name} screen:\n${violations.map((v) => `- ${v.id} (${v.impact ?? '?'}): ${v.help} at ${v.targets.join(', ')}`).join('\n')}`,
    );
  }
}

declare const KeyboardEvent: new (type: string, init: { key: string; bubbles: boolean; cancelable: boolean }) => object;
declare const globalThis: { dispatchEvent(event: object): boolean; setTimeout(run: () => void, ms: number): void };

/**
 * A handheld scanner in keyboard-wedge mode: the text as a burst of keydown/keyup pairs a millisecond or
 * two apart, then Enter. Dispatched inside the page, because keys sent one by one over the DevTools protocol
 * arrive tens of milliseconds apart on a loaded machine — a person's pace, which the screen rightly ignores.
 */
export async function scannerTypes(page: Page, text: string): Promise<void> {
  await page.evaluate(
    async (keys) => {
      for (const [i, key] of keys.entries()) {
        for (const type of ['keydown', 'keyup'])
          globalThis.dispatchEvent(new KeyboardEvent(type, { key, bubbles: true, cancelable: true }));
        if (i % 16 === 15) await new Promise<void>((done) => globalThis.setTimeout(done, 1));
      }
    },
    [...Array.from(text), 'Enter'],
  );
}

/** The built screen (dist/renderer) served with the browser host's own headers (strict CSP, no inline script) on loopback. */
export interface BuiltScreenServer {
  readonly origin: string;
  close(): Promise<void>;
}

export async function serveBuiltScreen(): Promise<BuiltScreenServer> {
  const http = createServer((req, res) => {
    applySecurityHeaders(res, (http.address() as AddressInfo).port);
    void serveStatic(req, res, RENDERER_DIR);
  });
  await new Promise<void>((done) => http.listen(0, '127.0.0.1', done));
  return {
    origin: `http://127.0.0.1:${(http.address() as AddressInfo).port}`,
    close: () => new Promise<void>((done) => http.close(() => done())),
  };
}

export interface BuiltScreenPageOptions {
  readonly viewport: { readonly width: number; readonly height: number };
  /** Chromium's fake camera and its permission prompt answered (the QR screens). */
  readonly fakeMedia?: boolean;
  /** Reduced motion, device scale 1: what screenshots and layout checks want. */
  readonly stillScreens?: boolean;
  /** Runs before the first load: the fake kiosk, page instrumentation. */
  readonly prepare: (page: Page) => Promise<void>;
}

export interface BuiltScreenPage {
  readonly page: Page;
  readonly origin: string;
  close(): Promise<void>;
}

/** The built screen served on loopback and open in headless Chromium, on Ready. `close` stops both. */
export async function openBuiltScreen(options: BuiltScreenPageOptions): Promise<BuiltScreenPage> {
  assertBrowserPrerequisites();
  const server = await serveBuiltScreen();
  const media = options.fakeMedia ? ['--use-fake-ui-for-media-stream', '--use-fake-device-for-media-stream'] : [];
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', ...media],
  });
  const close = async (): Promise<void> => {
    await browser.close();
    await server.close();
  };
  try {
    const context = await browser.newContext({
      viewport: options.viewport,
      locale: 'en-US',
      ...(options.stillScreens ? { reducedMotion: 'reduce' as const, deviceScaleFactor: 1 } : {}),
    });
    const page = await context.newPage();
    await options.prepare(page);
    await page.goto(`${server.origin}/`);
    await page.locator('main[data-screen="ready"]').waitFor();
    return { page, origin: server.origin, close };
  } catch (e) {
    await close();
    throw e;
  }
}
