/**
 * The configuration a launch starts from, read before Electron is ready (some of it, hardware
 * acceleration, only takes effect then): the data folder, the managed file, the configuration file and the
 * command line's overrides, and the shell's early view of them (`app-settings.ts`).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { ManagedConfig } from '../service/managed-config.js';
import { readManagedConfig } from '../service/managed-config.js';
import { readEarlyConfig, type EarlyConfig } from './app-settings.js';
import type { CommandLine } from './command-line.js';

export interface LaunchConfig {
  readonly managed: ManagedConfig;
  /** The configuration file to read, if any. */
  readonly configFile: string | undefined;
  /** What the command line sets (log level, kiosk mode off). */
  readonly overrides: Record<string, unknown>;
  readonly early: EarlyConfig;
}

/** The configuration file: `--config`, else none when MDL_KIOSK_CONFIG names one (the loader reads it), else the data folder's `config.json` if there is one. */
export function appConfigFile(cli: CommandLine, dataDir: string, env: NodeJS.ProcessEnv): string | undefined {
  const userConfig = join(dataDir, 'config.json');
  return cli.configFile ?? (env.MDL_KIOSK_CONFIG || !existsSync(userConfig) ? undefined : userConfig);
}

export function readLaunchConfig(options: {
  readonly cli: CommandLine;
  readonly dataDir: string;
  readonly env: NodeJS.ProcessEnv;
  readonly managedConfigFile: string;
  /** The QA flavour or an unpackaged run: `--no-kiosk` is honoured. */
  readonly development: boolean;
  readonly managedOnly: readonly string[] | undefined;
}): LaunchConfig {
  const { cli, env, managedOnly } = options;
  const managed = readManagedConfig(options.managedConfigFile);
  const configFile = appConfigFile(cli, options.dataDir, env);
  const overrides: Record<string, unknown> = {
    ...(cli.logLevel === undefined ? {} : { log: { level: cli.logLevel } }),
    ...(cli.noKiosk && options.development ? { app: { kioskMode: false } } : {}),
  };
  const early = readEarlyConfig({
    env,
    overrides,
    managed: managed.layer,
    ...(configFile === undefined ? {} : { file: configFile }),
    ...(managedOnly ? { managedOnly } : {}),
  });
  return { managed, configFile, overrides, early };
}
