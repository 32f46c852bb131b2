/**
 * Which customer screen a state shows. One screen per core phase (the core owns the truth; the screen
 * only picks how to say it), plus `disconnected` before the first state or while the host is away, and
 * `waiting` when an outcome or error outlived its `clearsAt` and the screen hid it by itself.
 */
import type { ScreenState } from '../../common/kiosk-api.js';
import type { KioskPhase } from '../../common/kiosk-view.js';

export type CustomerScreen = 'disconnected' | 'waiting' | KioskPhase;
export type StaffScreen = 'staff_pin' | 'settings' | 'diagnostics';
export type ScreenName = CustomerScreen | StaffScreen;

export const CUSTOMER_SCREENS: readonly CustomerScreen[] = [
  'disconnected',
  'waiting',
  'starting',
  'connecting',
  'offline',
  'config_error',
  'ready',
  'engaging',
  'awaiting_card',
  'ble_connecting',
  'transferring',
  'result',
  'error',
  'remove_phone',
  'stopped',
];

export function customerScreenFor(state: ScreenState | null): CustomerScreen {
  return state ? state.view.phase : 'disconnected';
}

/** Screens where a verification is under way: they show the moving progress indicator. */
export function isInProgress(screen: CustomerScreen): boolean {
  return screen === 'engaging' || screen === 'awaiting_card' || screen === 'ble_connecting' || screen === 'transferring';
}

/**
 * The variant of an in-progress screen, from the transport and the core's prompt: reading the phone over
 * NFC, a QR just read, approving on the phone, receiving.
 */
export type ProgressVariant = 'nfc_reading' | 'qr_read' | 'engaging' | 'tap_again' | 'ble_connecting' | 'approve_on_phone' | 'receiving';

export function progressVariantFor(state: Pick<ScreenState, 'view'>): ProgressVariant | null {
  const { phase, transport, prompt } = state.view;
  switch (phase) {
    case 'engaging':
      return transport === 'nfc' ? 'nfc_reading' : transport === 'qr' ? 'qr_read' : 'engaging';
    case 'awaiting_card':
      return 'tap_again';
    case 'ble_connecting':
      return 'ble_connecting';
    case 'transferring':
      return prompt === 'approve_on_phone' ? 'approve_on_phone' : 'receiving';
    default:
      return null;
  }
}
