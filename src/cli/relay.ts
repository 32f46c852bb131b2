/**
 * `npm run relay -- [options]`: runs verifications headless against a backend with the device ports that
 * exist, prints progress lines on stderr and one JSON line per verification on stdout.
 * Exit status: 0 all verified, 1 a credential rejected, 2 an error (nothing verified or rejected).
 */
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import type { KioskView } from '../common/kiosk-view.js';
import { QrScanQueue } from '../devices/qr/qr-scan-queue.js';
import type { DevicePorts } from '../devices/ports.js';
import { createKiosk } from '../kiosk/compose.js';
import { ConfigError, loadConfig } from '../kiosk/config.js';
import type { VerificationReport } from '../kiosk/kiosk.js';
import { createLogger } from '../kiosk/log.js';
import { availableProfiles } from '../kiosk/profiles.js';
import { PROMPT_TEXT, verdictExitCode, worstExitCode } from './relay-output.js';
import { ScanFeeder } from './scan-feeder.js';

const DEFAULT_TIMEOUT_S = 300;

const USAGE = `Usage: npm run relay -- [options]

Runs verifications against the backend and prints the outcome of each as one JSON line on stdout.
Progress goes to stderr. Exit status: 0 verified, 1 rejected, 2 error (with --loop: the worst of all).

Options:
  --backend URL          backend base URL (or MDL_KIOSK_BACKEND_URL, or backend.baseUrl in the config file)
  --api-key-file FILE    file holding the API key (or MDL_KIOSK_API_KEY / MDL_KIOSK_API_KEY_FILE)
  --config FILE          JSON configuration file (or MDL_KIOSK_CONFIG); see README "Configuration"
  --profile NAME         request profile (age_over_18, age_over_21, identity, full, or a custom one)
  --list-profiles        print the profiles and exit
  --loop N               run N verifications one after another (default 1)
  --qr TEXT              a scanned QR text (repeat for several verifications)
  --qr-stdin             read scanned QR texts from stdin, one per line (a keyboard-wedge scanner works too)
  --ws-auth MODE         header (default) or query: how the WebSocket carries the client secret
  --allow-insecure       allow plain http/ws to a non-loopback backend (labs only)
  --log-level LEVEL      fatal|error|warn|info|debug|trace|silent (default warn); logs are JSON on stderr
  --timeout SECONDS      give up when a verification has not ended this long after the previous one
                         (default 300); the run then exits 2
  -h, --help             this text

Devices: this build has the QR input. NFC (--nfc pcsc), Bluetooth (--ble …) and the virtual phone
(--devices virtual) are added by the device adapters as they land.`;

function fail(message: string): never {
  process.stderr.write(`relay: ${message}\n`);
  process.exit(2);
}

async function main(): Promise<number> {
  let args;
  try {
    args = parseArgs({
      options: {
        backend: { type: 'string' },
        'api-key-file': { type: 'string' },
        config: { type: 'string' },
        profile: { type: 'string' },
        'list-profiles': { type: 'boolean' },
        loop: { type: 'string' },
        qr: { type: 'string', multiple: true },
        'qr-stdin': { type: 'boolean' },
        'ws-auth': { type: 'string' },
        'allow-insecure': { type: 'boolean' },
        'log-level': { type: 'string' },
        timeout: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    }).values;
  } catch (e) {
    fail(`${(e as Error).message}\n\n${USAGE}`);
  }
  if (args.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const loops = args.loop === undefined ? 1 : Number(args.loop);
  if (!Number.isInteger(loops) || loops < 1) fail('--loop takes a positive whole number');

  let config;
  try {
    config = loadConfig({
      ...(args.config ? { file: args.config } : {}),
      overrides: {
        backend: {
          baseUrl: args.backend,
          apiKeyFile: args['api-key-file'],
          wsAuth: args['ws-auth'],
          allowInsecure: args['allow-insecure'],
        },
        profile: args.profile,
        log: { level: args['log-level'] ?? 'warn' },
      },
    });
  } catch (e) {
    if (e instanceof ConfigError) fail(e.message);
    throw e;
  }
  if (args['list-profiles']) {
    for (const p of Object.values(availableProfiles(config))) {
      process.stdout.write(`${p.name}\t${p.label}\t${JSON.stringify(p.namespaces)}\n`);
    }
    return 0;
  }

  const timeoutSeconds = args.timeout === undefined ? DEFAULT_TIMEOUT_S : Number(args.timeout);
  if (!Number.isFinite(timeoutSeconds) || timeoutSeconds <= 0) fail('--timeout takes a positive number of seconds');
  if (!args.qr?.length && !args['qr-stdin']) {
    fail('no input: pass --qr TEXT or --qr-stdin (NFC and BLE adapters are added by later releases)');
  }
  const qr = new QrScanQueue({ freshMs: Number.MAX_SAFE_INTEGER });
  const feeder = new ScanFeeder(qr, config.qr.requireMdocPrefix);
  for (const text of args.qr ?? []) {
    const refused = feeder.add(text);
    if (refused) fail(`--qr ${JSON.stringify(text.slice(0, 40))}: ${refused}`);
  }
  if (!args['qr-stdin']) {
    feeder.end();
    if (feeder.queued < loops) fail(`--loop ${loops} needs ${loops} scans, got ${feeder.queued} --qr value(s)`);
  }
  const devices: DevicePorts = { qr };
  const log = createLogger({ level: config.log.level, name: 'mdl-kiosk-relay' }, process.stderr);
  let kiosk;
  try {
    kiosk = createKiosk(config, devices, log);
  } catch (e) {
    fail((e as Error).message);
  }

  let lastPhase: KioskView['phase'] | undefined;
  let onConfigRefused: () => void = () => undefined;
  const configRefused = new Promise<void>((resolve) => (onConfigRefused = resolve));
  kiosk.onView((view) => {
    if (view.phase === lastPhase) return;
    lastPhase = view.phase;
    const extra = view.error ? ` (${view.error.code}: ${view.error.detail})` : '';
    process.stderr.write(`[relay] ${view.phase}: ${PROMPT_TEXT[view.prompt]}${extra}\n`);
    // The backend refused the credentials: waiting would not help a headless run.
    if (view.phase === 'config_error') onConfigRefused();
    if (view.phase === 'ready') feeder.kioskReady();
  });

  const codes: number[] = [];
  let finish: (why: string | undefined) => void = () => undefined;
  const finished = new Promise<string | undefined>((resolve) => (finish = resolve));
  // A verification that has not ended this long after the previous one is given up (e.g. backend down).
  let deadline: NodeJS.Timeout | undefined;
  const armDeadline = (): void => {
    clearTimeout(deadline);
    deadline = setTimeout(() => finish(`no verification ended within ${timeoutSeconds} s (--timeout)`), timeoutSeconds * 1000);
  };
  const checkInput = (): void => {
    if (codes.length < loops && feeder.exhausted) finish(`input ended after ${codes.length} of ${loops} verification(s)`);
  };
  kiosk.onVerification((report: VerificationReport) => {
    process.stdout.write(`${JSON.stringify(report)}\n`);
    codes.push(verdictExitCode(report));
    if (codes.length >= loops) finish(undefined);
    armDeadline();
    // The kiosk takes the next scan while the result is still on screen.
    feeder.verificationEnded();
    checkInput();
  });
  if (args['qr-stdin']) {
    const lines = createInterface({ input: process.stdin, crlfDelay: Number.POSITIVE_INFINITY });
    lines.on('line', (line) => {
      const refused = feeder.add(line);
      if (refused && refused !== 'empty') process.stderr.write(`[relay] ignored a scan: ${refused}\n`);
    });
    lines.on('close', () => {
      feeder.end();
      checkInput();
    });
  }
  process.once('SIGINT', () => finish('interrupted'));
  process.once('SIGTERM', () => finish('terminated'));
  configRefused.then(() => finish('the backend refused the configuration'), () => undefined);
  armDeadline();
  kiosk.start();
  const why = await finished;
  clearTimeout(deadline);
  if (why) process.stderr.write(`relay: ${why}\n`);
  await kiosk.stop();
  if (codes.length < loops) return 2;
  return worstExitCode(codes);
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`relay: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(2);
  },
);
