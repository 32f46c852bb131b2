/**
 * The operating system's own consent for the camera and Bluetooth (macOS TCC; Windows privacy settings).
 * On macOS the app asks for the camera before it loads the kiosk screen, so the system prompt appears
 * while nothing covers it (a full-screen kiosk window can hide it for good); the answer is shown to staff
 * (diagnostics), so "denied by the OS" and "restricted by a profile" are told apart from broken hardware.
 * A PPPC profile cannot grant the camera (Apple lets it only deny), so installers run
 * `mdl-kiosk --provision` once as the kiosk account: it asks for the camera and starts Bluetooth (which
 * brings up that prompt), says what each answered, and exits.
 * (electronjs.org/docs/latest/api/system-preferences: getMediaAccessStatus, askForMediaAccess.)
 */
import type { SystemPreferences } from 'electron';
import type { Logger } from '../platform/log.js';
import type { AppStatus } from '../common/kiosk-api.js';
import { errorText } from '../common/error-text.js';

export type CameraAccess = NonNullable<AppStatus['cameraAccess']>;
export type ConsentPreferences = Pick<SystemPreferences, 'getMediaAccessStatus' | 'askForMediaAccess'>;

/** The camera consent as the OS has it (`not_applicable` where the OS keeps none: Linux). */
export function cameraAccessStatus(prefs: ConsentPreferences, platform: NodeJS.Platform): CameraAccess {
  if (platform !== 'darwin' && platform !== 'win32') return 'not_applicable';
  try {
    const status = prefs.getMediaAccessStatus('camera');
    return status === 'not-determined'
      ? 'not_determined'
      : status === 'granted' || status === 'denied' || status === 'restricted'
        ? status
        : 'unknown';
  } catch {
    return 'unknown';
  }
}

/**
 * The camera consent, asked for on macOS when the OS has none yet (the system prompt; nothing else can
 * ask). Never throws: a failure to ask leaves the status as it is.
 */
export async function ensureCameraAccess(prefs: ConsentPreferences, platform: NodeJS.Platform, log: Logger): Promise<CameraAccess> {
  const before = cameraAccessStatus(prefs, platform);
  if (platform !== 'darwin' || before !== 'not_determined') {
    if (before === 'denied' || before === 'restricted')
      log.warn({ event: 'camera_consent', state: before }, 'the operating system does not let the kiosk use the camera');
    return before;
  }
  try {
    await prefs.askForMediaAccess('camera');
  } catch (e) {
    log.warn({ event: 'camera_consent_failed' }, `the camera consent could not be asked for: ${errorText(e)}`.slice(0, 300));
  }
  const after = cameraAccessStatus(prefs, platform);
  log.info({ event: 'camera_consent', state: after }, 'camera consent asked for');
  return after;
}

export interface ProvisionOptions {
  readonly app: { requestSingleInstanceLock(): boolean; whenReady(): Promise<void>; exit(code?: number): void };
  readonly prefs: ConsentPreferences;
  readonly platform: NodeJS.Platform;
  /** Sets up the Bluetooth roles (as the kiosk would), so the OS asks for its consent; closed after. */
  readonly bluetooth: () => Promise<{
    roles: () => Record<string, { usable: boolean; reason?: string | undefined }>;
    close(): Promise<void>;
  }>;
  readonly log: Logger;
  readonly stdout: { write(text: string): unknown };
  readonly stderr: { write(text: string): unknown };
  /** How long Bluetooth may take to leave `starting` (the user answering the prompt). */
  readonly bluetoothWaitMs?: number;
}

/** `mdl-kiosk --provision`: the OS consents asked for once, on the kiosk account, with no kiosk running. */
export async function runProvisioning(options: ProvisionOptions): Promise<void> {
  if (!options.app.requestSingleInstanceLock()) {
    options.stderr.write('mdl-kiosk: --provision: quit the running kiosk first (it holds the camera and the radio)\n');
    options.app.exit(1);
    return;
  }
  await options.app.whenReady();
  const camera = await ensureCameraAccess(options.prefs, options.platform, options.log);
  let roles: Record<string, { usable: boolean; reason?: string | undefined }> = {};
  try {
    const bluetooth = await options.bluetooth();
    const deadline = Date.now() + (options.bluetoothWaitMs ?? 30_000);
    roles = bluetooth.roles();
    while (Object.values(roles).some((r) => r.reason === 'starting') && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 250));
      roles = bluetooth.roles();
    }
    await bluetooth.close();
  } catch (e) {
    options.stderr.write(`mdl-kiosk: --provision: Bluetooth could not be set up: ${errorText(e)}\n`);
  }
  const lines = [
    `camera: ${camera.replace(/_/g, ' ')}`,
    ...Object.entries(roles).map(([role, a]) => `bluetooth ${role}: ${a.usable ? 'usable' : (a.reason ?? 'not usable')}`),
  ];
  options.stdout.write(`mdl-kiosk --provision\n${lines.map((l) => `  ${l}`).join('\n')}\n`);
  const cameraOk = camera === 'granted' || camera === 'not_applicable';
  const bluetoothOk = Object.values(roles).some((r) => r.usable);
  if (!cameraOk)
    options.stdout.write(
      '  The camera is not allowed: System Settings → Privacy & Security → Camera (macOS), or Settings → Privacy → Camera (Windows).\n',
    );
  if (!bluetoothOk)
    options.stdout.write(
      '  No Bluetooth role is usable: allow Bluetooth for the app (macOS: Privacy & Security → Bluetooth), and check the adapter.\n',
    );
  options.app.exit(cameraOk && bluetoothOk ? 0 : 1);
}
