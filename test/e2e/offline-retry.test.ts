/**
 * "Retry now" on Offline in real Chromium against the whole kiosk (issue 28 item 3): each press says what
 * came of it (tried at a time, still not reachable and why), announced; while it runs the button says so
 * and presses do not send more; when the retry policy's request budget is spent it says so and sends
 * nothing; with the backend back, Retry now brings Ready.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkScreen, startBrowserStack, stopBrowserStack, type BrowserStack } from '../support/e2e-browser.js';

let stack: BrowserStack;

beforeAll(async () => {
  // Long automatic backoff, so the presses are what contacts the backend; the smallest request budget.
  stack = await startBrowserStack({
    config: { session: { offlineBackoffMinMs: 60_000, offlineBackoffMaxMs: 120_000, maxRequestsPerMinute: 6 } },
  });
  await stack.waitForScreen('ready', 30_000);
}, 60_000);

afterAll(() => stopBrowserStack(stack), 30_000);

describe('"Retry now" on Offline', () => {
  it('says when it tried and what came of it, "Trying…" meanwhile, presses meanwhile send nothing; then that the budget says wait; Ready once the backend is back', async () => {
    const { page } = stack;
    await stack.backend.goOffline();
    // The lost socket is an ordinary ending, retried once after a wait jittered within the backoff's base
    // (60 s here; docs/protocol.md §10.1); its failure then shows Offline.
    await stack.waitForScreen('offline', 75_000);
    const button = page.getByTestId('retry-button');
    const result = page.getByTestId('retry-result');
    expect(await result.getAttribute('role')).toBe('status');
    expect((await result.textContent()) ?? '').toBe('');

    // Every text and aria-disabled the button shows, however briefly.
    await page.evaluate(`(() => {
      const b = document.querySelector('[data-testid="retry-button"]');
      window.__retryButton = [];
      new MutationObserver(() => window.__retryButton.push(b.textContent + '|' + b.getAttribute('aria-disabled'))).observe(b, { subtree: true, childList: true, characterData: true, attributes: true });
    })()`);
    const requests = (): number => stack.service.getDiagnostics().backend?.requestsLastMinute ?? 0;
    const before = requests();
    // Going offline spends part of the budget (the lost socket, its reconnection, a new session): the
    // budget leaves room for the press below whatever that took (at most 4 of 6).
    expect(before).toBeLessThanOrEqual(4);
    // One press and four more at once: one attempt.
    await page.evaluate(
      `(() => { const b = document.querySelector('[data-testid="retry-button"]'); for (let i = 0; i < 5; i++) b.click(); })()`,
    );
    await expect
      .poll(() => result.textContent(), { timeout: 30_000 })
      .toMatch(/^Tried at \d{1,2}:\d{2}:\d{2}\s?(AM|PM)? — still not reachable: \S/);
    expect(await page.evaluate('window.__retryButton')).toContain('Trying…|true');
    expect(requests() - before).toBe(1);
    expect(await button.textContent()).toBe('Retry now');
    expect(await button.getAttribute('aria-disabled')).toBe('false');
    // One answer for the one attempt: nothing replaces it afterwards (no second press got through).
    await new Promise((done) => setTimeout(done, 1_500));
    expect(await result.textContent()).toMatch(/^Tried at .* still not reachable/);
    // "Trying…" began once: one attempt from the screen, however many presses.
    expect(
      await page.evaluate(
        'window.__retryButton.filter((t, i, all) => t.startsWith("Trying") && !(all[i - 1] ?? "").startsWith("Trying")).length',
      ),
    ).toBe(1);
    await checkScreen(stack, 'offline-retry-tried');

    const said: string[] = [];
    for (let press = 0; press < 6; press++) {
      await page.evaluate(`document.querySelector('[data-testid="retry-result"]').textContent = ''`);
      await button.click();
      await expect.poll(() => result.textContent(), { timeout: 30_000 }).toMatch(/^(Tried at|Not tried at)/);
      const text = (await result.textContent()) ?? '';
      said.push(text);
      if (text.startsWith('Not tried')) break;
    }
    // The budget (6 requests a minute) stops the presses, and says for how long; nothing is sent then.
    expect(said.at(-1)).toMatch(/^Not tried at .* Next try possible in \d+\u00a0s\.$/);
    const spent = requests();
    await button.click();
    await expect.poll(() => result.textContent()).toMatch(/^Not tried at/);
    expect(requests()).toBe(spent);
    await checkScreen(stack, 'offline-retry-budget');

    await stack.backend.comeBack();
    // The budget frees up within a minute: a press then reaches the backend and the kiosk leaves Offline
    // (its old session's end is news from a backend that is back: it connects again, then is ready).
    await expect
      .poll(
        async () => {
          if ((await stack.screen()) === 'offline' && (await button.textContent()) === 'Retry now') await button.click();
          return stack.screen();
        },
        { timeout: 80_000, interval: 3_000 },
      )
      .not.toBe('offline');
    expect(stack.backend.online).toBe(true);
  }, 230_000);
});
