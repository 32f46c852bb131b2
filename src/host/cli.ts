/**
 * `npm run host -- [options]`: the production browser host on this machine's configured devices (PC/SC
 * reader, Bluetooth, the screen's camera and scanners). Prints the page URL (with its per-launch token)
 * on stdout; open it in Chromium on the same machine. With `--url-file` the token goes only into that
 * file (0600): stdout of a service ends up in the journal, which other users may read. SIGINT / SIGTERM
 * stop everything.
 *
 * `--set-pin` sets the staff PIN and exits: from `MDL_KIOSK_STAFF_PIN` (provisioning scripts) or typed
 * twice without echo (or one line on a non-terminal stdin).
 */
import { forkVoiceLauncher } from '../devices/speech/voice-launcher.js';
import { homedir } from 'node:os';
import { join, resolve as resolvePath } from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { configuredDeviceFactory } from '../service/configured-devices.js';
import { mergeConfigSources, parseConfig } from '../platform/config.js';
import { createLogger } from '../platform/log.js';
import { openLogFiles, type LogFiles } from '../service/log-files.js';
import { shellSupport } from '../service/service-support.js';
import { writeFileAtomic } from '../service/atomic-file.js';
import { HealthRecorder } from '../service/health-record.js';
import { KioskService } from '../service/kiosk-service.js';
import { PinFormatError, provisionStaffPin } from '../service/provision-pin.js';
import { startHost } from './server.js';
import { errorText } from '../common/error-text.js';

const USAGE = `Usage: npm run host -- [options]

Runs the kiosk on this machine's devices and serves its screen on http://127.0.0.1 (loopback only).
Prints the screen's URL (with a per-launch token) on stdout; open it in Chromium on this machine, e.g.
  chromium --kiosk --app="<URL>"
With --url-file the URL with its token is written to that file only, and stdout gets the address
without the token (a service's stdout goes to the system journal).

Options:
  --config FILE      JSON configuration file (or MDL_KIOSK_CONFIG)
  --data-dir DIR     where saved settings, the staff PIN hash and the API key live
                     (default $XDG_CONFIG_HOME/mdl-kiosk, else ~/.config/mdl-kiosk)
  --port N           port on 127.0.0.1 (default 0: a free port)
  --nfc KIND         pcsc (default): the PC/SC contactless reader; none: no NFC
  --url-file FILE    write the screen's URL with its token to FILE (mode 0600), for a kiosk session
                     script, instead of printing the token
  --health-file FILE keep a health record (JSON, no personal data) in FILE for a monitoring agent,
                     rewritten every app.health.everySeconds and after each verification
  --metrics-file FILE the same figures as Prometheus text in FILE (mode 0644), for node_exporter's
                     textfile collector (or app.health.metricsFile in the config)
  --log-level LEVEL  fatal|error|warn|info|debug|trace|silent (default info); JSON logs on stderr
                     and in rotating files in the log folder
  --log-dir DIR      the log folder (default <data-dir>/logs; app.logs sets retention and size)
  --set-pin          set the staff PIN and exit: from MDL_KIOSK_STAFF_PIN, or typed without echo
  --support-bundle FILE
                     write a support bundle (.tar.gz: versions, settings without secrets and each
                     key's source, the proxy and data folder, the health record given with
                     --health-file, the log folder's files; no personal data) and exit, without
                     touching the reader or the radio. It is made by this separate process and says
                     so: the running host's live state, devices and self-test are in the bundle of
                     the staff screen's Support bundle button
  -h, --help         this text`;

const OPTIONS = {
  config: { type: 'string' },
  'data-dir': { type: 'string' },
  port: { type: 'string' },
  nfc: { type: 'string' },
  'url-file': { type: 'string' },
  'health-file': { type: 'string' },
  'metrics-file': { type: 'string' },
  'log-level': { type: 'string' },
  'log-dir': { type: 'string' },
  'set-pin': { type: 'boolean' },
  'support-bundle': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

function fail(message: string): never {
  process.stderr.write(`host: ${message}\n`);
  process.exit(2);
}

function defaultDataDir(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CONFIG_HOME !== undefined && env.XDG_CONFIG_HOME !== '' ? env.XDG_CONFIG_HOME : join(homedir(), '.config');
  return join(base, 'mdl-kiosk');
}

/** One line typed without echo (a terminal), or the first line of stdin (a pipe). */
function readSecretLine(prompt: string): Promise<string> {
  const stdin = process.stdin;
  if (!stdin.isTTY) {
    return new Promise((resolve, reject) => {
      const lines = createInterface({ input: stdin });
      lines.once('line', (line) => {
        lines.close();
        resolve(line.trim());
      });
      lines.once('close', () => reject(new Error('no PIN on stdin')));
    });
  }
  process.stderr.write(prompt);
  return new Promise((resolve, reject) => {
    let typed = '';
    stdin.setRawMode(true);
    stdin.resume();
    const done = (error?: Error): void => {
      stdin.setRawMode(false);
      stdin.pause();
      stdin.off('data', onData);
      process.stderr.write('\n');
      if (error) reject(error);
      else resolve(typed);
    };
    const onData = (chunk: Buffer): void => {
      for (const ch of chunk.toString('utf8')) {
        if (ch === '\u0003') {
          done(new Error('cancelled'));
          return;
        }
        if (ch === '\r' || ch === '\n') {
          done();
          return;
        }
        if (ch === '\u007f' || ch === '\b') typed = typed.slice(0, -1);
        else typed += ch;
      }
    };
    stdin.on('data', onData);
  });
}

async function setPin(dataDir: string): Promise<void> {
  let pin = process.env.MDL_KIOSK_STAFF_PIN;
  if (pin === undefined || pin === '') {
    pin = await readSecretLine('New staff PIN (4 to 12 digits): ');
    if (process.stdin.isTTY) {
      const again = await readSecretLine('The same PIN again: ');
      if (again !== pin) fail('the two PINs differ; nothing was changed');
    }
  }
  try {
    const problems = await provisionStaffPin(dataDir, pin);
    for (const problem of problems) process.stderr.write(`host: note: ${problem}\n`);
  } catch (e) {
    if (e instanceof PinFormatError) fail(e.message);
    throw e;
  }
  process.stderr.write(`host: staff PIN set in ${join(dataDir, 'settings.json')}\n`);
}

/**
 * `--support-bundle FILE`: the service without devices or kiosk, one bundle, and out. It reads the running
 * host's records (log folder, health record) but describes its own process, and the bundle says so.
 */
async function supportBundle(
  target: string,
  options: {
    dataDir: string;
    logDir: string;
    healthFile: string | undefined;
    configFile: string | undefined;
    logLevel: string | undefined;
  },
): Promise<void> {
  const service = new KioskService({
    devices: () => Promise.reject(new Error('no devices for a support bundle')),
    runKiosk: false,
    dataDir: options.dataDir,
    ...(options.configFile === undefined ? {} : { configFile: options.configFile }),
    overrides: { log: { level: options.logLevel ?? 'silent' } },
    support: shellSupport({ dataDir: options.dataDir, logDir: options.logDir, healthFile: options.healthFile }),
  });
  await service.start();
  try {
    const bundle = await service.writeSupportBundleTo(target);
    process.stdout.write(
      `host: support bundle written to ${bundle.path} (${bundle.bytes} bytes) by this separate process: for a running host's live state use its staff screen's Support bundle button\n`,
    );
  } finally {
    await service.stop();
  }
}

/** The log files' retention and size from the configuration file (its defaults when it cannot be read: the service reports that). */
function logSettings(configFile: string | undefined): { retentionDays: number; maxFileMegabytes: number } {
  try {
    return parseConfig(mergeConfigSources({ ...(configFile === undefined ? {} : { file: configFile }), env: process.env })).app.logs;
  } catch {
    return parseConfig({}).app.logs;
  }
}

async function main(): Promise<void> {
  let args: ReturnType<typeof parseArgs<{ options: typeof OPTIONS; strict: true; allowPositionals: false }>>['values'];
  try {
    args = parseArgs({ options: OPTIONS, strict: true, allowPositionals: false }).values;
  } catch (e) {
    fail(`${errorText(e)}\n\n${USAGE}`);
  }
  if (args.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const dataDir = args['data-dir'] ?? defaultDataDir();
  if (args['set-pin']) {
    await setPin(dataDir);
    return;
  }
  const port = args.port === undefined ? 0 : Number(args.port);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) fail('--port takes a port number (0 to 65535)');
  const nfc = args.nfc ?? 'pcsc';
  if (nfc !== 'pcsc' && nfc !== 'none') fail('--nfc takes pcsc | none');
  const levels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
  if (args['log-level'] !== undefined && !levels.includes(args['log-level'])) fail(`--log-level takes ${levels.join(' | ')}`);

  const healthFile = args['health-file'] === undefined ? undefined : resolvePath(args['health-file']);
  const logDir = resolvePath(args['log-dir'] ?? join(dataDir, 'logs'));
  if (args['support-bundle'] !== undefined) {
    await supportBundle(resolvePath(args['support-bundle']), {
      dataDir,
      logDir,
      healthFile,
      configFile: args.config,
      logLevel: args['log-level'],
    });
    return;
  }
  let logFiles: LogFiles | undefined;
  try {
    logFiles = await openLogFiles({ dir: logDir, ...logSettings(args.config) });
  } catch (e) {
    process.stderr.write(`host: the log files in ${logDir} cannot be opened (logging to stderr only): ${errorText(e)}\n`);
  }
  // stderr for the journal, the files for the support bundle (the desktop app's bundles carry its logs too).
  const destination = {
    write: (line: string): void => {
      process.stderr.write(line);
      logFiles?.destination.write(line);
    },
  };
  // Known once the host listens; the bundle's scrubber removes it from everything it writes.
  const hostSecrets: string[] = [];
  const service = new KioskService({
    devices: configuredDeviceFactory({ nfc }),
    // The built-in voice in a process of its own (eSpeak NG, docs/speech-voice.md); not started when speech.mode is off.
    voiceLauncher: forkVoiceLauncher(),
    dataDir,
    logDestination: destination,
    support: shellSupport({ dataDir, logDir, healthFile, secrets: () => hostSecrets }),
    ...(args.config === undefined ? {} : { configFile: args.config }),
    ...(args['log-level'] === undefined ? {} : { overrides: { log: { level: args['log-level'] } } }),
    // The service fills in the secret store's protection itself.
    ...(healthFile === undefined
      ? {}
      : {
          appStatus: () => ({
            flavour: 'production' as const,
            secretsProtection: 'file-permissions' as const,
            managedKeys: [],
            healthFile,
          }),
        }),
  });
  await service.start();
  const metricsOption = args['metrics-file'] ?? service.config.app.health.metricsFile;
  const metricsFile = metricsOption === undefined ? undefined : resolvePath(metricsOption);
  const health =
    healthFile === undefined && metricsFile === undefined
      ? undefined
      : new HealthRecorder({
          service,
          ...(healthFile === undefined ? {} : { file: healthFile }),
          ...(metricsFile === undefined ? {} : { metricsFile }),
          flavour: 'production',
          everySeconds: service.config.app.health.everySeconds,
          // The same shape as the desktop app's record: the host has no updater.
          updates: () => ({ state: 'disabled' as const, error: 'the browser host does not update itself' }),
        });
  health?.start();
  const state = service.state();
  if (state.view.phase === 'config_error')
    process.stderr.write(`host: the kiosk needs staff: ${state.view.error?.detail ?? 'configuration error'}\n`);
  if (!state.staff.pinConfigured) process.stderr.write('host: no staff PIN yet: set one with `npm run host -- --set-pin`\n');
  const log = createLogger({ level: service.config.log.level, name: 'mdl-kiosk-host' }, destination);
  let host;
  try {
    host = await startHost({ service, port, log });
  } catch (e) {
    await service.stop();
    await health?.stop();
    await logFiles?.close();
    fail(`cannot listen: ${errorText(e)}`);
  }
  hostSecrets.push(host.token);
  const urlFile = args['url-file'] === undefined ? undefined : resolvePath(args['url-file']);
  if (urlFile === undefined) {
    process.stdout.write(`${host.url}\n`);
  } else {
    // Written whole and 0600 before anyone can read it (a temporary file renamed over the old one).
    await writeFileAtomic(urlFile, `${host.url}\n`);
    process.stdout.write(
      `host: the screen is at ${host.origin}/ ; its address with the token is in ${urlFile} (readable by this user only)\n`,
    );
  }

  const stop = async (): Promise<void> => {
    await host.stop();
    await service.stop();
    // Last, so the final record shows the kiosk stopped.
    await health?.stop();
    await logFiles?.close();
  };
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await stop();
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    process.stderr.write(`host: ${errorText(e)}\n`);
    process.exit(2);
  },
);
