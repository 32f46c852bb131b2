/**
 * `npm run demo`: the whole kiosk on one machine with no hardware and no configuration. Starts the
 * embedded mock backend, a virtual counter (virtual NFC reader, Bluetooth and phone), the kiosk service in
 * test mode, the browser host that serves the kiosk screen, and the virtual phone page (QA only) that taps
 * the phone, shows its QR code and changes its behaviour. Prints both URLs and the staff PIN; Ctrl+C stops
 * everything.
 */
import { forkVoiceLauncher } from '../devices/speech/voice-launcher.js';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Pin, QrScannedResult, dispatchIntent } from '../common/kiosk-api.js';
import { createLogger } from '../platform/log.js';
import { startHost } from '../host/server.js';
import { KioskService } from '../service/kiosk-service.js';
import { hashPin } from '../service/staff-pin.js';
import { routeLibraryConsole } from '../devices/ble/library-console.js';
import {
  PHONE_PROFILE_NAMES,
  createHciStacks,
  defaultHciDir,
  hciTtysIn,
  isPhoneProfileName,
  randomStaffPin,
  startEmbeddedCounter,
  type HciStacks,
} from './index.js';
import { errorText } from '../common/error-text.js';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const RENDERER_DIR = join(REPO, 'dist', 'renderer');

const USAGE = `Usage: npm run demo -- [options]

Runs the kiosk screen against the embedded mock backend and a virtual phone (TEST MODE): no hardware,
no backend, no configuration needed. Open the two printed URLs in a browser.

Options:
  --port PORT          the kiosk screen's port (default: a free one)
  --phone-port PORT    the virtual phone page's port (default: a free one)
  --phone NAME         the virtual phone's profile (changeable on its page): android (default), iphone,
                       apple-wallet, google-wallet, samsung-wallet or multipaz (docs/wallet-profiles.md)
  --pin DIGITS         the staff PIN for this run (4 to 12 digits; default: 6 random digits, printed)
  --data-dir DIR       where the kiosk keeps its settings (default: a fresh directory under the OS temp
                       directory, removed on exit)
  --log-level LEVEL    the kiosk's JSON log on stderr: fatal|error|warn|info|debug|trace|silent (default warn)
  --ble hci            the kiosk's noble and bleno adapters and the phone's wallet on BlueZ's emulated
                       Bluetooth controllers (start them first: npm run btvirt -- start; docs/qa-demo.md)
  --hci-dir DIR        with --ble hci: where npm run btvirt made the ttys (default ${defaultHciDir()})
  -h, --help           this text`;

const OPTIONS = {
  port: { type: 'string' },
  'phone-port': { type: 'string' },
  phone: { type: 'string' },
  pin: { type: 'string' },
  'data-dir': { type: 'string' },
  'log-level': { type: 'string' },
  ble: { type: 'string' },
  'hci-dir': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
type LogLevel = (typeof LOG_LEVELS)[number];

function fail(message: string): never {
  process.stderr.write(`demo: ${message}\n`);
  process.exit(2);
}

function port(name: string, value: string | undefined): number {
  if (value === undefined) return 0;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65_535) fail(`--${name} takes a port number (0 to 65535)`);
  return n;
}

function parse(): ReturnType<typeof parseArgs<{ options: typeof OPTIONS; strict: true; allowPositionals: false }>>['values'] {
  try {
    return parseArgs({ options: OPTIONS, strict: true, allowPositionals: false }).values;
  } catch (e) {
    fail(`${errorText(e)}\n\n${USAGE}`);
  }
}

async function main(): Promise<void> {
  const args = parse();
  if (args.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const kioskPort = port('port', args.port);
  const phonePort = port('phone-port', args['phone-port']);
  const phone = args.phone ?? 'android';
  if (!isPhoneProfileName(phone)) fail(`--phone takes ${PHONE_PROFILE_NAMES.join(', ')}`);
  const logLevel = (args['log-level'] ?? 'warn') as LogLevel;
  if (!LOG_LEVELS.includes(logLevel)) fail(`--log-level takes ${LOG_LEVELS.join(' | ')}`);
  const pin = args.pin ?? randomStaffPin();
  if (!Pin.safeParse(pin).success) fail('--pin takes 4 to 12 digits');
  if (!existsSync(join(RENDERER_DIR, 'index.html'))) {
    fail(
      `the kiosk screen is not built (${RENDERER_DIR} has no index.html): run \`npm run build:renderer\`, or start the demo with \`npm run demo\`, which builds it first`,
    );
  }

  if (args.ble !== undefined && args.ble !== 'hci') fail('--ble takes hci (the default is the in-memory radio)');
  if (args['hci-dir'] !== undefined && args.ble !== 'hci') fail('--hci-dir goes with --ble hci');
  let hci: HciStacks | undefined;
  if (args.ble === 'hci') {
    const dir = resolve(args['hci-dir'] ?? defaultHciDir());
    const ttys = hciTtysIn(dir);
    const missing = [ttys.kioskCentral, ttys.kioskPeripheral, ttys.phoneCentral, ttys.phonePeripheral].filter((tty) => !existsSync(tty));
    if (missing.length > 0)
      fail(
        `--ble hci: no emulated controller at ${missing.join(', ')}; start them with: npm run btvirt -- start${dir === defaultHciDir() ? '' : ` --dir ${dir}`}`,
      );
    hci = createHciStacks(ttys);
  }

  const ownDataDir = args['data-dir'] === undefined;
  const dataDir = args['data-dir'] ?? (await mkdtemp(join(tmpdir(), 'mdl-kiosk-demo-')));
  const log = createLogger({ level: logLevel, name: 'mdl-kiosk-demo' }, process.stderr);

  // The phone page starts first; its callbacks reach the service once it exists.
  const kiosk: { service?: KioskService } = {};
  // On hci, noble and bleno print to stdout: into the log instead, while they live (the process).
  if (hci) routeLibraryConsole(log.child({ component: 'ble' }));
  const embedded = await startEmbeddedCounter({
    phone,
    phonePort,
    ...(hci ? { hci } : {}),
    // Through the same dispatcher as the screen's own scans: same validation, same rules.
    scan: async (text) => {
      const service = kiosk.service;
      if (service === undefined) return { accepted: false, reason: 'not_waiting' };
      return QrScannedResult.parse(await dispatchIntent(service, 'qrScanned', { text, source: 'scanner' }, () => service.staffUnlocked()));
    },
    kioskPhase: () => kiosk.service?.state().view.phase,
  });
  const { backend, phonePage } = embedded;
  const service = new KioskService({
    devices: embedded.devices,
    dataDir,
    backendOverride: { baseUrl: backend.url, apiKey: backend.apiKey },
    testMode: true,
    overrides: { staff: { pinHash: await hashPin(pin) }, log: { level: logLevel } },
    // The built-in voice, as the browser host starts it: the demo speaks as a kiosk would.
    voiceLauncher: forkVoiceLauncher(),
  });
  kiosk.service = service;
  await service.start();
  const host = await startHost({ service, port: kioskPort, rendererDir: RENDERER_DIR, log });

  process.stdout.write(
    [
      '',
      `mDL Kiosk demo (TEST MODE: embedded mock backend, virtual phone${hci ? ', Bluetooth over HCI on the emulated controllers' : ''})`,
      '',
      `  Kiosk screen:   ${host.url}`,
      `  Virtual phone:  ${phonePage.url}   (QA only)`,
      `  Staff PIN:      ${pin}`,
      '',
      `  Mock backend:   ${backend.url}`,
      `  Settings in:    ${dataDir}${ownDataDir ? ' (removed on exit)' : ''}`,
      '',
      'Open the kiosk screen, then tap the phone or show its QR code from the virtual phone page.',
      'Press Ctrl+C to stop.',
      '',
    ].join('\n'),
  );

  const signal = await new Promise<NodeJS.Signals>((done) => {
    process.once('SIGINT', () => done('SIGINT'));
    process.once('SIGTERM', () => done('SIGTERM'));
  });
  process.stdout.write(`\ndemo: ${signal}, stopping\n`);
  await host.stop();
  await service.stop();
  await embedded.stop();
  if (ownDataDir) await rm(dataDir, { recursive: true, force: true });
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    process.stderr.write(`demo: ${errorText(e)}\n`);
    process.exit(2);
  },
);
