/**
 * Shared by the virtual BLE ports: availability (configured, overridden by the radio device's power: a
 * powered-off device is `powered_off`, as a real adapter reports it), the profile's characteristics and
 * abort helpers.
 */
import type { CharacteristicSpec, GattOperation } from '../../common/protocol/messages.js';
import type { GattProperty, RadioDevice } from '../sim/radio/virtual-radio.js';
import type { Availability, GattProfile } from '../../devices/ports.js';
import { AvailabilityNotifier } from '../../devices/shared/availability.js';

export { abortable, abortedError, errorMessage, isAborted } from '../../devices/shared/abort.js';

/** GATT property each spec operation maps to (what the peripheral builds, what the central requires). */
export const PROPERTY_OF: Readonly<Record<GattOperation, GattProperty>> = {
  read: 'read',
  write_without_response: 'writeWithoutResponse',
  notify: 'notify',
};

export type CharacteristicName = keyof GattProfile['characteristics'];

/** The profile's characteristics in a fixed order (state, c2s, s2c, ident). */
export function profileCharacteristics(profile: GattProfile): { readonly name: CharacteristicName; readonly spec: CharacteristicSpec }[] {
  const out: { name: CharacteristicName; spec: CharacteristicSpec }[] = [];
  for (const name of ['state', 'c2s', 's2c', 'ident'] as const) {
    const spec = profile.characteristics[name];
    if (spec) out.push({ name, spec });
  }
  return out;
}

export class VirtualAvailability {
  private configured: Availability;
  private readonly state: AvailabilityNotifier;

  constructor(
    private readonly device: RadioDevice,
    initial: Availability = { usable: true },
  ) {
    this.configured = initial;
    this.state = new AvailabilityNotifier(this.current());
    // Lives as long as the device: the port has no close() of its own.
    device.onPowerChange(() => this.state.set(this.current()));
  }

  current(): Availability {
    if (!this.device.powered) return { usable: false, reason: 'powered_off', detail: `virtual radio device ${this.device.name} is off` };
    return this.configured;
  }

  set(availability: Availability): void {
    this.configured = availability;
    this.state.set(this.current());
  }

  onChange(listener: (availability: Availability) => void): () => void {
    return this.state.onChange(listener);
  }
}

/** Availability of a virtual port: what QA configured, or `powered_off` while its radio device is off. */
export abstract class VirtualPort {
  private readonly state: VirtualAvailability;

  protected constructor(
    readonly device: RadioDevice,
    availability: Availability | undefined,
  ) {
    this.state = new VirtualAvailability(device, availability);
  }

  availability(): Availability {
    return this.state.current();
  }

  onAvailabilityChange(listener: (availability: Availability) => void): () => void {
    return this.state.onChange(listener);
  }

  /** Sets what `availability()` reports while the device is powered (QA: "Bluetooth off", "no adapter"). */
  setAvailability(availability: Availability): void {
    this.state.set(availability);
  }
}
