/**
 * A plain-Node program bundled exactly like the QA flavour's entry (tools/build/app.ts) to prove that
 * pipeline outside the checkout: with only the packaged node_modules beside it, it runs what main-qa.js
 * runs in Electron's main process — the QA flavour's embedded default (src/qa/app/embedded-default.ts:
 * mock backend, virtual counter, virtual phone page) wired to the kiosk service through main's kiosk link —
 * and drives one whole verification the way QA does at the desk: on the phone page, "Show QR", then
 * "Scan it". That needs the simulators inlined, their `createRequire` loads, the JPEG 2000 codec's wasm and
 * the phone page's assets beside the bundle. test/package/dry-run.test.ts runs it inside the extracted QA
 * package. Prints one JSON line; exit 0 = verified.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ScreenState } from '../../src/common/kiosk-api.js';
import { createLogger } from '../../src/platform/log.js';
import { kioskLink } from '../../src/main/embedded-default.js';
import { embeddedDefault } from '../../src/qa/app/embedded-default.js';
import { KioskService } from '../../src/service/kiosk-service.js';

const STEP_TIMEOUT_MS = 30_000;
const quiet = { write: (): void => undefined };

function waitFor(service: KioskService, test: (s: ScreenState) => boolean, what: string): Promise<ScreenState> {
  return new Promise((resolve, reject) => {
    const now = service.state();
    if (test(now)) {
      resolve(now);
      return;
    }
    const timer = setTimeout(() => {
      stop();
      reject(new Error(`no ${what} state within ${STEP_TIMEOUT_MS} ms (last phase ${service.state().view.phase})`));
    }, STEP_TIMEOUT_MS);
    const stop = service.onState((s) => {
      if (!test(s)) return;
      clearTimeout(timer);
      stop();
      resolve(s);
    });
  });
}

/** A call to the phone page's API, as its own page makes it (token from the URL's fragment). */
async function phonePage(url: URL, path: string, body?: unknown): Promise<{ status: number; json: unknown }> {
  const token = new URLSearchParams(url.hash.slice(1)).get('token') ?? '';
  const response = await fetch(new URL(path, url.origin), {
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const json: unknown = await response.json();
  return { status: response.status, json };
}

async function main(): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), 'mdl-kiosk-qa-smoke-'));
  let service: KioskService | undefined;
  const setup = await embeddedDefault.start(
    createLogger({ level: 'silent' }, quiet),
    kioskLink(() => service),
  );
  try {
    const kiosk = new KioskService({
      devices: setup.devices,
      dataDir,
      backendOverride: setup.backendOverride,
      testMode: true,
      logDestination: quiet,
    });
    service = kiosk;
    const url = new URL(setup.phonePageUrl);
    // The page's assets were read beside the bundle when it started; fetch the page to be sure.
    const page = await fetch(new URL('/', url.origin));
    const html = await page.text();
    if (page.status !== 200 || !html.includes('<html')) throw new Error(`the phone page answered ${page.status} without its HTML`);
    try {
      await kiosk.start();
      await waitFor(kiosk, (s) => s.view.phase === 'ready', 'ready');
      const shown = await phonePage(url, '/api/action', { action: 'show_qr' });
      if (shown.status !== 200) throw new Error(`"Show QR" answered ${shown.status}: ${JSON.stringify(shown.json)}`);
      const scanned = await phonePage(url, '/api/action', { action: 'scan_qr' });
      if (scanned.status !== 200) throw new Error(`"Scan it" answered ${scanned.status}: ${JSON.stringify(scanned.json)}`);
      const result = await waitFor(kiosk, (s) => s.view.phase === 'result' || s.view.phase === 'error', 'result');
      const verdict = result.view.outcome?.verdict ?? result.view.phase;
      process.stdout.write(`${JSON.stringify({ verdict, phonePage: page.status, scan: scanned.json })}\n`);
      if (verdict !== 'verified') throw new Error(`the verification ended ${verdict}`);
    } finally {
      await kiosk.stop();
    }
  } finally {
    await setup.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    process.stderr.write(`qa-bundle-smoke: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(1);
  },
);
