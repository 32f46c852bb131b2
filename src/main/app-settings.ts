/**
 * What the shell needs to know of the configuration before the kiosk service has started: the `app`
 * section (kiosk mode, logs, start at login) and whether a backend is configured at all (the QA flavour
 * falls back to its embedded backend when none is). Same sources and precedence as the service (saved
 * settings aside, which hold no `app` keys); a broken configuration still yields a usable `app` section —
 * its own values when they are valid, else the defaults — and the service reports the problem on screen.
 */
import { AppConfig, KioskConfigSchema, mergeConfigSources, type KioskConfig } from '../platform/config.js';

export interface EarlyConfigSources {
  readonly file?: string;
  readonly env: NodeJS.ProcessEnv;
  readonly overrides?: Record<string, unknown>;
  readonly managed?: Record<string, unknown>;
  /** Keys honoured only from the managed file (a packaged production app). */
  readonly managedOnly?: readonly string[];
}

export interface EarlyConfig {
  readonly app: KioskConfig['app'];
  /** The shell's own log level (`log.level`; `info` when the configuration is broken). */
  readonly logLevel: KioskConfig['log']['level'];
  /** A backend URL is set by the file, the environment, the command line or the managed file. */
  readonly backendConfigured: boolean;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export function readEarlyConfig(sources: EarlyConfigSources): EarlyConfig {
  let merged: Record<string, unknown> = {};
  try {
    merged = mergeConfigSources({
      env: sources.env,
      ...(sources.file === undefined ? {} : { file: sources.file }),
      ...(sources.overrides ? { overrides: sources.overrides } : {}),
      ...(sources.managed ? { managed: sources.managed } : {}),
      ...(sources.managedOnly ? { managedOnly: sources.managedOnly } : {}),
    });
  } catch {
    // An unreadable file: the service names it on screen; the shell runs on the defaults.
  }
  const backend = merged.backend;
  const backendConfigured = isObject(backend) && typeof backend.baseUrl === 'string' && backend.baseUrl !== '';
  const whole = KioskConfigSchema.safeParse(merged);
  if (whole.success) return { app: whole.data.app, logLevel: whole.data.log.level, backendConfigured };
  const appOnly = AppConfig.safeParse(merged.app ?? {});
  return { app: appOnly.success ? appOnly.data : AppConfig.parse({}), logLevel: 'info', backendConfigured };
}
