/**
 * The app's command line: `--config FILE`, `--data-dir DIR`, `--log-level L`, `--no-kiosk` (QA flavour or
 * an unpackaged run only), `--help`. Chromium's and Electron's own switches may share the command line,
 * so nothing here throws: unknown options and bad values become `problems`, which the app prints on
 * stderr and logs, and the app runs on with what it understood.
 */
import { parseArgs } from 'node:util';
import { z } from 'zod';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

export const USAGE = `Usage: mdl-kiosk [options]

Options:
  --config FILE      JSON configuration file (else MDL_KIOSK_CONFIG, else config.json in the data folder)
  --data-dir DIR     the app's data folder (settings, secrets, health.json); default: the OS's app data folder
  --log-level LEVEL  ${LOG_LEVELS.join('|')}
  --no-kiosk         a normal window instead of kiosk mode (QA flavour and development runs only)
  --provision        ask the operating system's camera and Bluetooth consents once (run as the kiosk
                     account, with no kiosk running), say what each answered, and exit
  --support-bundle FILE
                     write a support bundle (.tar.gz, no personal data, no secrets) to FILE and exit:
                     the running kiosk writes it (live device states and self-test); when none runs,
                     it is made from the configuration and the records on disk
  -h, --help         this text`;

const Values = z
  .object({
    config: z.string().min(1, { error: '--config takes a file name' }).optional(),
    'data-dir': z.string().min(1, { error: '--data-dir takes a directory' }).optional(),
    'log-level': z.enum(LOG_LEVELS, { error: `--log-level takes ${LOG_LEVELS.join(' | ')}` }).optional(),
    'no-kiosk': z.boolean({ error: '--no-kiosk takes no value' }).optional(),
    'support-bundle': z.string().min(1, { error: '--support-bundle takes a file name' }).optional(),
    provision: z.boolean({ error: '--provision takes no value' }).optional(),
    help: z.boolean({ error: '--help takes no value' }).optional(),
  })
  .strip();

export interface CommandLine {
  readonly configFile?: string;
  readonly dataDir?: string;
  readonly logLevel?: (typeof LOG_LEVELS)[number];
  readonly noKiosk: boolean;
  readonly help: boolean;
  /** `--support-bundle FILE`: write a support bundle there and exit. */
  readonly supportBundle?: string;
  /** `--provision`: ask the OS consents (camera, Bluetooth) and exit. */
  readonly provision: boolean;
  /** What was not understood, in words for stderr and the log. */
  readonly problems: readonly string[];
}

/**
 * The app's own arguments: Electron's argv is `[exe, ...args]` for an installed app and
 * `[electron, appPath, ...args]` for an unpackaged run (`process.defaultApp`).
 */
export function appArguments(argv: readonly string[], defaultApp: boolean): string[] {
  return argv.slice(defaultApp ? 2 : 1);
}

export function parseCommandLine(args: readonly string[]): CommandLine {
  const problems: string[] = [];
  const { values, tokens } = parseArgs({
    args: [...args],
    strict: false,
    allowPositionals: true,
    tokens: true,
    options: {
      config: { type: 'string' },
      'data-dir': { type: 'string' },
      'log-level': { type: 'string' },
      'no-kiosk': { type: 'boolean' },
      'support-bundle': { type: 'string' },
      provision: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const known = new Set(['config', 'data-dir', 'log-level', 'no-kiosk', 'support-bundle', 'provision', 'help', 'h']);
  for (const token of tokens) {
    // Chromium and Electron read their own switches (--ozone-platform, --password-store, …) from the same
    // command line: not ours, so not used here, but not necessarily ignored by the app.
    if (token.kind === 'option' && !known.has(token.name))
      problems.push(`${token.rawName.slice(0, 60)} is not an mDL Kiosk option (left to Electron/Chromium)`);
    if (
      token.kind === 'option' &&
      known.has(token.name) &&
      !['no-kiosk', 'provision', 'help', 'h'].includes(token.name) &&
      token.value === undefined
    ) {
      problems.push(`${token.rawName} needs a value (ignored)`);
    }
    if (token.kind === 'positional') problems.push(`unexpected argument ${JSON.stringify(token.value.slice(0, 60))} (ignored)`);
  }
  // Values of the wrong type (e.g. `--no-kiosk=yes`) and bad values are dropped one by one.
  const candidate: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(values)) {
    if (!known.has(name)) continue;
    const single = Values.safeParse({ [name]: value });
    if (single.success) candidate[name] = value;
    else if (value !== undefined && !problems.some((p) => p.startsWith(`--${name} needs`)))
      problems.push(`${single.error.issues[0]?.message ?? `--${name}: invalid value`} (ignored)`);
  }
  const parsed = Values.parse(candidate);
  return {
    ...(parsed.config === undefined ? {} : { configFile: parsed.config }),
    ...(parsed['data-dir'] === undefined ? {} : { dataDir: parsed['data-dir'] }),
    ...(parsed['log-level'] === undefined ? {} : { logLevel: parsed['log-level'] }),
    noKiosk: parsed['no-kiosk'] === true,
    help: parsed.help === true,
    provision: parsed.provision === true,
    ...(parsed['support-bundle'] === undefined ? {} : { supportBundle: parsed['support-bundle'] }),
    problems,
  };
}
