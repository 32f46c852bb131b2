/**
 * End-to-end faults with real crypto (issue 3): what the customer and staff see when the phone, the
 * credential, the trust list or the backend misbehave.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { NfcTransmitError, type NfcReader } from '../../src/devices/ports.js';
import { createTestPki } from '../../src/qa/sim/virtual-wallet/pki.js';
import { startE2e, type E2eStack } from '../support/e2e-stack.js';

let stack: E2eStack | undefined;
afterEach(async () => {
  await stack?.stop();
  stack = undefined;
});

type Report = Awaited<ReturnType<E2eStack['nextReport']>>;

async function qrVerification(s: E2eStack): Promise<Report> {
  await s.ready();
  s.rig.showQr();
  return s.nextReport(20_000);
}

describe('end-to-end faults (issue 3)', () => {
  it('field drop mid-handover: RemovedCard → nfc_await_card → "tap again" → re-tap → complete', async () => {
    stack = await startE2e({ profile: 'android', behaviour: { nfcFieldDropAtApdu: 3 } });
    await stack.ready();
    stack.rig.tap();
    await stack.view((v) => v.phase === 'awaiting_card' && v.prompt === 'tap_again', 10_000);
    stack.rig.retap();
    const report = await stack.nextReport(20_000);
    expect(report.result).toBe('complete');
    expect(report.outcome?.verdict).toBe('verified');
    expect(stack.logs.text()).toContain('"reason":"RemovedCard"');
  });

  it('fatal PC/SC reason: error → the same session is retried → the next tap completes', async () => {
    // The reader reports a fatal variant for the first APDU of the first tap.
    let sabotage = true;
    const sabotaged = (nfc: NfcReader): NfcReader => ({
      availability: () => nfc.availability(),
      ignoreCurrentCard: () => nfc.ignoreCurrentCard(),
      close: () => nfc.close(),
      nextCard: async (signal) => {
        const card = await nfc.nextCard(signal);
        if (!sabotage) return card;
        sabotage = false;
        return {
          get present() {
            return card.present;
          },
          transmit: () => Promise.reject(new NfcTransmitError('SharingViolation')),
          waitForRemoval: (s) => card.waitForRemoval(s),
          release: () => card.release(),
        };
      },
    });
    stack = await startE2e({ profile: 'android', devices: (rig) => ({ ...rig.devices, nfc: sabotaged(rig.nfc) }) });
    await stack.ready();
    stack.rig.tap();
    const failed = await stack.nextReport(20_000);
    expect(failed.result).toBe('backend_error');
    await stack.view((v) => v.phase === 'error' && v.prompt === 'try_again');
    stack.rig.lift();
    await stack.view(
      (v) => v.phase === 'ready' && stack !== undefined && stack.views.indexOf(v) > stack.views.findIndex((e) => e.phase === 'error'),
    );
    stack.rig.tap();
    const report = await stack.nextReport(20_000);
    expect(report.result).toBe('complete');
    expect(report.outcome?.verdict).toBe('verified');
    expect(report.sessionId).toBe(failed.sessionId);
  });

  it('untrusted IACA: the credential is rejected (issuer authentication Invalid)', async () => {
    const foreign = await createTestPki({ iacaCommonName: 'Some Other IACA' });
    stack = await startE2e({ profile: 'android', trusted: [foreign.iaca.der] });
    const report = await qrVerification(stack);
    expect(report.result).toBe('complete');
    expect(report.outcome?.verdict).toBe('rejected');
    expect(report.outcome?.issuerAuthentication).toBe('Invalid');
    expect(report.outcome?.errors).toHaveProperty('issuer_authentication');
    await stack.view((v) => v.phase === 'result' && v.prompt === 'rejected');
  });

  it('tampered element: digest mismatch → rejected', async () => {
    stack = await startE2e({ profile: 'android', behaviour: { credential: 'tampered' }, config: { profile: 'identity' } });
    const report = await qrVerification(stack);
    expect(report.outcome?.verdict).toBe('rejected');
    expect(report.outcome?.errors).toHaveProperty('data_integrity');
    await stack.view((v) => v.phase === 'result' && v.prompt === 'rejected');
  });

  it('expired credential → rejected (validity)', async () => {
    stack = await startE2e({ profile: 'android', behaviour: { credential: 'expired' } });
    const report = await qrVerification(stack);
    expect(report.outcome?.verdict).toBe('rejected');
    expect(report.outcome?.errors).toHaveProperty('validity');
  });

  it('the holder declines: rejected with nothing disclosed, authentication Unchecked', async () => {
    stack = await startE2e({ profile: 'iphone', behaviour: { consent: 'decline' } });
    const report = await qrVerification(stack);
    expect(report.result).toBe('complete');
    expect(report.outcome?.verdict).toBe('rejected');
    expect(report.outcome?.issuerAuthentication).toBe('Unchecked');
    expect(report.outcome?.response).toEqual({});
  });

  it('BLE drop during the answer: "try again", and the next verification works', async () => {
    stack = await startE2e({
      profile: 'android',
      ble: { peripheral: false },
      behaviour: { bleDropAfterChunks: 1 },
      config: { profile: 'full' },
    });
    const failed = await qrVerification(stack);
    expect(failed.outcome).toBeNull();
    expect(['ble_link_lost', 'timeout']).toContain(failed.result);
    await stack.view((v) => v.phase === 'error' && v.prompt === 'try_again');
    stack.rig.phone.setBehaviour({});
    const report = await qrVerification(stack);
    expect(report.outcome?.verdict).toBe('verified');
  });

  it('404 after expiry: the kiosk creates a new session and the verification completes', async () => {
    stack = await startE2e({ profile: 'android', lifetimeMs: 600 });
    await stack.ready();
    // The idle session expires on the backend; the next reconnect of it will get 404.
    await new Promise((r) => setTimeout(r, 800));
    stack.backend.setLifetime(600_000);
    stack.backend.faults.set({ errorOnOp: 'qr_scanned' });
    const first = await qrVerification(stack);
    expect(first.result).toBe('backend_error');
    stack.backend.faults.clear();
    const report = await qrVerification(stack);
    expect(report.outcome?.verdict).toBe('verified');
    expect(report.sessionId).not.toBe(first.sessionId);
    expect(stack.logs.text()).toContain('"event":"session_gone"');
  });

  it('409 on connect: the kiosk backs off, connects and completes', async () => {
    stack = await startE2e({ profile: 'android', backendFaults: { conflictNextConnect: true } });
    const report = await qrVerification(stack);
    expect(report.outcome?.verdict).toBe('verified');
    expect(stack.logs.text()).toContain('"event":"session_conflict"');
  });
});
