/**
 * Every screen of the kiosk, in every language, in real Chromium: each scripted state of
 * test/support/screen-fixtures.ts (and the staff screens reached through their UI) rendered by the built
 * renderer under the production CSP, then checked the same way:
 *
 * - axe-core (WCAG 2.0–2.2 A/AA and best practices): zero violations;
 * - no text wider than its box (an element's scrollWidth beyond its clientWidth), no horizontal page
 *   scroll, nothing outside the viewport sideways, and on customer screens the things a customer must see
 *   (the prompt, the verdict, the age answer, the portrait, "Next", "Try again") wholly on screen without
 *   scrolling;
 * - a screenshot in artifacts/screenshots/every-screen/<scene>.<lang>.png (kept by CI).
 *
 * Then the main customer screens again on a 1920×1080 landscape and a 1080×1920 portrait kiosk.
 *
 * One browser and one page for the whole run: the screen follows the fake kiosk's state like the real one,
 * so switching scenes is one `setState`. The fake `window.kiosk` is the preload's surface; the page is
 * served from dist/renderer with the browser host's own security headers.
 */
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ScreenState, type Language } from '../../src/common/kiosk-api.js';
import {
  AXE_TAGS,
  assertBrowserPrerequisites,
  CHROMIUM,
  REPO,
  SCREENSHOT_DIR,
  serveBuiltScreen,
  type BuiltScreenServer,
} from '../support/e2e-browser.js';
import { writeBlankY4m } from '../support/fake-camera.js';
import type { PageDocument } from '../support/page-globals.js';
import {
  FAKE_PIN,
  fixtureDiagnostics,
  fixtureSettings,
  fixtureSpeechDiagnostics,
  fixtureSpeechSettings,
  identityResult,
  installFakeKiosk,
  jpeg2000PortraitBase64,
  resetFakeStaff,
  replacedFixture,
  screenOf,
  screenState,
  setFakeCamera,
  setFakeDiagnostics,
  setFakeSettings,
  setFakeState,
  type FakeCamera,
  type FixtureName,
} from '../support/screen-fixtures.js';

const OUT_DIR = join(SCREENSHOT_DIR, 'every-screen');
const LANGUAGES: readonly Language[] = ['en', 'es', 'fr'];
const BASE_VIEWPORT = { width: 1280, height: 800 };
const KIOSK_VIEWPORTS = [
  { width: 1920, height: 1080 },
  { width: 1080, height: 1920 },
] as const;

type CustomerFixture = Exclude<FixtureName, 'disconnected' | 'ready_es' | 'staff_pin' | 'settings' | 'diagnostics'>;

interface Scene {
  readonly name: string;
  /** The `data-screen` it shows. */
  readonly screen: string;
  readonly staff: boolean;
  /** English only: before the first state the screen cannot know the kiosk's language. */
  readonly englishOnly?: boolean;
  /** Also on the 1920×1080 and 1080×1920 kiosks. */
  readonly main?: boolean;
  show(page: Page, language: Language): Promise<void>;
}

// ---------------------------------------------------------------- page helpers

declare const document: PageDocument & {
  fonts: { ready: Promise<unknown> };
  documentElement: { lang: string; scrollWidth: number; clientWidth: number };
  elementFromPoint(x: number, y: number): unknown;
};
declare const window: {
  axe?: { run(context: unknown, options: object): Promise<{ violations: AxeViolation[] }> };
  innerWidth: number;
  innerHeight: number;
  requestAnimationFrame(callback: () => void): void;
  getComputedStyle(element: unknown): { display: string; visibility: string; overflowX: string; overflowY: string; position: string };
};

interface AxeViolation {
  readonly id: string;
  readonly impact: string | null;
  readonly help: string;
  readonly nodes: readonly { readonly target: readonly unknown[]; readonly failureSummary?: string }[];
}

/** The kiosk's state with another language (every screen follows `state.language`). */
function inLanguage(state: ScreenState, language: Language): ScreenState {
  return { ...state, language };
}

async function currentScreen(page: Page): Promise<string | null> {
  return page.locator('main[data-screen]').getAttribute('data-screen');
}

/** Back to the customer screens: "Cancel" on the PIN pad; a locked staff session closes settings by itself. */
async function leaveStaff(page: Page): Promise<void> {
  if ((await currentScreen(page)) === 'staff_pin')
    await page.locator('main[data-screen="staff_pin"] .form-actions .button--secondary').click();
}

/** Shows a customer state; a Ready after Ready goes through Starting, so the camera starts afresh. */
async function showState(page: Page, state: ScreenState, screen: string, camera: FakeCamera = 'real'): Promise<void> {
  await leaveStaff(page);
  await setFakeCamera(page, camera);
  if (screen === 'ready' && (await currentScreen(page)) === 'ready') {
    await setFakeState(page, inLanguage(screenState('starting'), state.language));
    await page.locator('main[data-screen="starting"]').waitFor();
  }
  await setFakeState(page, state);
  await page.locator(`main[data-screen="${screen}"]`).waitFor();
}

function customerScene(fixture: CustomerFixture, options: { main?: boolean; name?: string; camera?: FakeCamera } = {}): Scene {
  const screen = screenOf(fixture);
  return {
    name: options.name ?? fixture,
    screen,
    staff: false,
    main: options.main ?? false,
    show: (page, language) => showState(page, inLanguage(screenState(fixture), language), screen, options.camera),
  };
}

/** A customer screen with speech always on: the badge ("Speech on · volume 80 %") beside what the screen shows. */
function speechScene(fixture: CustomerFixture): Scene {
  const screen = screenOf(fixture);
  return {
    name: `${fixture}_speech_on`,
    screen,
    staff: false,
    main: true,
    show: async (page, language) => {
      const state = inLanguage(screenState(fixture), language);
      await showState(page, { ...state, speech: { ...state.speech, mode: 'always' } }, screen);
      await page.getByTestId('speech-badge').waitFor();
    },
  };
}

/** The staff screens, reached as staff reach them: the Staff button, the PIN pad, the tabs. */
async function openStaff(page: Page, language: Language, patch: Partial<ScreenState['staff']> = {}): Promise<void> {
  await leaveStaff(page);
  const base = screenState('staff_pin');
  await setFakeState(page, { ...base, language, staff: { ...base.staff, unlocked: false, unlockedUntil: null, ...patch } });
  await page.locator('main[data-screen="ready"]').waitFor();
  await resetFakeStaff(page);
  await page.getByTestId('staff-button').click();
  await page.locator('main[data-screen="staff_pin"]').waitFor();
}

async function unlock(page: Page): Promise<void> {
  const pin = page.locator('main[data-screen="staff_pin"] input[type="password"]');
  await pin.fill(FAKE_PIN);
  await pin.press('Enter');
  await page.locator('main[data-screen="settings"]').waitFor();
  // The form is filled from getSettings: wait for it.
  await page.locator('[data-field="backendUrl"] input').waitFor();
}

async function showDiagnostics(page: Page, language: Language): Promise<void> {
  await openStaff(page, language);
  await unlock(page);
  await page.locator('.staff-nav button').nth(1).click();
  await page.locator('main[data-screen="diagnostics"]').waitFor();
  await page.getByTestId('events').waitFor();
}

let jpeg2000Portrait: string;

const SCENES: readonly Scene[] = [
  {
    name: 'disconnected',
    screen: 'disconnected',
    staff: false,
    englishOnly: true,
    // The page loads with no state at all: the first scene of the run.
    show: async (page) => {
      await page.locator('main[data-screen="disconnected"]').waitFor();
    },
  },
  customerScene('starting'),
  customerScene('connecting'),
  customerScene('offline'),
  customerScene('offline_not_answering', { main: true }),
  customerScene('config_error'),
  customerScene('config_error_gateway'),
  customerScene('cannot_verify', { main: true }),
  customerScene('ready', { main: true }),
  customerScene('ready_no_nfc'),
  speechScene('ready'),
  speechScene('result_verified'),
  customerScene('ready', { name: 'ready_camera_denied', camera: 'denied' }),
  customerScene('ready', { name: 'ready_camera_missing', camera: 'missing' }),
  {
    name: 'ready_scan_hint',
    screen: 'ready',
    staff: false,
    show: async (page, language) => {
      await showState(page, inLanguage(screenState('ready'), language), 'ready');
      // A handheld scanner types a QR that is not an mdoc: engagement (a fast burst ended by Enter).
      await page.evaluate(
        (keys) => {
          const target = globalThis as unknown as { dispatchEvent(event: object): boolean };
          const Keyboard = (globalThis as unknown as { KeyboardEvent: new (type: string, init: object) => object }).KeyboardEvent;
          for (const key of keys)
            for (const type of ['keydown', 'keyup']) target.dispatchEvent(new Keyboard(type, { key, bubbles: true, cancelable: true }));
        },
        [...Array.from('https://example.com/not-a-licence'), 'Enter'],
      );
      await page.getByTestId('scan-hint').waitFor();
    },
  },
  customerScene('engaging_nfc'),
  customerScene('engaging_qr'),
  customerScene('awaiting_card', { main: true }),
  customerScene('ble_connecting'),
  customerScene('transferring_approve', { main: true }),
  customerScene('transferring_receiving'),
  customerScene('result_verified'),
  customerScene('result_age_no', { main: true }),
  customerScene('result_age_unknown'),
  customerScene('result_identity', { main: true }),
  {
    name: 'result_jpeg2000',
    screen: 'result',
    staff: false,
    show: (page, language) =>
      showState(page, inLanguage(identityResult(screenState('result_verified'), Date.now(), jpeg2000Portrait), language), 'result'),
  },
  customerScene('result_portrait_undecodable'),
  customerScene('result_rejected'),
  customerScene('result_rejected_reasons', { main: true }),
  customerScene('result_undetermined'),
  customerScene('result_declined', { main: true }),
  customerScene('result_identity_missing'),
  customerScene('result_hostile'),
  customerScene('result_replaced', { main: true }),
  customerScene('error', { main: true }),
  customerScene('error_not_answering', { main: true }),
  customerScene('error_timeout'),
  customerScene('error_backend'),
  customerScene('error_unknown'),
  customerScene('remove_phone'),
  customerScene('remove_to_retry'),
  customerScene('stopped'),
  { name: 'staff_pin', screen: 'staff_pin', staff: true, show: (page, language) => openStaff(page, language) },
  {
    name: 'staff_pin_wrong',
    screen: 'staff_pin',
    staff: true,
    show: async (page, language) => {
      await openStaff(page, language);
      const pin = page.locator('main[data-screen="staff_pin"] input[type="password"]');
      await pin.fill('0000');
      await pin.press('Enter');
      await page.locator('.form-message--problem').waitFor();
    },
  },
  {
    name: 'staff_pin_locked_out',
    screen: 'staff_pin',
    staff: true,
    show: async (page, language) => {
      await openStaff(page, language, { lockedOutUntil: Date.now() + 300_000 });
      await page.locator('.form-message--problem').waitFor();
    },
  },
  {
    name: 'staff_pin_no_pin',
    screen: 'staff_pin',
    staff: true,
    show: async (page, language) => {
      await openStaff(page, language, { pinConfigured: false });
      await page.locator('.form-message--problem').waitFor();
    },
  },
  {
    name: 'settings',
    screen: 'settings',
    staff: true,
    show: async (page, language) => {
      await setFakeSettings(page, fixtureSettings());
      await openStaff(page, language);
      await unlock(page);
    },
  },
  {
    name: 'settings_errors',
    screen: 'settings',
    staff: true,
    show: async (page, language) => {
      // Nothing locked by the environment, so staff can type (and get wrong) every field.
      await setFakeSettings(page, { ...fixtureSettings(), locked: [] });
      await openStaff(page, language);
      await unlock(page);
      await page.locator('[data-field="timeouts.resultDisplayMs"] input').fill('1');
      await page.locator('[data-field="timeouts.errorDisplayMs"] input').fill('99999');
      await page.getByTestId('settings-save').click();
      await expect.poll(() => page.getByTestId('field-error').count()).toBe(2);
    },
  },
  {
    // A customer's verification starts while staff are in Settings, after the next customer replaced an outcome.
    name: 'settings_counter_activity',
    screen: 'settings',
    staff: true,
    main: true,
    show: async (page, language) => {
      await setFakeSettings(page, fixtureSettings());
      await openStaff(page, language);
      await unlock(page);
      const unlocked = screenState('settings');
      const running = screenState('transferring_approve');
      await setFakeState(page, { ...unlocked, language, view: running.view, replaced: replacedFixture(Date.now()) });
      await page.getByTestId('counter-activity').waitFor();
      await page.getByTestId('replaced-outcome').waitFor();
    },
  },
  {
    // The Speech section with staff values and two keys locked by the managed file (issue 32).
    name: 'settings_speech',
    screen: 'settings',
    staff: true,
    show: async (page, language) => {
      await setFakeSettings(page, fixtureSpeechSettings());
      await openStaff(page, language);
      await unlock(page);
      await page.getByTestId('speech-keys').scrollIntoViewIfNeeded();
    },
  },
  { name: 'diagnostics', screen: 'diagnostics', staff: true, show: showDiagnostics },
  {
    // The screen's speech report: a headset that did not play, no Spanish OS voice (issue 32).
    name: 'diagnostics_speech',
    screen: 'diagnostics',
    staff: true,
    show: async (page, language) => {
      await setFakeDiagnostics(page, fixtureSpeechDiagnostics());
      await showDiagnostics(page, language);
      await page.getByTestId('speech-card').scrollIntoViewIfNeeded();
      await setFakeDiagnostics(page, fixtureDiagnostics());
    },
  },
  {
    name: 'diagnostics_self_test',
    screen: 'diagnostics',
    staff: true,
    show: async (page, language) => {
      await showDiagnostics(page, language);
      await page.getByTestId('self-test').click();
      await page.getByTestId('self-test-results').waitFor();
    },
  },
];

// ---------------------------------------------------------------- checks

/** Settled: fonts loaded, no portrait still decoding, the camera started or failed, two frames drawn. */
async function settle(page: Page, language: Language): Promise<void> {
  await page.waitForFunction(
    (lang) => {
      if (document.documentElement.lang !== lang) return false;
      if (document.querySelector('[data-portrait-state="loading"]') !== null) return false;
      if (document.querySelector('[data-camera-state="starting"]') !== null) return false;
      return true;
    },
    language,
    { timeout: 15_000 },
  );
  await page.evaluate(async () => {
    await document.fonts.ready;
    await new Promise<void>((done) => window.requestAnimationFrame(() => window.requestAnimationFrame(done)));
  });
}

let axeSource = '';

async function axeProblems(page: Page): Promise<string[]> {
  const loaded = await page.evaluate(() => window.axe !== undefined);
  // Injected through the DevTools protocol: the page's CSP stays as strict as in production.
  if (!loaded) await page.evaluate(axeSource);
  const violations = await page.evaluate(async (tags) => {
    const axe = window.axe;
    if (axe === undefined) throw new Error('axe-core did not load');
    const result = await axe.run(document, { runOnly: { type: 'tag', values: tags }, resultTypes: ['violations'] });
    return result.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      nodes: v.nodes.map((n) => ({ target: n.target, failureSummary: n.failureSummary ?? '' })),
    }));
  }, AXE_TAGS);
  return violations.flatMap((v) =>
    v.nodes
      .slice(0, 5)
      .map(
        (n) =>
          `axe ${v.id} (${v.impact ?? '?'}): ${v.help} — ${JSON.stringify(n.target)}${n.failureSummary ? `: ${n.failureSummary.replace(/\s+/g, ' ').slice(0, 240)}` : ''}`,
      ),
  );
}

/**
 * Layout problems: text wider than its box, a page that scrolls sideways, anything off the viewport
 * sideways, and (customer screens) the essentials not wholly on screen.
 */
async function layoutProblems(page: Page, customer: boolean): Promise<string[]> {
  return page.evaluate((isCustomer) => {
    type Box = { left: number; right: number; top: number; bottom: number; width: number; height: number };
    type El = {
      tagName: string;
      className: unknown;
      id: string;
      textContent: string | null;
      scrollWidth: number;
      clientWidth: number;
      scrollHeight: number;
      clientHeight: number;
      parentElement: El | null;
      getAttribute(name: string): string | null;
      getBoundingClientRect(): Box;
      closest(selector: string): El | null;
    };
    const all = (selector: string): El[] => Array.from(document.querySelectorAll(selector) as unknown as ArrayLike<El>);
    const describe = (el: El): string => {
      const cls = typeof el.className === 'string' && el.className !== '' ? `.${el.className.trim().split(/\s+/).join('.')}` : '';
      const test = el.getAttribute('data-testid');
      const text = (el.textContent ?? '').replace(/\s+/g, ' ').trim().slice(0, 50);
      return `<${el.tagName.toLowerCase()}${cls}${test ? ` data-testid=${test}` : ''}> "${text}"`;
    };
    const shown = (el: El): boolean => {
      const style = window.getComputedStyle(el);
      if (style.display === 'none' || style.visibility === 'hidden') return false;
      const box = el.getBoundingClientRect();
      return box.width > 0 && box.height > 0;
    };
    const skip = (el: El): boolean =>
      el.closest('.sr-only') !== null || ['SVG', 'PATH', 'VIDEO', 'CANVAS', 'OPTION'].includes(el.tagName.toUpperCase());
    const problems: string[] = [];
    const vw = window.innerWidth;
    const vh = window.innerHeight;
    if (document.documentElement.scrollWidth > document.documentElement.clientWidth + 1) {
      problems.push(
        `the page scrolls sideways (${document.documentElement.scrollWidth} px wide in a ${document.documentElement.clientWidth} px window)`,
      );
    }
    // The innermost offender of each kind says where the problem is; its ancestors only repeat it.
    const overflowing: El[] = [];
    const offside: El[] = [];
    for (const el of all('.app *')) {
      if (skip(el) || !shown(el)) continue;
      const style = window.getComputedStyle(el);
      if (el.clientWidth > 0 && el.scrollWidth > el.clientWidth + 1 && style.display !== 'inline') overflowing.push(el);
      const box = el.getBoundingClientRect();
      if (box.left < -1 || box.right > vw + 1) offside.push(el);
    }
    const innermost = (list: El[]): El[] => list.filter((el) => !list.some((other) => other !== el && isInside(other, el)));
    function isInside(inner: El, outer: El): boolean {
      for (let at = inner.parentElement; at !== null; at = at.parentElement) if (at === outer) return true;
      return false;
    }
    for (const el of innermost(overflowing))
      problems.push(`overflows its box sideways by ${el.scrollWidth - el.clientWidth} px: ${describe(el)}`);
    for (const el of innermost(offside)) {
      const box = el.getBoundingClientRect();
      problems.push(`off the viewport sideways (${Math.round(box.left)}..${Math.round(box.right)} of ${vw}): ${describe(el)}`);
    }
    const main = document.querySelector('main') as unknown as El | null;
    // Only the outcome may scroll (its details can be long; its verdict, portrait and "Next" may not).
    if (isCustomer && main !== null && main.getAttribute('data-screen') !== 'result' && main.scrollHeight > main.clientHeight + 1) {
      problems.push(`the screen needs scrolling: its content is ${main.scrollHeight} px tall in ${main.clientHeight} px`);
    }
    if (isCustomer) {
      const essentials = all(
        'main h1, [data-testid="verdict"], [data-testid="age-answer"], [data-testid="portrait"], [data-testid="next-button"], [data-testid="retry-button"], [data-testid="camera-preview"], [data-testid="scan-hint"], .language-switch, [data-testid="progress"]',
      );
      for (const el of essentials) {
        if (!shown(el)) continue;
        const box = el.getBoundingClientRect();
        if (box.top < -1 || box.bottom > vh + 1 || box.left < -1 || box.right > vw + 1) {
          problems.push(
            `not wholly on screen (${Math.round(box.left)},${Math.round(box.top)}..${Math.round(box.right)},${Math.round(box.bottom)} in ${vw}×${vh}): ${describe(el)}`,
          );
          continue;
        }
        // On screen but hidden: scrolled out of its container, or under the sticky footer or a bar.
        for (const [fx, fy] of [
          [0.5, 0.5],
          [0.15, 0.15],
          [0.85, 0.15],
          [0.15, 0.85],
          [0.85, 0.85],
        ] as const) {
          const x = box.left + box.width * fx;
          const y = box.top + box.height * fy;
          const hit = document.elementFromPoint(x, y) as El | null;
          // A deliberate overlay of the same component (the scan hint over the camera, "could not be
          // shown" over the empty portrait frame) is part of it: what covers must come from elsewhere.
          const owner = el.parentElement ?? el;
          if (hit === null || (hit !== el && !isInside(hit, el) && !isInside(hit, owner))) {
            problems.push(`covered at (${Math.round(x)},${Math.round(y)}) by ${hit === null ? 'nothing' : describe(hit)}: ${describe(el)}`);
            break;
          }
        }
      }
    }
    return Array.from(new Set(problems)).slice(0, 20);
  }, customer);
}

async function checkScene(page: Page, scene: Scene, language: Language, file: string): Promise<string[]> {
  await settle(page, language);
  const screen = await currentScreen(page);
  const problems: string[] = [];
  if (screen !== scene.screen) problems.push(`shows ${screen ?? 'nothing'}, not ${scene.screen}`);
  await page.screenshot({ path: join(OUT_DIR, file), animations: 'disabled', caret: 'hide' });
  problems.push(...(await layoutProblems(page, !scene.staff)), ...(await axeProblems(page)));
  return problems;
}

// ---------------------------------------------------------------- the run

let browser: Browser | undefined;
let page: Page;
let server: BuiltScreenServer | undefined;
let mediaDir: string | undefined;
const consoleErrors: string[] = [];

beforeAll(async () => {
  assertBrowserPrerequisites();
  axeSource = readFileSync(join(REPO, 'node_modules', 'axe-core', 'axe.min.js'), 'utf8');
  jpeg2000Portrait = await jpeg2000PortraitBase64();
  rmSync(OUT_DIR, { recursive: true, force: true });
  mkdirSync(OUT_DIR, { recursive: true });

  server = await serveBuiltScreen();
  const { origin } = server;

  mediaDir = await mkdtemp(join(tmpdir(), 'mdl-kiosk-every-screen-'));
  const camera = join(mediaDir, 'camera.y4m');
  writeBlankY4m(camera, { width: 640, height: 480, frames: 2 });
  const launched = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--no-first-run',
      '--disable-background-networking',
      '--use-fake-ui-for-media-stream',
      '--use-fake-device-for-media-stream',
      `--use-file-for-fake-video-capture=${camera}`,
    ],
  });
  browser = launched;
  const context = await launched.newContext({ viewport: BASE_VIEWPORT, locale: 'en-US', reducedMotion: 'reduce', deviceScaleFactor: 1 });
  await context.grantPermissions(['camera'], { origin });
  page = await context.newPage();
  page.on('console', (m) => {
    if (m.type() === 'error') consoleErrors.push(m.text());
  });
  page.on('pageerror', (e) => consoleErrors.push(`pageerror: ${e.message}`));
  await installFakeKiosk(page, 'disconnected');
  await page.goto(`${origin}/`);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
  if (mediaDir !== undefined) await rm(mediaDir, { recursive: true, force: true });
});

describe('every screen in every language: axe, layout, a screenshot', () => {
  it('every scripted state is a valid ScreenState', () => {
    for (const scene of SCENES) expect(scene.screen).toMatch(/^[a-z_]+$/);
    expect(ScreenState.safeParse(identityResult(screenState('ready'), Date.now(), jpeg2000Portrait)).success).toBe(true);
  });

  for (const scene of SCENES) {
    it(scene.name, async () => {
      const report: string[] = [];
      for (const language of scene.englishOnly === true ? (['en'] as const) : LANGUAGES) {
        await scene.show(page, language);
        const problems = await checkScene(page, scene, language, `${scene.name}.${language}.png`);
        report.push(...problems.map((p) => `[${scene.name}.${language}] ${p}`));
      }
      expect(report, report.join('\n')).toEqual([]);
    });
  }

  it('the main customer screens on a 1920×1080 and a 1080×1920 (portrait) kiosk', async () => {
    const report: string[] = [];
    try {
      for (const viewport of KIOSK_VIEWPORTS) {
        await page.setViewportSize(viewport);
        for (const scene of SCENES.filter((s) => s.main === true)) {
          for (const language of LANGUAGES) {
            await scene.show(page, language);
            const problems = await checkScene(page, scene, language, `${scene.name}.${language}.${viewport.width}x${viewport.height}.png`);
            report.push(...problems.map((p) => `[${scene.name}.${language} ${viewport.width}×${viewport.height}] ${p}`));
          }
        }
      }
    } finally {
      await page.setViewportSize(BASE_VIEWPORT);
    }
    expect(report, report.join('\n')).toEqual([]);
  }, 120_000);

  it('the checks catch what they look for (a picture without a text, text wider than its box, a covered button)', async () => {
    await customerScene('result_identity').show(page, 'en');
    await settle(page, 'en');
    // Planted in the page for this check only, then removed.
    await page.evaluate(`(() => {
      const img = document.createElement('img');
      img.id = 'planted-img';
      img.src = 'data:image/gif;base64,R0lGODlhAQABAAAAACw=';
      img.width = 20; img.height = 20;
      document.querySelector('.outcome-details').append(img);
      const wide = document.createElement('p');
      wide.id = 'planted-wide';
      wide.textContent = 'W'.repeat(400);
      wide.style.whiteSpace = 'nowrap';
      wide.style.overflow = 'hidden';
      document.querySelector('.outcome-details').append(wide);
      const cover = document.createElement('div');
      cover.id = 'planted-cover';
      Object.assign(cover.style, { position: 'fixed', inset: '0', zIndex: '10', background: 'rgb(0 0 0 / 10%)' });
      document.body.append(cover);
    })()`);
    try {
      const axe = await axeProblems(page);
      const layout = await layoutProblems(page, true);
      expect(axe.some((p) => p.startsWith('axe image-alt'))).toBe(true);
      expect(layout.some((p) => p.startsWith('overflows its box sideways') && p.includes('WWWW'))).toBe(true);
      expect(layout.some((p) => p.startsWith('covered at') && p.includes('next-button'))).toBe(true);
    } finally {
      await page.evaluate(`['planted-img', 'planted-wide', 'planted-cover'].forEach((id) => document.getElementById(id)?.remove())`);
    }
    expect([...(await axeProblems(page)), ...(await layoutProblems(page, true))]).toEqual([]);
  });

  it('the page logged no error on any screen', () => {
    // Expected: the denied and missing cameras (the screen says so). Chromium's complaints about the
    // host's CSP header are the host's business (test/unit/host), not the screen's.
    const expected =
      /NotAllowedError|NotFoundError|Permission denied|device not found|^The source list for the Content Security Policy directive/i;
    expect(consoleErrors.filter((e) => !expected.test(e))).toEqual([]);
  });
});
