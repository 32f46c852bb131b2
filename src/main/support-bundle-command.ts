/**
 * `mdl-kiosk --support-bundle FILE`. A kiosk that runs keeps the reader, the radio and the single-instance
 * lock, so the command asks it: Electron hands this launch's arguments to the running app
 * (`second-instance`), which writes the bundle with its live state, devices and self-test, and this launch
 * waits for the file. When no kiosk runs, the bundle is made here from the configuration, the settings and
 * the records on disk, without opening a device or starting a kiosk.
 */
import { stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { App } from 'electron';
import type { Logger } from '../platform/log.js';
import type { KioskService, KioskServiceOptions } from '../service/kiosk-service.js';
import { shellSupport } from '../service/service-support.js';
import { appArguments, parseCommandLine } from './command-line.js';
import { errorText } from '../common/error-text.js';

/** How long the launch waits for the running kiosk to write the bundle. */
export const SUPPORT_BUNDLE_WAIT_MS = 60_000;

/** What the app adds to a bundle: its logs and its records (the browser host adds the same, src/host/cli.ts). */
export function appSupportFiles(dataDir: string, logsDir: string): ReturnType<NonNullable<KioskServiceOptions['support']>> {
  return shellSupport({
    dataDir,
    logDir: logsDir,
    healthFile: join(dataDir, 'health.json'),
    relaunchFile: join(dataDir, 'relaunches.json'),
  })();
}

/** The running app: a later launch with `--support-bundle FILE` has this kiosk write the bundle. */
export function answerSupportBundleLaunches(
  app: Pick<App, 'on'>,
  service: () => KioskService | undefined,
  defaultApp: boolean,
  log: Logger,
): void {
  app.on('second-instance', (_event: unknown, argv: string[], workingDirectory: string) => {
    const target = parseCommandLine(appArguments(argv, defaultApp)).supportBundle;
    const running = service();
    if (target === undefined || !running) return;
    running.writeSupportBundleTo(resolve(workingDirectory, target)).catch((e: unknown) => {
      log.error({ event: 'support_bundle_failed' }, `the support bundle could not be written: ${errorText(e)}`.slice(0, 500));
    });
  });
}

async function modifiedSince(path: string, since: number): Promise<boolean> {
  const info = await stat(path).catch(() => undefined);
  return info !== undefined && info.mtimeMs >= since;
}

export interface SupportBundleCommand {
  readonly app: Pick<App, 'requestSingleInstanceLock' | 'whenReady' | 'exit'>;
  readonly target: string;
  /** The service for a bundle when no kiosk runs (no devices, no kiosk). */
  readonly service: () => KioskService;
  readonly stdout: { write(text: string): unknown };
  readonly stderr: { write(text: string): unknown };
  readonly waitMs?: number;
  readonly now?: () => number;
}

export async function runSupportBundleCommand(command: SupportBundleCommand): Promise<void> {
  const now = command.now ?? Date.now;
  const target = resolve(command.target);
  const started = now() - 1_000;
  if (!command.app.requestSingleInstanceLock()) {
    // The running kiosk got our arguments: wait for its bundle.
    const deadline = now() + (command.waitMs ?? SUPPORT_BUNDLE_WAIT_MS);
    while (now() < deadline) {
      if (await modifiedSince(target, started)) {
        command.stdout.write(`mdl-kiosk: the running kiosk wrote its support bundle to ${target}\n`);
        command.app.exit(0);
        return;
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    command.stderr.write(
      `mdl-kiosk: the running kiosk did not write ${target} within ${Math.round((command.waitMs ?? SUPPORT_BUNDLE_WAIT_MS) / 1_000)} s (see its log)\n`,
    );
    command.app.exit(1);
    return;
  }
  await command.app.whenReady();
  const service = command.service();
  try {
    await service.start();
    const bundle = await service.writeSupportBundleTo(target);
    command.stdout.write(
      `mdl-kiosk: no kiosk is running; support bundle written from the records on disk to ${bundle.path} (${bundle.bytes} bytes)\n`,
    );
    await service.stop();
    command.app.exit(0);
  } catch (e) {
    await service.stop().catch(() => undefined);
    command.stderr.write(`mdl-kiosk: the support bundle could not be written: ${errorText(e)}\n`);
    command.app.exit(1);
  }
}
