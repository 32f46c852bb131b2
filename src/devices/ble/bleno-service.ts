/**
 * The one primary service a bleno session serves, built from the mode's characteristic specs: operations →
 * bleno properties (bleno adds the CCCD for `notify`), each characteristic's requests handed to the
 * session. bleno has no attribute permissions (docs/ble-libraries.md §4): the specs' permissions are
 * enforced where the requests are answered (bleno-requests.ts).
 */
import { uuidKey } from '../../common/protocol/uuid.js';
import type { CharacteristicSpec, GattOperation } from '../../common/protocol/messages.js';
import { BleSetupError, type GattProfile } from '../ports.js';
import { errorMessage } from '../shared/abort.js';
import { blenoUuid } from './bleno-support.js';
import type {
  Bleno,
  BlenoCharacteristic,
  BlenoConnection,
  BlenoPrimaryService,
  BlenoProperty,
  BlenoReadCallback,
  BlenoUpdateValueCallback,
  BlenoWriteCallback,
} from './bleno-types.js';

const PROPERTY_OF: Readonly<Record<GattOperation, BlenoProperty>> = {
  read: 'read',
  write_without_response: 'writeWithoutResponse',
  notify: 'notify',
};

/** One characteristic of the service. */
export interface Served {
  /** As the profile spells it (reported back in events). */
  readonly uuid: string;
  readonly key: string;
  readonly blenoUuid: string;
  readonly spec: CharacteristicSpec;
}

/** The profile's characteristics (state, c2s, s2c, then ident if any); a bad or repeated UUID is a `BleSetupError`. */
export function servedCharacteristics(profile: GattProfile): Served[] {
  const { state, c2s, s2c, ident } = profile.characteristics;
  const out: Served[] = [];
  const keys = new Set<string>();
  for (const spec of ident ? [state, c2s, s2c, ident] : [state, c2s, s2c]) {
    let stack: string;
    try {
      stack = blenoUuid(spec.uuid);
      blenoUuid(profile.serviceUuid);
    } catch (e) {
      throw new BleSetupError(`invalid UUID in the profile: ${errorMessage(e)}`);
    }
    const key = uuidKey(stack);
    if (keys.has(key)) throw new BleSetupError('the profile names one characteristic UUID twice');
    keys.add(key);
    out.push({ uuid: spec.uuid, key, blenoUuid: stack, spec });
  }
  return out;
}

/** Where bleno's callbacks for each characteristic go, with the characteristic they came to. */
export interface GattRequestHandlers {
  read(served: Served, connection: BlenoConnection, offset: number, callback: BlenoReadCallback): void;
  write(served: Served, connection: BlenoConnection, data: Buffer, offset: number, callback: BlenoWriteCallback): void;
  subscribe(served: Served, connection: BlenoConnection, maxValueSize: number, update: BlenoUpdateValueCallback): void;
  unsubscribe(served: Served, connection: BlenoConnection): void;
}

/** The primary service `serviceUuid` (bleno's spelling) with one characteristic per `served`, in order. */
export function primaryService(
  bleno: Bleno,
  serviceUuid: string,
  served: readonly Served[],
  handlers: GattRequestHandlers,
): BlenoPrimaryService {
  const characteristics = served.map((s) => characteristic(bleno, s, handlers));
  return new bleno.PrimaryService({ uuid: serviceUuid, characteristics });
}

function characteristic(bleno: Bleno, served: Served, handlers: GattRequestHandlers): BlenoCharacteristic {
  return new bleno.Characteristic({
    uuid: served.blenoUuid,
    properties: served.spec.operations.map((op) => PROPERTY_OF[op]),
    onReadRequest: (connection, offset, callback) => handlers.read(served, connection, offset, callback),
    onWriteRequest: (connection, data, offset, withoutResponse, callback) => handlers.write(served, connection, data, offset, callback),
    onSubscribe: (connection, maxValueSize, update) => handlers.subscribe(served, connection, maxValueSize, update),
    onUnsubscribe: (connection) => handlers.unsubscribe(served, connection),
  });
}
