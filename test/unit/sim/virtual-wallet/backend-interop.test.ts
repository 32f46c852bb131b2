/**
 * Interoperability with the mock backend's ISO reader engine (src/qa/sim/mock-backend/reader): the engine's
 * steps are carried to the virtual phone by a minimal in-test relay (what the kiosk does, without the
 * WebSocket): APDUs to the tag, `ble_write`s as GATT writes or notifications, notifications / writes /
 * reads back to the engine. Every flow of the end-to-end list that involves only the phone and the
 * reader ends with the outcome the backend would send in `complete`.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { NS } from './reader-fixtures.js';
import { createRig, expectValid, stopRig, viaNfc as nfcOn, viaQr as qrOn, type RelayResult, type Rig } from './backend-relay.js';
import type { PhoneBehaviour, PhoneProfileName } from '../../../../src/qa/sim/virtual-wallet/index.js';

let rig: Rig;
beforeEach(() => {
  rig = createRig();
});
afterEach(() => stopRig(rig));

const viaQr = (profile: PhoneProfileName, role: 'central' | 'peripheral', behaviour: PhoneBehaviour = {}): Promise<RelayResult> =>
  qrOn(rig, profile, role, behaviour);
const viaNfc = (profile: PhoneProfileName, role: 'central' | 'peripheral', behaviour: PhoneBehaviour = {}): Promise<RelayResult> =>
  nfcOn(rig, profile, role, behaviour);

describe('the mock backend reader engine and the virtual phone', () => {
  it('QR → central (android, mdoc peripheral server mode)', async () => {
    const result = await viaQr('android', 'central');
    expectValid(result);
    expect(result.phone.bleMode).toBe('peripheralServer');
    expect(result.outcome?.response[NS]?.family_name).toBe('Doe');
  });

  it('QR → peripheral (android, mdoc central client mode)', async () => {
    const result = await viaQr('android', 'peripheral');
    expectValid(result);
    expect(result.phone.bleMode).toBe('centralClient');
  });

  it('NFC static → central (android)', async () => {
    const result = await viaNfc('android', 'central');
    expectValid(result);
    expect(result.phone.engagement).toBe('nfc_static');
  });

  it('NFC negotiated → peripheral (iphone: HS not ready once, central client mode on the HR UUID)', async () => {
    const result = await viaNfc('iphone', 'peripheral');
    expectValid(result);
    expect(result.phone).toMatchObject({ engagement: 'nfc_negotiated', bleMode: 'centralClient' });
  });

  it('deviceMac: the backend verifies the MAC variant', async () => {
    const result = await viaQr('iphone', 'peripheral', { deviceAuth: 'mac' });
    expectValid(result);
  });

  it('tampered element: data_integrity error, issuer authentication Invalid', async () => {
    const result = await viaQr('android', 'central', { credential: 'tampered' });
    expect(result.outcome?.issuer_authentication).toBe('Invalid');
    expect(result.outcome?.device_authentication).toBe('Valid');
    expect(JSON.stringify(result.outcome?.errors)).toContain('family_name');
  });

  it('expired credential: a validity error, authentications Valid', async () => {
    const result = await viaQr('android', 'central', { credential: 'expired' });
    expect(result.outcome).toMatchObject({ issuer_authentication: 'Valid', device_authentication: 'Valid' });
    expect(Object.keys(result.outcome?.errors ?? {})).toEqual(['validity']);
  });

  it('decline: completed without a response (session error), the phone reports declined', async () => {
    const result = await viaQr('android', 'central', { consent: 'decline' });
    expect(result.outcome).toMatchObject({ issuer_authentication: 'Unchecked', device_authentication: 'Unchecked', response: {} });
    expect(Object.keys(result.outcome?.errors ?? {})).toEqual(['session']);
    expect(result.phone).toMatchObject({ kind: 'declined', ending: 'state_end' });
  });
});
