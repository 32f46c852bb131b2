/**
 * The QA flavour's hook for running with nothing configured: an embedded mock backend and a virtual
 * counter (virtual reader, Bluetooth and phone), started in the main process, with a virtual phone page
 * QA opens in a second window. Defined here, implemented by the QA entry (src/qa/app/embedded-default.ts), so that
 * production code never imports QA code (docs/ARCHITECTURE.md, *The QA cut line*): the production entry simply has none.
 */
import { dispatchIntent, QrScannedResult, type KioskApiHandlers, type ScreenState } from '../common/kiosk-api.js';
import type { Logger } from '../platform/log.js';
import type { DeviceFactory } from '../service/kiosk-service.js';

/** The running kiosk, as the phone page reaches it (bound once the service exists). */
export interface EmbeddedKioskLink {
  /** "Scan it" on the phone page: the kiosk's own `qrScanned` intent, validated like the screen's. */
  scan(text: string): Promise<{ readonly accepted: boolean; readonly reason?: string }>;
  /** The kiosk's phase, shown on the phone page (no personal data). */
  phase(): string | undefined;
}

export interface EmbeddedSetup {
  readonly devices: DeviceFactory;
  readonly backendOverride: { readonly baseUrl: string; readonly apiKey: string };
  /** The virtual phone page (loopback, with its token in the fragment). */
  readonly phonePageUrl: string;
  /** The staff PIN of this run (printed on stdout, never logged). */
  readonly staffPin: string;
  stop(): Promise<void>;
}

export interface EmbeddedDefault {
  /** Starts the embedded mock backend + virtual counter. */
  start(log: Logger, kiosk: EmbeddedKioskLink): Promise<EmbeddedSetup>;
}

/** The link the phone page uses, bound to the service once it exists (`service()` is undefined before). */
export function kioskLink(
  service: () => (KioskApiHandlers & { staffUnlocked(): boolean; state(): ScreenState }) | undefined,
): EmbeddedKioskLink {
  return {
    async scan(text) {
      const kiosk = service();
      if (!kiosk) return { accepted: false, reason: 'not_waiting' };
      // Through the same dispatcher as the screen's own scans: same validation, same rules.
      return QrScannedResult.parse(await dispatchIntent(kiosk, 'qrScanned', { text, source: 'scanner' }, () => kiosk.staffUnlocked()));
    },
    phase: () => service()?.state().view.phase,
  };
}

/** What QA at the desk needs, for stdout only: never for the log (the PIN opens the staff screens). */
export function embeddedBanner(setup: Pick<EmbeddedSetup, 'phonePageUrl' | 'staffPin'>): string {
  return [
    '',
    'mDL Kiosk (QA flavour, TEST MODE: embedded mock backend, virtual phone)',
    `  Virtual phone:  ${setup.phonePageUrl}`,
    `  Staff PIN:      ${setup.staffPin}`,
    '',
    '',
  ].join('\n');
}
