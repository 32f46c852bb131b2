/**
 * The virtual rig's phone replacement: the phone that leaves is stopped and taken off the radio, so a QA
 * session (the demo, the Electron QA flavour, the soak) that keeps bringing new phones does not keep every
 * old one on the air. Found by the soak: the radio's devices grew with each replaced phone.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createVirtualRig, type VirtualRig } from '../../../src/qa/devices/virtual-rig.js';
import { VirtualPhone } from '../../../src/qa/sim/virtual-wallet/virtual-phone.js';

let rig: VirtualRig | undefined;
afterEach(async () => {
  await rig?.stop();
  rig = undefined;
});

describe('createVirtualRig().replacePhone', () => {
  it('takes each replaced phone off the radio: the air holds the kiosk and the current phone only', async () => {
    rig = await createVirtualRig({ profile: 'android' });
    const kioskAddress = rig.central.device.address;
    const replaced: string[] = [];
    for (let i = 0; i < 5; i++) {
      const old = rig.phone;
      replaced.push(old.device.address);
      await rig.replacePhone(
        await VirtualPhone.create({ profile: i % 2 === 0 ? 'iphone' : 'android', radio: rig.radio, name: `phone-${i}` }),
      );
      expect(old.device.powered).toBe(false);
    }
    expect(rig.radio.devices.map((d) => d.address).sort()).toEqual([kioskAddress, rig.phone.device.address].sort());
    for (const address of replaced) expect(rig.radio.findDevice(address)).toBeUndefined();
    // The current phone still presents over the same air.
    expect(rig.showQr()).toMatch(/^mdoc:/);
  });
});
