/**
 * Each wallet profile verifies end to end against the mock backend's reader engine (real crypto, the
 * in-test relay of backend-relay.ts): NFC engagement in the profile's handover kind, then BLE in the mode
 * the profile's HS or QR lets the kiosk take, then issuer and device authentication Valid with the
 * profile's device-authentication kind.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { PhoneProfileName } from '../../../../src/qa/sim/virtual-wallet/index.js';
import { createRig, expectValid, stopRig, viaNfc, viaQr, type Rig } from './backend-relay.js';

let rig: Rig;
beforeEach(() => {
  rig = createRig();
});
afterEach(() => stopRig(rig));

/**
 * The kiosk role that follows each profile's NFC engagement: central-client phones need the kiosk as
 * peripheral (it advertises the HR's or the HS's UUID); multipaz's static HS offers both, the kiosk takes
 * central (mdoc peripheral server mode) here and peripheral in the QR case below.
 */
const NFC_CASES: readonly {
  profile: PhoneProfileName;
  engagement: 'nfc_static' | 'nfc_negotiated';
  role: 'central' | 'peripheral';
  bleMode: 'centralClient' | 'peripheralServer';
  deviceAuth: 'signature' | 'mac';
}[] = [
  { profile: 'apple-wallet', engagement: 'nfc_negotiated', role: 'peripheral', bleMode: 'centralClient', deviceAuth: 'signature' },
  // Google Wallet's HS carries its own UUID: the reader must advertise that one, not its HR's.
  { profile: 'google-wallet', engagement: 'nfc_negotiated', role: 'peripheral', bleMode: 'centralClient', deviceAuth: 'signature' },
  { profile: 'samsung-wallet', engagement: 'nfc_static', role: 'peripheral', bleMode: 'centralClient', deviceAuth: 'signature' },
  { profile: 'multipaz', engagement: 'nfc_static', role: 'central', bleMode: 'peripheralServer', deviceAuth: 'mac' },
];

describe('a verification with each wallet profile succeeds against the mock backend', () => {
  for (const c of NFC_CASES) {
    it(`${c.profile}: ${c.engagement} → kiosk ${c.role} → mdoc ${c.bleMode} mode, device ${c.deviceAuth}, verified`, async () => {
      const result = await viaNfc(rig, c.profile, c.role);
      expectValid(result);
      expect(result.phone).toMatchObject({ engagement: c.engagement, bleMode: c.bleMode, deviceAuth: c.deviceAuth });
    });
  }

  it('multipaz by QR with the kiosk as peripheral (mdoc central client mode), deviceMac', async () => {
    const result = await viaQr(rig, 'multipaz', 'peripheral');
    expectValid(result);
    expect(result.phone).toMatchObject({ engagement: 'qr', bleMode: 'centralClient', deviceAuth: 'mac' });
  });

  it('google-wallet by QR offers both modes: the kiosk as central (mdoc peripheral server mode)', async () => {
    const result = await viaQr(rig, 'google-wallet', 'central');
    expectValid(result);
    expect(result.phone).toMatchObject({ engagement: 'qr', bleMode: 'peripheralServer' });
  });

  it('a behaviour that picks the device-authentication kind overrides the profile (multipaz with signature)', async () => {
    const result = await viaNfc(rig, 'multipaz', 'central', { deviceAuth: 'signature' });
    expectValid(result);
    expect(result.phone).toMatchObject({ deviceAuth: 'signature' });
  });
});
