/**
 * End to end with real crypto (issue 3): kiosk relay + mock backend + virtual phone. Each flow ends in
 * `complete` with issuer and device authentication `Valid`, no errors, and exactly the requested elements.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { resolveProfile } from '../../src/kiosk/profiles.js';
import { startE2e, type E2eStack } from '../support/e2e-stack.js';

let stack: E2eStack | undefined;
afterEach(async () => {
  await stack?.stop();
  stack = undefined;
});

const IDENTITY = resolveProfile({ profiles: {} }, 'identity');

function expectVerified(stackValue: E2eStack, report: Awaited<ReturnType<E2eStack['nextReport']>>): void {
  expect(report.result).toBe('complete');
  expect(report.outcome?.verdict).toBe('verified');
  expect(report.outcome?.issuerAuthentication).toBe('Valid');
  expect(report.outcome?.deviceAuthentication).toBe('Valid');
  expect(report.outcome?.errors).toEqual({});
  const requested = stackValue.config.profile === 'identity' ? IDENTITY.namespaces : undefined;
  if (requested) {
    for (const [ns, elements] of Object.entries(requested)) {
      expect(Object.keys(report.outcome?.response[ns] ?? {}).sort()).toEqual([...elements].sort());
    }
  }
}

describe('end to end, real ISO 18013-5 (kiosk + mock backend + virtual phone)', () => {
  it('QR → kiosk central (android phone in peripheral server mode)', async () => {
    stack = await startE2e({ profile: 'android', ble: { peripheral: false }, config: { profile: 'identity' } });
    await stack.ready();
    stack.rig.showQr();
    const report = await stack.nextReport(20_000);
    expectVerified(stack, report);
    expect(stack.views.some((v) => v.role === 'central')).toBe(true);
  });

  it('QR → kiosk peripheral (iphone in central client mode, Ident read)', async () => {
    stack = await startE2e({ profile: 'iphone', config: { profile: 'identity' } });
    await stack.ready();
    stack.rig.showQr();
    const report = await stack.nextReport(20_000);
    expectVerified(stack, report);
    expect(stack.views.some((v) => v.role === 'peripheral')).toBe(true);
  });

  it('NFC static handover → kiosk central (android)', async () => {
    stack = await startE2e({ profile: 'android', config: { profile: 'identity' } });
    await stack.ready();
    stack.rig.tap();
    const report = await stack.nextReport(20_000);
    expectVerified(stack, report);
    expect(report.apdus).toBeGreaterThanOrEqual(6);
    expect(stack.views.some((v) => v.role === 'central')).toBe(true);
  });

  it('NFC negotiated handover → kiosk peripheral (iphone)', async () => {
    stack = await startE2e({ profile: 'iphone', config: { profile: 'identity' } });
    await stack.ready();
    stack.rig.tap();
    const report = await stack.nextReport(20_000);
    expectVerified(stack, report);
    expect(report.apdus).toBeGreaterThanOrEqual(10);
    expect(stack.views.some((v) => v.role === 'peripheral')).toBe(true);
  });
});
