/**
 * The chosen mode's characteristics by UUID, whatever spelling the phone's stack gives the UUID: which one
 * (state, c2s, s2c, ident) a value is on, and the spelling the backend used in `ble_exchange`.
 */
import type { BleMode } from '../../../common/protocol/messages.js';
import { uuidKey } from '../../../common/protocol/uuid.js';
import type { KnownCharacteristic } from '../ble-common.js';

/** Bounded: a misbehaving peer must not grow the index without limit. */
const MAX_INDEXED_SPELLINGS = 64;

export class CharacteristicIndex {
  private mode: BleMode | undefined;
  /** Characteristics of the chosen mode by UUID spelling, filled as UUIDs are seen. */
  private readonly bySpelling = new Map<string, KnownCharacteristic | null>();

  /** The mode is chosen once per transfer; before it no UUID is known. */
  use(mode: BleMode): void {
    this.mode = mode;
  }

  specFor(uuid: string): KnownCharacteristic | undefined {
    const cached = this.bySpelling.get(uuid);
    if (cached !== undefined) return cached ?? undefined;
    const chars = this.mode?.characteristics;
    if (!chars) return undefined;
    const key = uuidKey(uuid);
    let found: KnownCharacteristic | null = null;
    for (const name of ['state', 'c2s', 's2c', 'ident'] as const) {
      const spec = chars[name];
      if (spec && uuidKey(spec.uuid) === key) {
        found = { name, spec };
        break;
      }
    }
    if (this.bySpelling.size < MAX_INDEXED_SPELLINGS) this.bySpelling.set(uuid, found);
    return found ?? undefined;
  }

  /** The UUID spelled as the backend spelled it in `ble_exchange`, for messages back to it. */
  backendUuid(uuid: string): string {
    return this.specFor(uuid)?.spec.uuid ?? uuid;
  }
}
