/**
 * The phone page's QA switches against the whole kiosk in Chromium (issue 28 item 5): through the page's
 * own API, with no restart, Bluetooth switched off brings the kiosk screen to "Needs staff" (and back to
 * Ready when switched on), and an under-21 holder's next tap ends in "NOT 21 or older".
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkScreen, startBrowserStack, stopBrowserStack, type BrowserStack } from '../support/e2e-browser.js';

let stack: BrowserStack;

beforeAll(async () => {
  stack = await startBrowserStack({ phonePage: true, config: { profile: 'age_over_21' } });
  await stack.waitForScreen('ready', 30_000);
}, 60_000);

afterAll(() => stopBrowserStack(stack), 30_000);

/** A POST to the phone page's API, as its own page sends it (bearer token). */
async function phoneApi(path: '/api/settings' | '/api/action', body: unknown): Promise<{ status: number; data: unknown }> {
  const phonePage = stack.phonePage;
  if (!phonePage) throw new Error('no phone page');
  const res = await fetch(new URL(path, phonePage.url), {
    method: 'POST',
    headers: { authorization: `Bearer ${phonePage.token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, data: await res.json() };
}

describe('QA switches on the phone page', () => {
  it('Bluetooth off: the kiosk needs staff, naming Bluetooth; on again: Ready, no restart', async () => {
    expect((await phoneApi('/api/settings', { bluetooth: 'off' })).status).toBe(200);
    await stack.waitForScreen('cannot_verify', 15_000);
    expect(stack.service.state().view.devices.bleCentral).toMatchObject({ usable: false, reason: 'powered_off' });
    await checkScreen(stack, 'qa-switch-bluetooth-off');
    expect((await phoneApi('/api/settings', { bluetooth: 'on' })).status).toBe(200);
    await stack.waitForScreen('ready', 15_000);
  });

  it('the NFC reader unplugged: the kiosk sees the reader gone (no tap offered) and back when plugged in', async () => {
    expect((await phoneApi('/api/settings', { nfcReader: 'unplugged' })).status).toBe(200);
    await expect.poll(() => stack.service.state().view.devices.nfc).toMatchObject({ usable: false, reason: 'no_reader' });
    expect((await phoneApi('/api/settings', { nfcReader: 'present' })).status).toBe(200);
    await expect.poll(() => stack.service.state().view.devices.nfc.usable).toBe(true);
    await stack.waitForScreen('ready', 15_000);
  });

  it('an under-21 holder: the next tap ends in "NOT 21 or older"; a bad value is refused', async () => {
    expect((await phoneApi('/api/settings', { holder: 'under_18' })).status).toBe(400);
    expect((await phoneApi('/api/settings', { holder: 'under_21' })).status).toBe(200);
    expect((await phoneApi('/api/action', { action: 'tap' })).status).toBe(200);
    await stack.waitForScreen('result', 30_000);
    const answer = stack.page.getByTestId('age-answer').first();
    expect(await answer.getAttribute('data-age')).toBe('no');
    expect(await answer.textContent()).toContain('NOT 21 or older');
    await checkScreen(stack, 'qa-switch-under-21');
    await stack.page.getByTestId('next-button').click();
    await phoneApi('/api/action', { action: 'lift' });
    await stack.waitForScreen('ready', 15_000);
    expect((await phoneApi('/api/settings', { holder: 'adult' })).status).toBe(200);
  });
});
