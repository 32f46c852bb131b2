/**
 * The virtual phone's "tampered" credential and its JPEG 2000 portrait, through the whole chain (kiosk,
 * mock backend with its ISO reader engine, virtual phone on the virtual radio):
 * - a tampered phone alters an element the active request asks for, so with the default age profile
 *   (age_over_21 + portrait) the backend reports a digest mismatch and the kiosk rejects — before the fix
 *   the phone altered family_name, which that request leaves out, and the outcome read verified;
 * - the explicit `tamper: {element}` still alters that element at issuance;
 * - `portrait: 'jpeg2000'` puts a lossless JP2 file in the credential, the backend's outcome carries it
 *   (base64), and decoding it gives the drawn face pixel for pixel.
 */
import { spawnSync } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import {
  JP2_SIGNATURE,
  decodeJpeg2000,
  drawPortraitJpeg2000,
  drawPortraitRgb,
  getTestCredential,
  issueTestCredential,
  jpeg2000Codestream,
  tamperTarget,
  type RequestedDocument,
} from '../../../../src/qa/sim/virtual-wallet/index.js';
import { startE2e, type E2eStack } from '../../../support/e2e-stack.js';
import { NS } from './reader-fixtures.js';

const DOC_TYPE = 'org.iso.18013.5.1.mDL';

let stack: E2eStack | undefined;
afterEach(async () => {
  await stack?.stop();
  stack = undefined;
});

function request(elements: string[], docType = DOC_TYPE): RequestedDocument[] {
  return [{ docType, namespaces: { [NS]: elements }, readerAuth: false }];
}

async function qrVerification(s: E2eStack): Promise<Awaited<ReturnType<E2eStack['nextReport']>>> {
  await s.ready();
  s.rig.showQr();
  return s.nextReport(20_000);
}

describe('tampered credential: a requested element is altered', () => {
  it('tamper: true keeps the stored bytes authentic and marks the credential to tamper when answering', async () => {
    const credential = await issueTestCredential({ tamper: true });
    expect(credential.tamperAtAnswer).toBe(true);
    expect(credential.tampered).toBeUndefined();
    const explicit = await issueTestCredential({ tamper: { element: 'given_name' } });
    expect(explicit).toMatchObject({ tamperAtAnswer: false, tampered: { namespace: NS, element: 'given_name' } });
  });

  it('chooses the first requested element disclosed, the portrait only when nothing else is disclosed', () => {
    const disclosed = (elements: string[]): Record<string, string[]> => ({ [NS]: elements });
    expect(tamperTarget(request(['portrait', 'age_over_21']), disclosed(['portrait', 'age_over_21']))).toEqual({
      namespace: NS,
      element: 'age_over_21',
    });
    expect(tamperTarget(request(['no_such_element', 'given_name', 'family_name']), disclosed(['family_name', 'given_name']))).toEqual({
      namespace: NS,
      element: 'given_name',
    });
    // An age_over_NN answered by a substitute: the substitute is what the reader checks.
    expect(tamperTarget(request(['age_over_21', 'portrait']), disclosed(['portrait', 'age_over_25']))).toEqual({
      namespace: NS,
      element: 'age_over_25',
    });
    expect(tamperTarget(request(['portrait']), disclosed(['portrait']))).toEqual({ namespace: NS, element: 'portrait' });
    expect(tamperTarget(request(['no_such_element']), {})).toBeUndefined();
  });

  it('default age_over_21 profile + tampered phone: data_integrity error on age_over_21, issuer Invalid, kiosk rejects', async () => {
    stack = await startE2e({ profile: 'android', behaviour: { credential: 'tampered' } });
    expect(stack.config.profile).toBe('age_over_21');
    const report = await qrVerification(stack);
    expect(report.result).toBe('complete');
    expect(report.outcome?.verdict).toBe('rejected');
    expect(report.outcome?.issuerAuthentication).toBe('Invalid');
    expect(report.outcome?.deviceAuthentication).toBe('Valid');
    expect(JSON.stringify(report.outcome?.errors.data_integrity)).toContain(`${NS}/age_over_21`);
    expect(await stack.rig.phone.outcome).toMatchObject({ kind: 'shared', tampered: { namespace: NS, element: 'age_over_21' } });
    await stack.view((v) => v.phase === 'result' && v.prompt === 'rejected');
  });

  it('a portrait-only profile + tampered phone (deviceMac): the portrait is altered, still rejected, device auth Valid', async () => {
    stack = await startE2e({
      profile: 'iphone',
      behaviour: { credential: 'tampered', deviceAuth: 'mac' },
      config: { profile: 'face', profiles: { face: { namespaces: { [NS]: ['portrait'] } } } },
    });
    const report = await qrVerification(stack);
    expect(report.outcome?.verdict).toBe('rejected');
    expect(JSON.stringify(report.outcome?.errors.data_integrity)).toContain(`${NS}/portrait`);
    expect(report.outcome?.deviceAuthentication).toBe('Valid');
  });

  it('an explicit {element} not requested is not noticed (which is why "tampered" no longer uses one)', async () => {
    const credential = await issueTestCredential({ tamper: { element: 'family_name' } });
    stack = await startE2e({ profile: 'android', credential });
    const report = await qrVerification(stack);
    expect(report.outcome?.verdict).toBe('verified');
    expect(await stack.rig.phone.outcome).toMatchObject({ kind: 'shared', tampered: { namespace: NS, element: 'family_name' } });
  });
});

describe('JPEG 2000 portrait', () => {
  it('drawPortraitJpeg2000 is a JP2 file whose lossless codestream decodes to the drawn face', async () => {
    const jp2 = await drawPortraitJpeg2000();
    expect(jp2.subarray(0, 12)).toEqual(JP2_SIGNATURE);
    const codestream = jpeg2000Codestream(jp2);
    expect([...codestream.subarray(0, 4)]).toEqual([0xff, 0x4f, 0xff, 0x51]);
    expect(await decodeJpeg2000(jp2)).toEqual(drawPortraitRgb());
  });

  it('getTestCredential caches the portrait formats apart', async () => {
    const jpeg = await getTestCredential({});
    const j2k = await getTestCredential({ portraitFormat: 'jpeg2000' });
    expect(j2k).not.toBe(jpeg);
    expect(j2k.portraitFormat).toBe('jpeg2000');
    expect(await getTestCredential({ portraitFormat: 'jpeg2000' })).toBe(j2k);
    expect(await getTestCredential({ portraitFormat: 'jpeg' })).toBe(jpeg);
  });

  it("the mock backend's outcome carries the JP2 portrait (base64) and it decodes to the expected pixels", async () => {
    stack = await startE2e({ profile: 'iphone', behaviour: { portrait: 'jpeg2000' } });
    expect(stack.rig.phone.credential.portraitFormat).toBe('jpeg2000');
    const report = await qrVerification(stack);
    expect(report.outcome?.verdict).toBe('verified');
    const portrait = report.outcome?.response[NS]?.portrait;
    expect(typeof portrait).toBe('string');
    const bytes = Uint8Array.from(Buffer.from(portrait as string, 'base64'));
    expect(bytes.subarray(0, 12)).toEqual(JP2_SIGNATURE);
    const decoded = await decodeJpeg2000(bytes);
    expect(decoded).toMatchObject({ width: 120, height: 160, components: 3 });
    expect(decoded).toEqual(drawPortraitRgb());
    // Spot checks against the drawing: light background in the corner, skin between the eyes.
    const at = (x: number, y: number): number[] => [...decoded.data.subarray((y * 120 + x) * 3, (y * 120 + x) * 3 + 3)];
    expect(at(0, 0)).toEqual([214, 226, 240]);
    expect(at(60, 72)).toEqual([232, 190, 160]);
  });

  it('npm run virtual-wallet refuses an unknown --portrait format', () => {
    const run = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/virtual-wallet.ts', '--portrait', 'gif'], {
      encoding: 'utf8',
      timeout: 15_000,
    });
    expect(run.status).toBe(2);
    expect(run.stderr).toContain('--portrait takes jpeg | jpeg2000');
  });
});
