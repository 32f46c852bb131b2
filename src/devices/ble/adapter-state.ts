/** Availability of a BLE adapter, shared by the noble and bleno adapters. */
import type { Availability } from '../ports.js';
import { AvailabilityNotifier } from '../shared/availability.js';

const ABSENT = new Set(['no_adapter', 'no_radio', 'unsupported_platform']);

/**
 * The next availability, except that an absent adapter does not turn into a switched-off one: without an
 * adapter, the hci bindings' 1 s device poll reports 'unsupported' and 'poweredOff' in turn (docs/ble-libraries.md
 * §1), which would otherwise flap the kiosk's device status every second.
 */
export function nextAvailability(previous: Availability, next: Availability): Availability {
  return next.reason === 'powered_off' && previous.reason !== undefined && ABSENT.has(previous.reason) ? previous : next;
}

/**
 * How long an adapter that is coming up may report itself switched off before the kiosk believes it. The
 * hci bindings report `poweredOff` while the controller has not answered its reset yet (over a UART the
 * device is down until then: `poweredOff`, then `poweredOn` some 20 ms later), and so does an adapter the
 * OS is resetting or a USB dongle still enumerating; 3 s is far above those and short enough that a
 * switched-off adapter is named as such before a customer waits on it.
 */
export const ADAPTER_SETTLE_MS = 3_000;

/**
 * A start-up state that means something more once it lasts (macOS: CoreBluetooth keeps `unknown` while the
 * Bluetooth permission prompt waits for an answer): after `afterMs` of it, `starting` carries `detail`.
 */
export interface LingeringStart {
  readonly afterMs: number;
  /** Whether the library's state now is the one that lingers. */
  readonly applies: () => boolean;
  readonly detail: string;
}

/**
 * How long CoreBluetooth may say `unknown` before staff are told to answer the permission prompt. Until the
 * prompt is answered the manager reports nothing or `CBManagerStateUnknown` (noble lib/mac/src/ble_manager.mm
 * `centralManagerDidUpdateState`, objc_cpp.mm `stateToString`; bleno ble_peripheral_manager.mm
 * `peripheralManagerDidUpdateState`), so the library's state stays `unknown`; a Mac that may use Bluetooth
 * answers within a second.
 */
export const MAC_PERMISSION_WAIT_MS = 3_000;

/** What staff read while that lasts. */
export const MAC_PERMISSION_DETAIL = 'waiting for Bluetooth permission (answer the macOS prompt)';

/** The lingering start of a mac binding (adapter-state.ts `LingeringStart`); none for the other bindings. */
export function macPermissionWait(binding: string, stateIsUnknown: () => boolean): LingeringStart | undefined {
  return binding === 'mac' ? { afterMs: MAC_PERMISSION_WAIT_MS, applies: stateIsUnknown, detail: MAC_PERMISSION_DETAIL } : undefined;
}

const COMING_UP: Availability = {
  usable: false,
  reason: 'starting',
  detail: 'the Bluetooth adapter is coming up (it reports powered off until its controller answers)',
};

/**
 * An adapter's availability from its library's state, with the start-up rule: until the adapter has
 * reached a settled state (on, unauthorized, absent, or off for `settleMs`), `powered_off` reads as
 * `starting`, since it is not yet known to be switched off. Start-up and `resetting` begin such a window.
 */
export class AdapterAvailability {
  private readonly notifier: AvailabilityNotifier;
  private settled = false;
  private comingUpSince: number;
  private timer: NodeJS.Timeout | undefined;
  private lingeringSince: number | undefined;
  private lingerTimer: NodeJS.Timeout | undefined;

  constructor(
    /** The library's current state, mapped (`availabilityOf`, `blenoAvailability`). */
    private readonly read: () => Availability,
    private readonly settleMs = ADAPTER_SETTLE_MS,
    private readonly now: () => number = Date.now,
    private readonly lingering?: LingeringStart,
  ) {
    this.comingUpSince = now();
    this.notifier = new AvailabilityNotifier(this.next(read()));
  }

  get current(): Availability {
    return this.notifier.current;
  }

  onChange(listener: (availability: Availability) => void): () => void {
    return this.notifier.onChange(listener);
  }

  /** The library reported a state change. */
  update(): void {
    this.notifier.set(this.next(this.read()));
  }

  /** Stops the settle timer (the adapter is closing). */
  dispose(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    clearTimeout(this.lingerTimer);
    this.lingerTimer = undefined;
  }

  private next(raw: Availability): Availability {
    const previous = this.notifier as AvailabilityNotifier | undefined;
    if (raw.reason === 'starting') {
      // unknown or resetting: a new start-up window
      this.settled = false;
      this.comingUpSince = this.now();
      return this.linger(raw);
    }
    this.lingeringSince = undefined;
    clearTimeout(this.lingerTimer);
    this.lingerTimer = undefined;
    if (raw.reason === 'powered_off' && !this.settled) {
      const left = this.settleMs - (this.now() - this.comingUpSince);
      if (left > 0) {
        if (this.timer === undefined) {
          this.timer = setTimeout(() => {
            this.timer = undefined;
            this.update();
          }, left);
          this.timer.unref();
        }
        return COMING_UP;
      }
    }
    this.settled = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    return previous ? nextAvailability(previous.current, raw) : raw;
  }

  /** `starting`, with the lingering detail once the lingering state has lasted `afterMs`. */
  private linger(raw: Availability): Availability {
    const lingering = this.lingering;
    if (!lingering?.applies()) {
      this.lingeringSince = undefined;
      return raw;
    }
    this.lingeringSince ??= this.now();
    const left = lingering.afterMs - (this.now() - this.lingeringSince);
    if (left <= 0) return { ...raw, detail: lingering.detail };
    if (this.lingerTimer === undefined) {
      this.lingerTimer = setTimeout(() => {
        this.lingerTimer = undefined;
        this.update();
      }, left);
      this.lingerTimer.unref();
    }
    return raw;
  }
}
