/**
 * `npm run relay -- [options]`: runs verifications headless against a backend with the device ports that
 * exist, prints progress lines on stderr and one JSON line per verification on stdout.
 * Exit status: 0 all verified and met, 1 a credential rejected, 2 an error (nothing verified or rejected),
 * 3 authentic but the request not met (e.g. under age).
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import type { KioskView } from '../common/kiosk-view.js';
import { BlenoPeripheral } from '../devices/ble/bleno-peripheral.js';
import { routeLibraryConsole, type LibraryLog } from '../devices/ble/library-console.js';
import { NobleCentral } from '../devices/ble/noble-central.js';
import { RadioProcess } from '../devices/ble/radio-process/radio-process.js';
import { createConfiguredDevices, createPcscReader } from '../service/configured-devices.js';
import type { Availability, BleCentral, BlePeripheral, DevicePorts } from '../devices/ports.js';
import type { Bleno } from '../devices/ble/bleno-types.js';
import type { Noble } from '@stoprocent/noble';
import type { PcscNfcReader } from '../devices/pcsc/pcsc-nfc-reader.js';
import {
  createRemoteBleno,
  createRemoteNoble,
  createVirtualBleno,
  createVirtualCounter,
  defaultQaPkiDir,
  createVirtualNoble,
  describePhoneProfiles,
  PHONE_PROFILE_NAMES,
  type CustomerHands,
  type Engagement,
  parseHostPort,
  radioLinkLauncher,
  type PhoneBehaviour,
  RemoteBlenoBindings,
  RemoteNobleBindings,
  ScanFeeder,
  createHciStacks,
  defaultHciDir,
  hciTtysIn,
  type CounterRig,
  type HciStacks,
  type VirtualCounter,
  VirtualCustomer,
  type VirtualNfcTag,
  type VirtualRig,
  VpcdCard,
  type VpcdReaderAddress,
} from '../qa/index.js';
import { createKiosk } from '../kiosk/compose.js';
import { ConfigError, loadConfig, mergeConfigSources, type KioskConfig } from '../platform/config.js';
import type { VerificationReport } from '../kiosk/kiosk.js';
import { createLogger } from '../platform/log.js';
import { availableProfiles } from '../kiosk/profiles.js';
import { PROMPT_TEXT, resultText, verdictExitCode, worstExitCode } from './relay-output.js';
import { escapePeerText } from '../common/peer-text.js';
import { errorText } from '../common/error-text.js';

const DEFAULT_TIMEOUT_S = 300;

const USAGE = `Usage: npm run relay -- [options]

Runs verifications against the backend and prints the outcome of each as one JSON line on stdout.
Progress goes to stderr. Exit status: 0 verified and the request met, 1 rejected (or nothing shared),
2 error or undetermined, 3 verified but the request NOT met (an age answered no or not answered, a required
element not shared); with --loop the worst of all (2, then 1, then 3, then 0).

Options:
  --backend URL          backend base URL (or MDL_KIOSK_BACKEND_URL, or backend.baseUrl in the config file);
                         with --devices virtual and no backend, an embedded mock backend is started
  --api-key-file FILE    file holding the API key (or MDL_KIOSK_API_KEY / MDL_KIOSK_API_KEY_FILE)
  --config FILE          JSON configuration file (or MDL_KIOSK_CONFIG); see docs/configuration.md
  --profile NAME         request profile (age_over_18, age_over_21, identity, full, or a custom one)
  --list-profiles        print the profiles and exit
  --loop N               run N verifications one after another (default 1)
  --qr TEXT              a scanned QR text (repeat for several verifications)
  --qr-stdin             read scanned QR texts from stdin, one per line (a keyboard-wedge scanner works too)
  --ws-auth MODE         header (default) or query: how the WebSocket carries the client secret
  --allow-insecure       allow plain http/ws to a non-loopback backend (labs only)
  --log-level LEVEL      fatal|error|warn|info|debug|trace|silent (default warn); logs are JSON on stderr
  --nfc KIND             pcsc: a PC/SC contactless reader; virtual (the default with --devices virtual);
                         none (the default otherwise)
  --reader NAME          with --nfc pcsc: the reader's name, part of it, or /regex/ (or pcsc.reader in the
                         config file, or MDL_KIOSK_PCSC_READER); default: the first contactless reader
  --ble KIND             noble: the noble (central) and bleno (peripheral) adapters, on this machine's
                         Bluetooth stack, or with --devices virtual on bindings that reach the virtual
                         phone's radio; virtual: the virtual ports (the default with --devices virtual);
                         hci: with --devices virtual, the noble and bleno adapters on their real HCI stacks
                         over BlueZ's emulated controllers, the virtual phone's wallet on two more
                         (npm run btvirt -- start first); none (the default otherwise)
  --hci-dir DIR          with --ble hci: where npm run btvirt made the ttys (default ${defaultHciDir()})
  --radio-link HOST:PORT with --ble noble: noble and bleno reach a virtual phone's radio in another process
                         over this loopback link (npm run virtual-wallet -- --radio-link PORT)
  --ble-process WHERE    with --ble noble: separate (the default, or ble.process in the config file) runs noble
                         and bleno in a radio process of their own, which is restarted if it crashes; inline
                         runs them in this process
  --vpcd HOST:PORT       with --devices virtual --nfc pcsc: the virtual customer lays the phone on this vpcd
                         reader (pcscd + vsmartcard-vpcd, e.g. npm run pcscd -- start) instead of the
                         virtual reader, so the whole flow runs through the real PC/SC stack
  --timeout SECONDS      give up when a verification has not ended this long after the previous one
                         (default 300); the run then exits 2
  -h, --help             this text

Virtual devices (a counter with no hardware: NFC reader, camera and Bluetooth wired to a virtual phone):
  --devices virtual      use them; the phone's mDL is issued under the QA PKI (${defaultQaPkiDir()})
  --phone NAME           the virtual phone's profile (default android), one of:
${describePhoneProfiles('                           ')}
                         (docs/wallet-profiles.md: what each does and the captures it rests on)
  --engage HOW           qr (default) or nfc
  --kiosk-ble ROLES      both (default), central or peripheral: the roles the kiosk's Bluetooth can take
                         (with --ble noble too: which of noble and bleno are set up)
  --decline              the holder declines        --consent-delay MS   the holder takes MS to approve
  --credential KIND      valid (default), expired or tampered
  --device-auth HOW      signature (default) or mac
  --field-drop-at N      the NFC field drops at APDU N (the customer taps again)
  --ble-drop-after K     the phone drops Bluetooth after K chunks of its answer
  --wrong-ident          the phone expects another Ident (central client mode) and gives up`;

function fail(message: string): never {
  process.stderr.write(`relay: ${message}\n`);
  process.exit(2);
}

function parse(): ReturnType<typeof parseArgs<{ options: typeof OPTIONS; strict: true; allowPositionals: false }>>['values'] {
  try {
    return parseArgs({ options: OPTIONS, strict: true, allowPositionals: false }).values;
  } catch (e) {
    fail(`${errorText(e)}\n\n${USAGE}`);
  }
}

const OPTIONS = {
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
  devices: { type: 'string' },
  nfc: { type: 'string' },
  reader: { type: 'string' },
  vpcd: { type: 'string' },
  ble: { type: 'string' },
  'hci-dir': { type: 'string' },
  'radio-link': { type: 'string' },
  'ble-process': { type: 'string' },
  phone: { type: 'string' },
  engage: { type: 'string' },
  'kiosk-ble': { type: 'string' },
  decline: { type: 'boolean' },
  'consent-delay': { type: 'string' },
  credential: { type: 'string' },
  'device-auth': { type: 'string' },
  'field-drop-at': { type: 'string' },
  'ble-drop-after': { type: 'string' },
  'wrong-ident': { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

type Args = ReturnType<typeof parse>;

function positive(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) fail(`--${name} takes a whole number`);
  return n;
}

function oneOf<T extends string>(name: string, value: string | undefined, allowed: readonly T[], fallback: T): T {
  if (value === undefined) return fallback;
  if (!(allowed as readonly string[]).includes(value)) fail(`--${name} takes ${allowed.join(' | ')}`);
  return value as T;
}

function phoneBehaviour(args: Args): PhoneBehaviour {
  const consentDelayMs = positive('consent-delay', args['consent-delay']);
  const fieldDrop = positive('field-drop-at', args['field-drop-at']);
  const bleDrop = positive('ble-drop-after', args['ble-drop-after']);
  return {
    ...(args.decline ? { consent: 'decline' as const } : {}),
    ...(consentDelayMs === undefined ? {} : { consentDelayMs }),
    credential: oneOf<'valid' | 'expired' | 'tampered'>('credential', args.credential, ['valid', 'expired', 'tampered'], 'valid'),
    deviceAuth: oneOf<'signature' | 'mac'>('device-auth', args['device-auth'], ['signature', 'mac'], 'signature'),
    ...(fieldDrop === undefined ? {} : { nfcFieldDropAtApdu: fieldDrop }),
    ...(bleDrop === undefined ? {} : { bleDropAfterChunks: bleDrop }),
    ...(args['wrong-ident'] ? { wrongIdent: true } : {}),
  };
}

/** A virtual counter (the QA room's), with the embedded mock backend when no backend is configured. */
function virtualCounter(args: Args, embeddedBackend: boolean, hci: HciStacks | undefined): Promise<VirtualCounter> {
  return createVirtualCounter({
    phone: oneOf('phone', args.phone, PHONE_PROFILE_NAMES, 'android'),
    behaviour: phoneBehaviour(args),
    kioskBle: kioskBleRoles(args),
    backend: embeddedBackend,
    ...(hci ? { hci } : {}),
  });
}

/** noble and bleno on the emulated controllers' ttys in `dir` (tools/btvirt), or a clear failure. */
function hciStacksIn(dir: string): HciStacks {
  const ttys = hciTtysIn(dir);
  const missing = [ttys.kioskCentral, ttys.kioskPeripheral, ttys.phoneCentral, ttys.phonePeripheral].filter((tty) => !existsSync(tty));
  if (missing.length > 0)
    fail(
      `--ble hci: no emulated controller at ${missing.join(', ')}; start them with: npm run btvirt -- start${dir === defaultHciDir() ? '' : ` --dir ${dir}`}`,
    );
  return createHciStacks(ttys);
}

/** The customer's phone on a real reader through vpcd; failures are reported, never thrown. */
function vpcdHands(rig: CounterRig, card: VpcdCard): CustomerHands {
  let last: VirtualNfcTag | undefined;
  const report = (what: string) => (e: unknown) => process.stderr.write(`[relay] vpcd ${what} failed: ${errorText(e)}\n`);
  return {
    showQr: () => rig.showQr(),
    tap: () => {
      last = rig.phone.tag();
      card.insert(last).catch(report('tap'));
    },
    retap: () => {
      card.reinsert(last ?? rig.phone.tag()).catch(report('re-tap'));
    },
    lift: () => {
      card.remove().catch(report('lift'));
    },
  };
}

/** BLE ports other than the rig's own, and how to release them. */
interface BlePorts {
  readonly central?: BleCentral;
  readonly peripheral?: BlePeripheral;
  close(): Promise<void>;
}

/** `devices` with the BLE roles of `ble` (none when `ble` is undefined: the devices keep their own). */
function withBle(devices: DevicePorts, ble: BlePorts | undefined): DevicePorts {
  if (!ble) return devices;
  const out: { -readonly [K in keyof DevicePorts]: DevicePorts[K] } = { ...devices };
  delete out.bleCentral;
  delete out.blePeripheral;
  return { ...out, ...(ble.central ? { bleCentral: ble.central } : {}), ...(ble.peripheral ? { blePeripheral: ble.peripheral } : {}) };
}

/** `devices` with `nfc` as its reader (none when undefined: `--nfc none`). */
function withNfc(devices: DevicePorts, nfc: DevicePorts['nfc']): DevicePorts {
  const out: { -readonly [K in keyof DevicePorts]: DevicePorts[K] } = { ...devices };
  delete out.nfc;
  return nfc ? { ...out, nfc } : out;
}

/**
 * Phone faults that can only happen on one path. Said plainly when the run cannot take that path, rather
 * than silently doing nothing (returns the notes; `fail`s when the run could never verify at all).
 */
function faultNotes(args: Args, engage: Engagement, nfcKind: string, roles: KioskBleRoles): string[] {
  const notes: string[] = [];
  if (engage === 'nfc' && nfcKind === 'none') fail('--engage nfc needs an NFC reader: drop --nfc none (or use --engage qr)');
  if (args['field-drop-at'] !== undefined && engage !== 'nfc') {
    notes.push('--field-drop-at has no effect with --engage qr: the field only drops during an NFC engagement (add --engage nfc)');
  }
  if (args['wrong-ident'] && roles === 'central') {
    notes.push(
      '--wrong-ident has no effect with --kiosk-ble central: Ident is checked only when the phone is the BLE central (the kiosk advertises as peripheral)',
    );
  }
  return notes;
}

type KioskBleRoles = 'both' | 'central' | 'peripheral';

/** The roles the kiosk's Bluetooth may take (`--kiosk-ble`). */
function kioskBleRoles(args: Args): KioskBleRoles {
  return oneOf<KioskBleRoles>('kiosk-ble', args['kiosk-ble'], ['both', 'central', 'peripheral'], 'both');
}

/**
 * The noble central and bleno peripheral adapters on given library instances (either may be absent).
 * What the libraries print goes to the log while they live: stdout is one JSON line per verification.
 */
function libraryBle(
  noble: Noble | undefined,
  bleno: Bleno | undefined,
  log: LibraryLog,
  release: () => Promise<void> = () => Promise.resolve(),
): BlePorts {
  const unroute = routeLibraryConsole(log);
  const central = noble ? new NobleCentral(noble, { platform: 'hci' }) : undefined;
  const peripheral = bleno ? new BlenoPeripheral(bleno, { binding: 'hci' }) : undefined;
  return {
    ...(central ? { central } : {}),
    ...(peripheral ? { peripheral } : {}),
    async close() {
      central?.dispose();
      noble?.stop();
      await peripheral?.close();
      await release();
      unroute();
    },
  };
}

/** noble and bleno on bindings that reach the virtual phone's radio (the libraries' real object model). */
function virtualBleThroughLibraries(rig: VirtualRig, roles: KioskBleRoles, log: LibraryLog): BlePorts {
  return libraryBle(
    roles === 'peripheral' ? undefined : createVirtualNoble(rig.central.device),
    roles === 'central' ? undefined : createVirtualBleno(rig.peripheral.device),
    log,
  );
}

/** noble and bleno over the loopback radio link to a virtual phone's radio in another process. */
async function bleOverRadioLink(address: VpcdReaderAddress, roles: KioskBleRoles, log: LibraryLog): Promise<BlePorts> {
  const nobleBindings = roles === 'peripheral' ? undefined : await RemoteNobleBindings.connect({ ...address, name: 'kiosk-central' });
  const blenoBindings = roles === 'central' ? undefined : await RemoteBlenoBindings.connect({ ...address, name: 'kiosk-peripheral' });
  return libraryBle(
    nobleBindings ? createRemoteNoble(nobleBindings) : undefined,
    blenoBindings ? createRemoteBleno(blenoBindings) : undefined,
    log,
    async () => {
      await nobleBindings?.close();
      await blenoBindings?.close();
    },
  );
}

/**
 * noble and bleno over the radio link, in a radio process of their own (the QA child): what the kiosk
 * runs as `ble.process: separate`, with the link in place of this machine's Bluetooth stack.
 */
async function radioProcessOverRadioLink(address: VpcdReaderAddress, roles: KioskBleRoles, log: LibraryLog): Promise<BlePorts> {
  const radio = new RadioProcess({
    launcher: radioLinkLauncher(address, { strayOutput: process.env.MDL_KIOSK_QA_RADIO_STRAY_OUTPUT === '1' }),
    init: { central: roles !== 'peripheral', peripheral: roles !== 'central' },
    log,
  });
  const problems = await radio.started();
  if (problems.length > 0) {
    await radio.close();
    throw new Error(problems.join('; '));
  }
  return {
    ...(radio.central ? { central: radio.central } : {}),
    ...(radio.peripheral ? { peripheral: radio.peripheral } : {}),
    close: () => radio.close(),
  };
}

/** Whether the configuration file names `log.level` (then the CLI's quieter default does not override it). */
function configSetsLogLevel(file: string | undefined): boolean {
  try {
    const merged = mergeConfigSources(file === undefined ? {} : { file });
    const log = merged.log;
    return typeof log === 'object' && log !== null && (log as Record<string, unknown>).level !== undefined;
  } catch {
    return false; // loadConfig reports the file's problem
  }
}

async function main(): Promise<number> {
  const args = parse();
  if (args.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const loops = args.loop === undefined ? 1 : Number(args.loop);
  if (!Number.isInteger(loops) || loops < 1) fail('--loop takes a positive whole number');
  const devicesKind = oneOf<'qr' | 'virtual'>('devices', args.devices, ['qr', 'virtual'], 'qr');
  const nfcKind = oneOf<'pcsc' | 'virtual' | 'none'>(
    'nfc',
    args.nfc,
    ['pcsc', 'virtual', 'none'],
    devicesKind === 'virtual' ? 'virtual' : 'none',
  );
  if (nfcKind === 'virtual' && devicesKind !== 'virtual') fail('--nfc virtual needs --devices virtual');
  if (args.reader !== undefined && nfcKind !== 'pcsc') fail('--reader goes with --nfc pcsc');
  const bleKind = oneOf<'noble' | 'virtual' | 'hci' | 'none'>(
    'ble',
    args.ble,
    ['noble', 'virtual', 'hci', 'none'],
    devicesKind === 'virtual' ? 'virtual' : 'none',
  );
  if (bleKind === 'virtual' && devicesKind !== 'virtual') fail('--ble virtual needs --devices virtual');
  if (bleKind === 'hci' && devicesKind !== 'virtual')
    fail('--ble hci needs --devices virtual (the virtual phone plays the wallet on the emulated radio)');
  if (args['hci-dir'] !== undefined && bleKind !== 'hci') fail('--hci-dir goes with --ble hci');
  if (args['radio-link'] !== undefined && (bleKind !== 'noble' || devicesKind === 'virtual'))
    fail("--radio-link goes with --ble noble (and not with --devices virtual, whose phone shares the kiosk's radio)");
  let linkAddress: VpcdReaderAddress | undefined;
  try {
    linkAddress = args['radio-link'] === undefined ? undefined : parseHostPort(args['radio-link']);
  } catch (e) {
    fail(`--radio-link: ${errorText(e)}`);
  }
  if (args['ble-process'] !== undefined && bleKind !== 'noble') fail('--ble-process goes with --ble noble');
  oneOf('ble-process', args['ble-process'], ['separate', 'inline'], 'separate');
  if (args.vpcd !== undefined && (nfcKind !== 'pcsc' || devicesKind !== 'virtual')) fail('--vpcd goes with --devices virtual --nfc pcsc');
  // The virtual customer can reach a PC/SC reader only through vpcd.
  if (devicesKind === 'virtual' && nfcKind === 'pcsc' && args.vpcd === undefined)
    fail('--devices virtual --nfc pcsc needs --vpcd HOST:PORT (the vpcd reader the virtual phone is laid on)');
  let vpcdAddress: VpcdReaderAddress | undefined;
  try {
    vpcdAddress = args.vpcd === undefined ? undefined : parseHostPort(args.vpcd);
  } catch (e) {
    fail(`--vpcd: ${errorText(e)}`);
  }

  let config: KioskConfig;
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
        pcsc: { reader: args.reader },
        ble: { process: args['ble-process'] },
        log: { level: args['log-level'] ?? (configSetsLogLevel(args.config) ? undefined : 'warn') },
      },
    });
  } catch (e) {
    if (e instanceof ConfigError) fail(e.message);
    throw e;
  }
  if (args['list-profiles']) {
    for (const p of Object.values(availableProfiles(config)))
      process.stdout.write(`${p.name}\t${p.label}\t${JSON.stringify(p.namespaces)}\n`);
    return 0;
  }
  const timeoutSeconds = args.timeout === undefined ? DEFAULT_TIMEOUT_S : Number(args.timeout);
  // Bounded: a timer longer than 2^31 − 1 ms fires at once (2147484 s ended the run immediately).
  if (!Number.isFinite(timeoutSeconds) || timeoutSeconds <= 0 || timeoutSeconds > 86_400)
    fail('--timeout takes a number of seconds from above 0 to 86400 (24 h)');

  // ---------------------------------------------------------------- devices and input
  const log = createLogger({ level: config.log.level, name: 'mdl-kiosk-relay' }, process.stderr);
  let devices: DevicePorts;
  let rig: CounterRig | undefined;
  let feeder: ScanFeeder | undefined;
  let customer: VirtualCustomer | undefined;
  let counter: VirtualCounter | undefined;
  let pcsc: PcscNfcReader | undefined;
  let card: VpcdCard | undefined;
  let ble: BlePorts | undefined;
  if (devicesKind === 'virtual') {
    if (nfcKind === 'pcsc') {
      try {
        pcsc = createPcscReader(config, log);
      } catch (e) {
        fail(errorText(e));
      }
    }
    if (args.qr?.length || args['qr-stdin'])
      fail('--qr and --qr-stdin do not go with --devices virtual (the virtual phone presents itself)');
    const hci = bleKind === 'hci' ? hciStacksIn(path.resolve(args['hci-dir'] ?? defaultHciDir())) : undefined;
    // What noble and bleno print on hci goes to the log while they live: stdout is one JSON line per verification.
    const unroute = hci ? routeLibraryConsole(log.child({ component: 'ble' })) : undefined;
    counter = await virtualCounter(args, config.backend.baseUrl === undefined, hci);
    rig = counter.rig;
    const radioRig = counter.radioRig;
    if (bleKind === 'noble' && radioRig) ble = virtualBleThroughLibraries(radioRig, kioskBleRoles(args), log.child({ component: 'ble' }));
    else if (bleKind === 'none') ble = { close: () => Promise.resolve() };
    else if (bleKind === 'hci')
      ble = {
        ...(rig.devices.bleCentral ? { central: rig.devices.bleCentral } : {}),
        ...(rig.devices.blePeripheral ? { peripheral: rig.devices.blePeripheral } : {}),
        close: () => Promise.resolve(unroute?.()),
      };
    devices = withBle(
      withNfc(rig.devices, nfcKind === 'none' ? undefined : (pcsc ?? rig.devices.nfc)),
      bleKind === 'virtual' ? undefined : ble,
    );
    let hands: CustomerHands = rig;
    if (vpcdAddress) {
      card = new VpcdCard({ ...vpcdAddress, log: (line) => process.stderr.write(`[vpcd] ${line}\n`) });
      hands = vpcdHands(rig, card);
    }
    const engage = oneOf<Engagement>('engage', args.engage, ['qr', 'nfc'], 'qr');
    for (const note of faultNotes(args, engage, nfcKind, kioskBleRoles(args))) process.stderr.write(`[relay] note: ${note}\n`);
    customer = new VirtualCustomer(hands, engage, loops);
    const embedded = counter.backend;
    if (embedded) {
      config = { ...config, backend: { ...config.backend, baseUrl: embedded.url, apiKey: embedded.apiKey } };
      process.stderr.write(`[relay] no backend configured: using the embedded mock backend at ${embedded.url}\n`);
    }
  } else {
    if (!args.qr?.length && !args['qr-stdin'] && nfcKind !== 'pcsc') {
      fail('no input: pass --nfc pcsc, --qr TEXT, --qr-stdin or --devices virtual');
    }
    // The real devices, as the hosts build them: the PC/SC reader, and noble/bleno on this machine's
    // stack in the roles of --kiosk-ble (none with --ble none, or when the radio link provides them).
    const bleRoles = bleKind === 'noble' && !linkAddress ? kioskBleRoles(args) : 'none';
    const configured = await createConfiguredDevices({ ...config, ble: { ...config.ble, roles: bleRoles } }, log, {
      nfc: nfcKind === 'pcsc' ? 'pcsc' : 'none',
      qrFreshMs: Number.MAX_SAFE_INTEGER,
    });
    if (nfcKind === 'pcsc' && !configured.pcsc)
      fail(configured.problems.find((p) => p.startsWith('nfc')) ?? 'the PC/SC reader could not be set up');
    pcsc = configured.pcsc;
    for (const problem of configured.problems) process.stderr.write(`[relay] ${problem}\n`);
    const qr = configured.qr;
    feeder = new ScanFeeder(qr, config.qr.requireMdocPrefix);
    for (const text of args.qr ?? []) {
      const refused = feeder.add(text);
      if (refused) fail(`--qr ${JSON.stringify(text.slice(0, 40))}: ${refused}`);
    }
    if (!args['qr-stdin']) {
      feeder.end();
      if (!pcsc && feeder.queued < loops) fail(`--loop ${loops} needs ${loops} scans, got ${feeder.queued} --qr value(s)`);
    }
    if (bleKind === 'noble' && linkAddress) {
      try {
        ble =
          config.ble.process === 'separate'
            ? await radioProcessOverRadioLink(linkAddress, kioskBleRoles(args), log.child({ component: 'ble' }))
            : await bleOverRadioLink(linkAddress, kioskBleRoles(args), log.child({ component: 'ble' }));
      } catch (e) {
        fail(`--radio-link: ${errorText(e)}`);
      }
    } else {
      ble = {
        ...(configured.ports.bleCentral ? { central: configured.ports.bleCentral } : {}),
        ...(configured.ports.blePeripheral ? { peripheral: configured.ports.blePeripheral } : {}),
        close: () => configured.close(),
      };
    }
    devices = withBle(configured.ports, ble);
  }
  for (const [role, port] of [
    ['central', devices.bleCentral],
    ['peripheral', devices.blePeripheral],
  ] as const) {
    if (!port || bleKind === 'virtual' || port.availability().reason === 'not_configured') continue;
    const say = (a: Availability): void => {
      process.stderr.write(
        `[relay] BLE ${role}: ${escapePeerText(a.usable ? 'usable' : `${a.reason ?? 'unusable'}${a.detail ? ` (${a.detail})` : ''}`)}\n`,
      );
    };
    say(port.availability());
    port.onAvailabilityChange?.(say);
  }
  if (pcsc) {
    const reader = pcsc;
    const say = (a: Availability): void => {
      const state = a.usable
        ? `using ${reader.readerName ?? 'the reader'}`
        : `${a.reason ?? 'unusable'}${a.detail ? ` (${a.detail})` : ''}`;
      // Reader names come from the device: escaped.
      process.stderr.write(`[relay] PC/SC: ${escapePeerText(state)}\n`);
    };
    say(reader.availability());
    reader.onAvailabilityChange(say);
  }

  let kiosk;
  try {
    kiosk = createKiosk(config, devices, log);
  } catch (e) {
    fail(errorText(e));
  }

  // ---------------------------------------------------------------- run
  const codes: number[] = [];
  let finish: (why: string | undefined) => void = () => undefined;
  const finished = new Promise<string | undefined>((resolve) => (finish = resolve));
  let lastPhase: KioskView['phase'] | undefined;
  kiosk.onView((view) => {
    customer?.onView(view);
    if (view.phase === lastPhase) return;
    lastPhase = view.phase;
    // The detail may quote what a peer sent (field names): escaped, so it cannot start a line of its own.
    const extra = view.error ? ` (${escapePeerText(view.error.code, 60)}: ${escapePeerText(view.error.detail, 300)})` : '';
    // The result line carries the answer to the request, not only the verdict (element names are the
    // request's own; peer text never reaches it).
    const said = view.phase === 'result' && view.outcome ? escapePeerText(resultText(view.outcome), 400) : PROMPT_TEXT[view.prompt];
    process.stderr.write(`[relay] ${view.phase}: ${said}${extra}\n`);
    // Only staff can fix it (credentials refused, a gateway that refuses the session socket): waiting would
    // not help a headless run.
    if (view.phase === 'config_error')
      finish(`staff needed: ${escapePeerText(view.error?.detail ?? 'the backend refused the configuration', 300)}`);
    if (view.phase === 'ready') feeder?.kioskReady();
  });
  // A verification that has not ended this long after the previous one is given up (e.g. backend down).
  let deadline: NodeJS.Timeout | undefined;
  const armDeadline = (): void => {
    clearTimeout(deadline);
    deadline = setTimeout(() => finish(`no verification ended within ${timeoutSeconds} s (--timeout)`), timeoutSeconds * 1000);
  };
  const checkInput = (): void => {
    // With a PC/SC reader, taps keep coming after the scans ran out.
    if (feeder && !pcsc && codes.length < loops && feeder.exhausted)
      finish(`input ended after ${codes.length} of ${loops} verification(s)`);
  };
  kiosk.onVerification((report: VerificationReport) => {
    process.stdout.write(`${JSON.stringify(report)}\n`);
    codes.push(verdictExitCode(report));
    if (codes.length >= loops) finish(undefined);
    armDeadline();
    // The kiosk takes the next scan while the result is still on screen.
    feeder?.verificationEnded();
    customer?.onVerificationEnded();
    checkInput();
  });
  if (feeder && args['qr-stdin']) {
    const scans = feeder;
    const lines = createInterface({ input: process.stdin, crlfDelay: Number.POSITIVE_INFINITY });
    lines.on('line', (line) => {
      const refused = scans.add(line);
      if (refused && refused !== 'empty') process.stderr.write(`[relay] ignored a scan: ${refused}\n`);
    });
    lines.on('close', () => {
      scans.end();
      checkInput();
    });
  }
  process.once('SIGINT', () => finish('interrupted'));
  process.once('SIGTERM', () => finish('terminated'));
  armDeadline();
  kiosk.start();
  const why = await finished;
  clearTimeout(deadline);
  if (why) process.stderr.write(`relay: ${why}\n`);
  customer?.stop();
  await kiosk.stop();
  await card?.remove();
  await ble?.close();
  await counter?.stop();
  await pcsc?.close();
  if (codes.length < loops) return 2;
  return worstExitCode(codes);
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`relay: ${errorText(e)}\n`);
    process.exit(2);
  },
);
