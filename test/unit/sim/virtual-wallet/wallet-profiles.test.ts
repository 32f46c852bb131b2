/**
 * The wallet profiles reproduce their captures (wallet-capture-fixtures.ts, from test/fixtures/captures/): the
 * Handover Select byte for byte when given the capture's DeviceEngagement and UUID, the CC and Tp bytes a reader
 * reads, the number of "not ready" NLEN reads after the HR, DeviceEngagement version and keys, LE role and
 * UUID presence, MLe-capped reads, device authentication and the BLE start delay. Also: every profile is
 * listed where QA picks one.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  AID_NDEF_APPLICATION,
  FILE_ID_CAPABILITY_CONTAINER,
  encodeCommandApdu,
  ndefWriteCommands,
  parseResponseApdu,
  readBinary,
  selectAid,
  selectFile,
  type CommandApdu,
} from '../../../../src/qa/sim/iso/apdu.js';
import { decodeDeviceEngagement } from '../../../../src/qa/sim/iso/device-engagement.js';
import { LeRole, MULTIPAZ_NFC_CARRIER, buildHandoverRequest, parseHandoverSelect } from '../../../../src/qa/sim/iso/handover.js';
import { parseNdefMessage, recordTypeText } from '../../../../src/qa/sim/iso/ndef.js';
import { buildServiceSelectMessage } from '../../../../src/qa/sim/iso/tnep.js';
import { VirtualRadio } from '../../../../src/qa/sim/radio/virtual-radio.js';
import {
  ANDROID_PROFILE,
  APPLE_WALLET_PROFILE,
  GOOGLE_WALLET_PROFILE,
  HandoverTag,
  MULTIPAZ_PROFILE,
  PHONE_PROFILES,
  PHONE_PROFILE_NAMES,
  SAMSUNG_WALLET_PROFILE,
  VirtualPhone,
  answerHandoverRequest,
  resolvePhoneProfile,
  staticHandoverSelect,
  type PhoneProfile,
  type VirtualNfcTag,
} from '../../../../src/qa/sim/virtual-wallet/index.js';
import { PhoneSettingsSchema } from '../../../../src/qa/wiring/phone-settings.js';
import {
  MULTIPAZ_BLE_UUID,
  MULTIPAZ_DEVICE_ENGAGEMENT_HEX,
  MULTIPAZ_STATIC_HS_HEX,
  MULTIPAZ_STATIC_TRANSCRIPT,
  hex,
  toHex,
} from '../iso/nfc-fixtures.js';
import {
  APPLE_CC_HEX,
  APPLE_HS_HEX,
  APPLE_TP_HEX,
  GOOGLE_CC_HEX,
  GOOGLE_HS_HEX,
  GOOGLE_TP_HEX,
  SAMSUNG_CC_HEX,
  SAMSUNG_HS_HEX,
} from './wallet-capture-fixtures.js';

const READER_UUID = 'c0ffee00-1234-4abc-8def-0123456789ab';
/** A reader's HR offering both BLE modes with its UUID (LE role 03, as isomdl's and the mock backend's). */
const HR_BOTH = buildHandoverRequest({ ble: { leRole: LeRole.BOTH_CENTRAL_PREFERRED, uuid: READER_UUID }, nfc: MULTIPAZ_NFC_CARRIER });

function captured(hsHex: string): { deviceEngagement: Uint8Array; uuid: string | undefined } {
  const hs = parseHandoverSelect(hex(hsHex));
  return { deviceEngagement: hs.deviceEngagement, uuid: hs.ble?.uuid };
}

describe('the Handover Select, byte for byte against the capture', () => {
  it('apple-wallet: Hs (one ac), BLE OOB `021c01` without UUID, DE 1.1 — APPLE_HS_NDEF; BLE on the HR UUID', () => {
    const { deviceEngagement, uuid } = captured(APPLE_HS_HEX);
    expect(uuid).toBeUndefined();
    const answer = answerHandoverRequest(APPLE_WALLET_PROFILE, deviceEngagement, '11111111-2222-4333-8444-555555555555', HR_BOTH);
    expect(toHex(answer.handoverSelect)).toBe(APPLE_HS_HEX);
    expect(answer).toMatchObject({ mode: 'centralClient', ble: { centralClientUuid: READER_UUID } });
  });

  it('google-wallet: Hs (one ac), DE 1.0, BLE OOB LE role 01 WITH its own UUID — test google_wallet; BLE on that UUID', () => {
    const { deviceEngagement, uuid } = captured(GOOGLE_HS_HEX);
    expect(uuid).toBe('e34db7dd-1b1e-4fdb-a402-c0b493579cb8');
    const answer = answerHandoverRequest(GOOGLE_WALLET_PROFILE, deviceEngagement, uuid ?? '', HR_BOTH);
    expect(toHex(answer.handoverSelect)).toBe(GOOGLE_HS_HEX);
    expect(answer).toMatchObject({ mode: 'centralClient', ble: { centralClientUuid: uuid } });
  });

  it('samsung-wallet: static Hs (one ac), BLE OOB role 01 + UUID + Appearance + Local Name, then DE 1.0 — test samsung_wallet', () => {
    const { deviceEngagement, uuid } = captured(SAMSUNG_HS_HEX);
    expect(uuid).toBe('bdc087ee-77c5-4987-a639-d109438e3c10');
    const built = staticHandoverSelect(SAMSUNG_WALLET_PROFILE, deviceEngagement, uuid ?? '');
    expect(toHex(built.handoverSelect)).toBe(SAMSUNG_HS_HEX);
    expect(built.ble).toEqual({ centralClientUuid: uuid });
  });

  it('multipaz: the testStaticHandover transcript replays byte for byte (both modes on one UUID, NFC carrier)', () => {
    const built = staticHandoverSelect(MULTIPAZ_PROFILE, hex(MULTIPAZ_DEVICE_ENGAGEMENT_HEX), MULTIPAZ_BLE_UUID);
    expect(toHex(built.handoverSelect)).toBe(MULTIPAZ_STATIC_HS_HEX);
    expect(built.ble).toEqual({ peripheralServerUuid: MULTIPAZ_BLE_UUID, centralClientUuid: MULTIPAZ_BLE_UUID });
    const tag = new HandoverTag({
      mode: 'static',
      capabilityContainer: MULTIPAZ_PROFILE.capabilityContainer,
      handoverSelect: built.handoverSelect,
    });
    for (const [index, exchange] of MULTIPAZ_STATIC_TRANSCRIPT.entries()) {
      expect(toHex(tag.processApdu(hex(exchange.command))), `response ${index}`).toBe(exchange.response.toLowerCase());
    }
  });
});

const apdu = (command: CommandApdu): Uint8Array => encodeCommandApdu(command);

function ok(tag: VirtualNfcTag, command: CommandApdu): Uint8Array {
  const response = parseResponseApdu(tag.processApdu(apdu(command)));
  expect(response.sw).toBe(0x9000);
  return response.data;
}

const nlenOf = (bytes: Uint8Array): number => ((bytes[0] ?? 0) << 8) | (bytes[1] ?? 0);

/** A reader's walk through the tag: CC, first NDEF message; negotiated: Ts, Te, HR, NLEN polls, HS. */
function walk(tag: VirtualNfcTag, negotiated: boolean): { cc: string; first: string; notReady: number; hs: Uint8Array } {
  ok(tag, { ...selectAid(AID_NDEF_APPLICATION), le: 0 });
  ok(tag, selectFile(FILE_ID_CAPABILITY_CONTAINER));
  const cc = toHex(ok(tag, readBinary(0, 15)));
  ok(tag, selectFile(0xe104));
  const readMessage = (): Uint8Array => ok(tag, readBinary(2, nlenOf(ok(tag, readBinary(0, 2)))));
  const first = readMessage();
  if (!negotiated) return { cc, first: toHex(first), notReady: 0, hs: first };
  for (const c of ndefWriteCommands(buildServiceSelectMessage())) ok(tag, c);
  expect(toHex(readMessage())).toBe('d10201546500'); // Te status 00 at once (both captures)
  for (const c of ndefWriteCommands(HR_BOTH)) ok(tag, c);
  let notReady = 0;
  let nlen = nlenOf(ok(tag, readBinary(0, 2)));
  for (; nlen === 0 && notReady < 20; nlen = nlenOf(ok(tag, readBinary(0, 2)))) notReady++;
  return { cc, first: toHex(first), notReady, hs: ok(tag, readBinary(2, nlen)) };
}

describe('what a reader reads from each wallet profile', () => {
  const radio = new VirtualRadio();
  const cases: readonly {
    profile: PhoneProfile;
    cc: string;
    tp?: string;
    notReady: number;
    records: readonly string[];
    leRole: number;
    ownUuid: boolean;
    de: '1.0' | '1.1';
  }[] = [
    {
      profile: APPLE_WALLET_PROFILE,
      cc: APPLE_CC_HEX,
      tp: APPLE_TP_HEX,
      notReady: 3,
      records: ['Hs', 'application/vnd.bluetooth.le.oob', 'iso.org:18013:deviceengagement'],
      leRole: LeRole.CENTRAL_ONLY,
      ownUuid: false,
      de: '1.1',
    },
    {
      profile: GOOGLE_WALLET_PROFILE,
      cc: GOOGLE_CC_HEX,
      tp: GOOGLE_TP_HEX,
      notReady: 0,
      records: ['Hs', 'iso.org:18013:deviceengagement', 'application/vnd.bluetooth.le.oob'],
      leRole: LeRole.CENTRAL_ONLY,
      ownUuid: true,
      de: '1.0',
    },
    {
      profile: SAMSUNG_WALLET_PROFILE,
      cc: SAMSUNG_CC_HEX,
      notReady: 0,
      records: ['Hs', 'application/vnd.bluetooth.le.oob', 'iso.org:18013:deviceengagement'],
      leRole: LeRole.CENTRAL_ONLY,
      ownUuid: true,
      de: '1.0',
    },
    {
      profile: MULTIPAZ_PROFILE,
      cc: '000f207fff7fff0406e1047fff00ff',
      notReady: 0,
      records: ['Hs', 'iso.org:18013:deviceengagement', 'application/vnd.bluetooth.le.oob', 'iso.org:18013:nfc'],
      leRole: LeRole.BOTH_CENTRAL_PREFERRED,
      ownUuid: true,
      de: '1.0',
    },
  ];

  for (const c of cases) {
    it(`${c.profile.name}: CC ${c.cc}, ${c.tp === undefined ? 'static' : `Tp ${c.tp.slice(-10)}, ${c.notReady} not-ready polls`}, HS records, LE role ${c.leRole}, DE ${c.de}`, async () => {
      const phone = await VirtualPhone.create({ profile: c.profile, radio });
      try {
        const negotiated = c.tp !== undefined;
        const { cc, first, notReady, hs } = walk(phone.tag(), negotiated);
        expect(cc).toBe(c.cc);
        if (negotiated) expect(first).toBe(c.tp);
        expect(notReady).toBe(c.notReady);
        expect(parseNdefMessage(hs).map(recordTypeText)).toEqual(c.records);
        const parsed = parseHandoverSelect(hs);
        expect(parsed.ble?.leRole).toBe(c.leRole);
        expect(parsed.ble?.uuid).toBe(c.ownUuid ? phone.presentation?.serviceUuid : undefined);
        expect(parsed.alternativeCarriers.map((ac) => ac.carrierDataReference)).toEqual(
          c.profile.nfcCarrier === undefined ? ['0'] : ['0', 'nfc'],
        );
        const de = decodeDeviceEngagement(parsed.deviceEngagement);
        expect(de.version).toBe(c.de);
        if (c.de === '1.1') {
          expect(de.originInfos).toEqual([]);
          expect(de.capabilities).toEqual(
            new Map([
              [3, true],
              [4, true],
            ]),
          );
        } else {
          expect(de.originInfos).toBeUndefined();
          expect(de.capabilities).toBeUndefined();
        }
        expect(phone.presentation?.handover).toMatchObject({ type: 'nfc' });
      } finally {
        await phone.stop();
      }
    });
  }

  it('samsung-wallet: its BLE OOB carries Appearance 0x19 `0040` and Local Name "Samsung Wallet" after the UUID', () => {
    const built = staticHandoverSelect(SAMSUNG_WALLET_PROFILE, hex(MULTIPAZ_DEVICE_ENGAGEMENT_HEX), MULTIPAZ_BLE_UUID);
    const ad = parseHandoverSelect(built.handoverSelect).ble?.adStructures.map((s) => [s.type, toHex(s.data)]);
    expect(ad).toEqual([
      [0x1c, '01'],
      [0x07, toHex(hex(MULTIPAZ_BLE_UUID.replaceAll('-', '')).reverse())],
      [0x19, '0040'],
      [0x09, toHex(new TextEncoder().encode('Samsung Wallet'))],
    ]);
  });

  it('a READ BINARY asking more than MLe gets MLe bytes (the CC bounds what the tag answers)', () => {
    const smallMle: PhoneProfile = {
      ...ANDROID_PROFILE,
      name: 'small-mle',
      capabilityContainer: { ...ANDROID_PROFILE.capabilityContainer, maxResponseDataSize: 0x20 },
    };
    const built = staticHandoverSelect(smallMle, hex(MULTIPAZ_DEVICE_ENGAGEMENT_HEX), MULTIPAZ_BLE_UUID);
    const tag = new HandoverTag({
      mode: 'static',
      capabilityContainer: smallMle.capabilityContainer,
      handoverSelect: built.handoverSelect,
    });
    ok(tag, selectAid(AID_NDEF_APPLICATION));
    ok(tag, selectFile(0xe104));
    expect(ok(tag, readBinary(2, 0xff))).toHaveLength(0x20);
    expect(ok(tag, readBinary(2, 0x10))).toHaveLength(0x10);
  });
});

describe('device authentication and timing', () => {
  it('each profile has its device-authentication kind: multipaz MAC, the others signature', () => {
    const kinds = Object.fromEntries(PHONE_PROFILE_NAMES.map((name) => [name, PHONE_PROFILES[name].deviceAuth ?? 'signature']));
    expect(kinds).toEqual({
      android: 'signature',
      iphone: 'signature',
      'apple-wallet': 'signature',
      'google-wallet': 'signature',
      'samsung-wallet': 'signature',
      multipaz: 'mac',
    });
  });

  it('the BLE start waits the profile delay after the HS was read (and never starts for a presentation stopped meanwhile)', async () => {
    const radio = new VirtualRadio();
    const delayed: PhoneProfile = { ...ANDROID_PROFILE, name: 'delayed', bleStartDelayMs: 60 };
    const phone = await VirtualPhone.create({ profile: delayed, radio });
    try {
      walk(phone.tag(), false);
      await new Promise((resolve) => setTimeout(resolve, 10));
      expect(phone.device.peripheral.advertising).toBeUndefined();
      await new Promise((resolve) => setTimeout(resolve, 120));
      expect(phone.device.peripheral.advertising?.serviceUuids).toEqual([phone.presentation?.serviceUuid.replaceAll('-', '')]);
      walk(phone.tag(), false); // a new presentation, stopped before its delay is over
      await phone.stop();
      await new Promise((resolve) => setTimeout(resolve, 120));
      expect(phone.device.peripheral.advertising).toBeUndefined();
    } finally {
      await phone.stop();
      radio.shutdown();
    }
  });
});

describe('every profile is offered wherever QA picks one', () => {
  it('the names, the profiles and resolvePhoneProfile agree; an unknown name lists them all', () => {
    expect(Object.keys(PHONE_PROFILES).sort()).toEqual([...PHONE_PROFILE_NAMES].sort());
    for (const name of PHONE_PROFILE_NAMES) expect(resolvePhoneProfile(name).name).toBe(name);
    expect(() => resolvePhoneProfile('nokia' as never)).toThrow(/android, iphone, apple-wallet, google-wallet, samsung-wallet, multipaz/);
  });

  it('the QA phone page has a radio button for each profile, and its settings schema accepts each', () => {
    const html = readFileSync(new URL('../../../../src/qa/phone-page/assets/index.html', import.meta.url), 'utf8');
    const values = [...html.matchAll(/<input type="radio" name="profile" value="([^"]+)"/g)].map((m) => m[1]);
    expect(values).toEqual([...PHONE_PROFILE_NAMES]);
    for (const profile of PHONE_PROFILE_NAMES) expect(PhoneSettingsSchema.shape.profile.safeParse(profile).success).toBe(true);
    expect(PhoneSettingsSchema.shape.profile.safeParse('nokia').success).toBe(false);
  });
});
