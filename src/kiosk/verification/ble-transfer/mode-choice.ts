/**
 * Which offered mode a verification uses: the first whose role is usable now. An adapter that is still
 * coming up is waited for (bounded) before the choice, so a scan that lands while it starts is neither
 * refused as `powered_off` nor passed to a later mode.
 */
import type { BleMode, BleRole } from '../../../common/protocol/messages.js';
import { TimeoutError } from '../../async-tools.js';
import type { Attempt } from '../attempt.js';

/**
 * How long a verification waits for an offered role whose adapter is still coming up (`starting`) before it
 * picks a mode. The adapters settle within 3 s (ADAPTER_SETTLE_MS: an adapter still off then is
 * `powered_off`); this bound is above that, and also bounded by `bleSetupMs`.
 */
export const ADAPTER_STARTING_WAIT_MS = 4_000;

/** The chosen mode, or why none of the offered ones can be used. */
export type ModeChoice = { readonly chosen: BleMode } | { readonly unusable: string };

/** The first offered mode whose role is usable now (after {@link whileStarting}, if any role is `starting`). */
export function chooseMode(attempt: Attempt, modes: readonly BleMode[]): ModeChoice {
  const chosen = modes.find((mode) => usable(attempt, mode.role).usable);
  if (chosen) return { chosen };
  const why = (['central', 'peripheral'] as const).map((role) => `${role} ${usable(attempt, role).reason}`).join(', ');
  return { unusable: `no offered BLE role is usable (${why})` };
}

/** An offered role's adapter is coming up: neither usable nor unusable yet. */
export function anyStarting(attempt: Attempt, modes: readonly BleMode[]): boolean {
  return modes.some((m) => usable(attempt, m.role).reason === 'starting');
}

/** Waits (bounded) until no offered role is `starting`. */
export async function whileStarting(attempt: Attempt, modes: readonly BleMode[]): Promise<void> {
  const { timeouts } = attempt.ctx;
  const starting = (): boolean => anyStarting(attempt, modes);
  const waitMs = Math.min(ADAPTER_STARTING_WAIT_MS, timeouts.bleSetupMs);
  attempt.ctx.log.info({ event: 'ble_adapter_starting', waitMs }, 'a Bluetooth adapter is coming up: waiting for it');
  let poll: NodeJS.Timeout | undefined;
  try {
    // Polled, not only listened to: change notifications are optional on the ports.
    await attempt.device(
      () =>
        new Promise<void>((resolve) => {
          const check = (): void => {
            if (starting()) return;
            clearInterval(poll);
            resolve();
          };
          poll = setInterval(check, 10);
        }),
      waitMs,
      'BLE adapter start',
    );
  } catch (e) {
    if (!(e instanceof TimeoutError)) throw e; // still starting at the bound: the choice says so
  } finally {
    clearInterval(poll);
  }
}

function usable(attempt: Attempt, role: BleRole): { usable: boolean; reason: string } {
  const { devices } = attempt.ctx;
  const port = role === 'central' ? devices.bleCentral : devices.blePeripheral;
  if (!port) return { usable: false, reason: 'not_configured' };
  try {
    const availability = port.availability();
    return { usable: availability.usable, reason: availability.reason ?? 'unavailable' };
  } catch {
    return { usable: false, reason: 'adapter_error' }; // an adapter that cannot even say is not usable
  }
}
