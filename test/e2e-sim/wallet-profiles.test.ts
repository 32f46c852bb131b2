/**
 * End to end with real crypto for each wallet profile (docs/wallet-profiles.md): kiosk relay + mock backend
 * + the virtual phone in that profile, by NFC (the profile's handover kind) and by QR. Each verification
 * ends `verified` with issuer and device authentication Valid; the kiosk's BLE role is the one the
 * profile's modes allow (central-client-only wallets make it the peripheral).
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { PhoneProfileName } from '../../src/qa/sim/virtual-wallet/profiles.js';
import { startE2e, type E2eStack } from '../support/e2e-stack.js';

let stack: E2eStack | undefined;
afterEach(async () => {
  await stack?.stop();
  stack = undefined;
});

async function verify(profile: PhoneProfileName, engage: 'tap' | 'qr'): Promise<{ stack: E2eStack; apdus: number | undefined }> {
  stack = await startE2e({ profile, config: { profile: 'identity' } });
  await stack.ready();
  if (engage === 'tap') stack.rig.tap();
  else stack.rig.showQr();
  const report = await stack.nextReport(20_000);
  expect(report.result).toBe('complete');
  expect(report.outcome).toMatchObject({ verdict: 'verified', issuerAuthentication: 'Valid', deviceAuthentication: 'Valid', errors: {} });
  return { stack, apdus: report.apdus };
}

const CASES: readonly { profile: PhoneProfileName; minApdus: number; centralClientOnly: boolean }[] = [
  // Negotiated with 3 "not ready" NLEN reads after the HR: at least 13 APDUs.
  { profile: 'apple-wallet', minApdus: 13, centralClientOnly: true },
  // Negotiated; its HS names its own UUID, which the kiosk must advertise.
  { profile: 'google-wallet', minApdus: 10, centralClientOnly: false },
  { profile: 'samsung-wallet', minApdus: 6, centralClientOnly: true },
  { profile: 'multipaz', minApdus: 6, centralClientOnly: false },
];

describe('end to end with each wallet profile', () => {
  for (const c of CASES) {
    it(`${c.profile}: NFC tap → verified (≥ ${c.minApdus} APDUs)${c.centralClientOnly ? ', kiosk peripheral' : ''}`, async () => {
      const { stack: s, apdus } = await verify(c.profile, 'tap');
      expect(apdus).toBeGreaterThanOrEqual(c.minApdus);
      if (c.centralClientOnly) expect(s.views.some((v) => v.role === 'peripheral')).toBe(true);
    });

    it(`${c.profile}: QR → verified`, async () => {
      const { stack: s } = await verify(c.profile, 'qr');
      if (c.centralClientOnly) expect(s.views.some((v) => v.role === 'peripheral')).toBe(true);
    });
  }
});
