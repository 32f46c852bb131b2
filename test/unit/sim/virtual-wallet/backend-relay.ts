/**
 * A minimal in-test relay between the mock backend's ISO reader engine and a virtual phone (what the kiosk
 * does, without the WebSocket): APDUs to the tag, `ble_write`s as GATT writes or notifications,
 * notifications / writes / reads back to the engine. Shared by the interop tests.
 */
import { expect } from 'vitest';
import { createIsoReaderEngineFactory } from '../../../../src/qa/sim/mock-backend/reader/index.js';
import type { BleActions, ReaderEngine } from '../../../../src/qa/sim/mock-backend/engine.js';
import type { BleModeWire, OutcomeWire } from '../../../../src/qa/sim/mock-backend/wire.js';
import { VirtualRadio, sameUuid, type RadioDevice } from '../../../../src/qa/sim/radio/virtual-radio.js';
import {
  VirtualPhone,
  type PhoneBehaviour,
  type PhoneProfile,
  type PhoneProfileName,
  type PresentationOutcome,
} from '../../../../src/qa/sim/virtual-wallet/index.js';
import { NS, until } from './reader-fixtures.js';

export const REQUEST = { [NS]: ['family_name', 'given_name', 'birth_date', 'portrait', 'driving_privileges', 'age_over_21'] };

export interface Rig {
  readonly radio: VirtualRadio;
  readonly phones: VirtualPhone[];
}

/** A fresh radio per test; `stopRig` stops every phone made on it. */
export function createRig(): Rig {
  return { radio: new VirtualRadio(), phones: [] };
}

export async function stopRig(rig: Rig): Promise<void> {
  for (const phone of rig.phones.splice(0)) await phone.stop();
  rig.radio.shutdown();
}

export interface RelayResult {
  readonly outcome: OutcomeWire | undefined;
  readonly failure: string | undefined;
  readonly phone: PresentationOutcome;
  readonly role: 'central' | 'peripheral';
}

/** Carries the engine's BLE steps to the phone in `role`; resolves with the engine's verdict and the phone's outcome. */
export async function relayBle(
  engine: ReaderEngine,
  modes: BleModeWire[],
  role: 'central' | 'peripheral',
  kiosk: RadioDevice,
  phone: VirtualPhone,
): Promise<RelayResult> {
  const mode = modes.find((m) => m.role === role);
  if (mode === undefined) throw new Error(`no ${role} mode offered: ${JSON.stringify(modes.map((m) => m.role))}`);
  let outcome: OutcomeWire | undefined;
  let failure: string | undefined;
  let chain = Promise.resolve();
  let write: (char: string, data: Uint8Array) => Promise<void> = () => Promise.resolve();
  const act = async (actions: BleActions): Promise<void> => {
    for (const w of actions.writes) await write(w.char, w.data);
    if (actions.outcome) outcome = actions.outcome;
    if (actions.failure !== undefined) failure = actions.failure;
  };
  const serial = (step: () => Promise<BleActions>): void => {
    chain = chain.then(async () => act(await step()));
  };
  if (role === 'central') {
    const report = await kiosk.central.scanFor(mode.service_uuid, { signal: AbortSignal.timeout(3_000) });
    const link = await kiosk.central.connect(report.peripheral.id);
    link.onNotification((event) => serial(() => engine.bleNotified(event.characteristicUuid, event.data)));
    await link.subscribe(mode.service_uuid, mode.characteristics.state.uuid);
    await link.subscribe(mode.service_uuid, mode.characteristics.s2c.uuid);
    write = (char, data) => link.write(mode.service_uuid, char, data, { withoutResponse: true });
    serial(() => engine.bleConnected('central'));
  } else {
    let handle: number | undefined;
    let connected = false;
    const first = (): void => {
      if (connected) return;
      connected = true;
      // The kiosk sends ble_connected before it forwards the event (spec §4.5), so the engine
      // knows its role when the Ident read arrives.
      const actions = engine.bleConnected('peripheral');
      serial(() => actions);
    };
    const chars = mode.characteristics;
    const props = (ops: readonly string[]): ('read' | 'writeWithoutResponse' | 'notify')[] =>
      ops.map((op) => (op === 'write_without_response' ? 'writeWithoutResponse' : (op as 'read' | 'notify')));
    kiosk.peripheral.setServices(
      [
        {
          uuid: mode.service_uuid,
          characteristics: [chars.state, chars.c2s, chars.s2c, ...(chars.ident ? [chars.ident] : [])].map((c) => ({
            uuid: c.uuid,
            properties: props(c.operations),
          })),
        },
      ],
      {
        onConnect: (connection) => (handle = connection.handle),
        onSubscribe: () => first(),
        onRead: (request) => {
          first();
          return engine.bleReadRequest(request.characteristicUuid).subarray(request.offset);
        },
        onWrite: (request) => {
          first();
          serial(() => engine.bleWritten(request.characteristicUuid, request.data));
        },
      },
    );
    await kiosk.peripheral.startAdvertising({ serviceUuids: [mode.service_uuid] });
    write = async (char, data) => {
      await until(() => handle !== undefined && kiosk.peripheral.isSubscribed(handle, mode.service_uuid, char));
      await kiosk.peripheral.notify(handle ?? 0, mode.service_uuid, char, data);
      if (sameUuid(char, chars.state.uuid)) await kiosk.peripheral.stopAdvertising();
    };
  }
  const phoneOutcome = await phone.outcome;
  await until(() => outcome !== undefined || failure !== undefined, 3_000, 'the engine verdict');
  return { outcome, failure, phone: phoneOutcome, role };
}

async function setUp(
  rig: Rig,
  profile: PhoneProfileName | PhoneProfile,
  behaviour: PhoneBehaviour = {},
): Promise<{ phone: VirtualPhone; engine: ReaderEngine; kiosk: RadioDevice }> {
  const radio = rig.radio;
  const phone = await VirtualPhone.create({ profile, radio, behaviour });
  rig.phones.push(phone);
  const factory = createIsoReaderEngineFactory({
    trustedIacaCertificates: [phone.credential.pki.iaca.der],
    delay: () => Promise.resolve(),
  });
  const engine = factory({ sessionId: 'interop', namespaces: { [NS]: [...REQUEST[NS]] } });
  return { phone, engine, kiosk: radio.addDevice({ name: 'kiosk' }) };
}

export async function viaQr(
  rig: Rig,
  profile: PhoneProfileName | PhoneProfile,
  role: 'central' | 'peripheral',
  behaviour: PhoneBehaviour = {},
): Promise<RelayResult> {
  const { phone, engine, kiosk } = await setUp(rig, profile, behaviour);
  const engagement = await engine.qrScanned(phone.presentQr());
  if (engagement.kind !== 'modes') throw new Error(engagement.reason);
  return relayBle(engine, engagement.modes, role, kiosk, phone);
}

export async function viaNfc(
  rig: Rig,
  profile: PhoneProfileName | PhoneProfile,
  role: 'central' | 'peripheral',
  behaviour: PhoneBehaviour = {},
): Promise<RelayResult> {
  const { phone, engine, kiosk } = await setUp(rig, profile, behaviour);
  const tag = phone.tag();
  let step = engine.nfcStart();
  while (step.kind === 'apdu') step = await engine.nfcResponse(tag.processApdu(step.apdu));
  if (step.kind === 'failed') throw new Error(step.reason);
  return relayBle(engine, step.modes, role, kiosk, phone);
}

/** The engine verified everything asked for and the phone shared, then saw the reader's State 0x02. */
export function expectValid(result: RelayResult): void {
  expect(result.failure).toBeUndefined();
  expect(result.outcome).toMatchObject({
    issuer_authentication: 'Valid',
    device_authentication: 'Valid',
    errors: {},
    doc_types: ['org.iso.18013.5.1.mDL'],
  });
  expect(Object.keys(result.outcome?.response[NS] ?? {}).sort()).toEqual([...REQUEST[NS]].sort());
  expect(result.phone).toMatchObject({ kind: 'shared', ending: 'state_end' });
}
