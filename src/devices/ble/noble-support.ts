/**
 * Platform facts the noble adapter normalises (docs/ble-libraries.md §3, §6): which binding reports what MTU, how
 * adapter states map to the kiosk's availability keys, and readable disconnect reasons.
 */
import type { AdapterState, CharacteristicProperty, DisconnectReason } from '@stoprocent/noble';
import type { CharacteristicSpec, GattOperation } from '../../common/protocol/messages.js';
import type { Availability, GattProfile } from '../ports.js';
import { currentPlatform, osCapabilities } from '../../platform/os.js';
import { errorText } from '../../common/error-text.js';

/** The noble binding in use: what `peripheral.mtu` means depends on it (docs/ble-libraries.md §3). */
export type NobleBindingKind = 'hci' | 'dbus' | 'mac' | 'win';

/**
 * The binding stoprocent's `lib/resolve-bindings.js` (`getDefaultBindings`) builds for the default instance,
 * by the same rules: `NOBLE_BINDINGS` (dbus, hci, mac, win) wins; then hci on Linux and FreeBSD, or wherever
 * an HCI UART (`BLUETOOTH_HCI_SOCKET_UART_PORT`, `BLUETOOTH_HCI_SOCKET_FORCE_UART`) or a USB dongle
 * (`BLUETOOTH_HCI_SOCKET_USB_VID` with `_PID`) is named; else mac on macOS, win on Windows
 * (docs/ble-libraries.md §2). It decides what `peripheral.mtu` means, so it must follow the env too.
 */
export function defaultBindingKind(platform: NodeJS.Platform = currentPlatform(), env: NodeJS.ProcessEnv = process.env): NobleBindingKind {
  const requested = (env.NOBLE_BINDINGS ?? '').toLowerCase();
  if (requested === 'dbus' || requested === 'hci' || requested === 'mac' || requested === 'win') return requested;
  const hciAsked =
    Boolean(env.BLUETOOTH_HCI_SOCKET_UART_PORT) ||
    Boolean(env.BLUETOOTH_HCI_SOCKET_FORCE_UART) ||
    (Boolean(env.BLUETOOTH_HCI_SOCKET_USB_VID) && Boolean(env.BLUETOOTH_HCI_SOCKET_USB_PID));
  return hciAsked ? 'hci' : osCapabilities(platform).nobleBinding;
}

/**
 * What the mac and win bindings throw for every call once their manager is gone (`stop()`, or never
 * started): `CHECK_MANAGER` in lib/mac/src/noble_mac.mm and lib/win/src/noble_winrt.cc, "<Fn>: BLEManager
 * has already been cleaned up". The QA bindings throw the same words after `stop()`.
 */
const STOPPED_BINDING = /BLEManager has already been cleaned up/;

/** The availability of a central whose binding has been stopped under it (a call threw `STOPPED_BINDING`), or undefined. */
export function stoppedBindingAvailability(error: unknown): Availability | undefined {
  const message = errorText(error);
  if (!STOPPED_BINDING.test(message)) return undefined;
  return {
    usable: false,
    reason: 'adapter_error',
    detail: 'the Bluetooth stack was stopped under the kiosk (restart the kiosk to use the central again)',
  };
}

/** ATT MTU with the ATT header: the smallest ATT_MTU (Core Vol 3 Part F §3.2.8). */
const MIN_ATT_MTU = 23;

/**
 * `peripheral.mtu` as an ATT_MTU: hci and win report the ATT MTU, mac reports the payload size
 * (ATT_MTU − 3), dbus never sets it; `null` or nonsense → unknown (docs/ble-libraries.md §3).
 */
export function normaliseMtu(reported: number | null | undefined, binding: NobleBindingKind): number | undefined {
  if (typeof reported !== 'number' || !Number.isInteger(reported) || reported <= 0 || binding === 'dbus') return undefined;
  const attMtu = binding === 'mac' ? reported + 3 : reported;
  return attMtu >= MIN_ATT_MTU ? attMtu : undefined;
}

/** noble's adapter state as the kiosk's availability (reason keys: ports.ts `Availability`). */
export function availabilityOf(state: AdapterState, binding: NobleBindingKind): Availability {
  switch (state) {
    case 'poweredOn':
      return { usable: true };
    case 'poweredOff':
      return { usable: false, reason: 'powered_off', detail: 'the Bluetooth adapter is powered off' };
    case 'unauthorized':
      return { usable: false, reason: 'unauthorized', detail: 'the kiosk is not allowed to use Bluetooth' };
    case 'unsupported':
      // hci/dbus: no hciX, or a controller without LE; mac: CoreBluetooth reports no LE on this Mac.
      if (binding === 'hci' || binding === 'dbus')
        return { usable: false, reason: 'no_adapter', detail: `no Bluetooth LE adapter (${binding} binding)` };
      // win: the binding says unsupported whenever WinRT gives it no radio (lib/win/src/ble_manager.cc
      // `OnRadio`; radio_watcher.cc `OnRadioChanged`: no default adapter, or the call failed): a stopped
      // Bluetooth service (bthserv) or a removed dongle, far more often than a PC without LE.
      if (binding === 'win') return { usable: false, reason: 'no_radio', detail: WIN_NO_RADIO };
      return { usable: false, reason: 'unsupported_platform', detail: `Bluetooth LE is not supported here (${binding} binding)` };
    case 'resetting':
      return { usable: false, reason: 'starting', detail: 'the Bluetooth adapter is resetting' };
    case 'unknown':
      return { usable: false, reason: 'starting', detail: 'the Bluetooth adapter state is not known yet' };
  }
}

/** What staff read for the win binding's `unsupported` (see `availabilityOf`). */
export const WIN_NO_RADIO = 'the Bluetooth service is stopped or the adapter is missing (win binding)';

const HCI_REASONS: Readonly<Record<number, string>> = {
  0x08: 'connection timeout',
  0x13: 'remote user terminated connection',
  0x15: 'remote device terminated connection due to power off',
  0x16: 'connection terminated by local host',
  0x3e: 'connection failed to be established',
};

/** hci reports numeric HCI status codes, other bindings and noble's own cleanup strings. */
export function disconnectReasonText(reason: DisconnectReason | undefined): string {
  if (typeof reason === 'number') {
    const code = `0x${reason.toString(16).padStart(2, '0')}`;
    return `${HCI_REASONS[reason] ?? 'HCI status'} (${code})`;
  }
  if (reason === 'cleanup') return 'the Bluetooth adapter stopped (cleanup)';
  return reason === undefined || reason === '' ? 'unknown' : reason;
}

/** The noble property each spec operation needs on the phone's characteristic. */
export const NOBLE_PROPERTY_OF: Readonly<Record<GattOperation, CharacteristicProperty>> = {
  read: 'read',
  write_without_response: 'writeWithoutResponse',
  notify: 'notify',
};

export type CharacteristicName = keyof GattProfile['characteristics'];

/** The profile's characteristics in a fixed order (state, c2s, s2c, ident): subscriptions follow it. */
export function profileEntries(profile: GattProfile): { readonly name: CharacteristicName; readonly spec: CharacteristicSpec }[] {
  const out: { name: CharacteristicName; spec: CharacteristicSpec }[] = [];
  for (const name of ['state', 'c2s', 's2c', 'ident'] as const) {
    const spec = profile.characteristics[name];
    if (spec) out.push({ name, spec });
  }
  return out;
}
