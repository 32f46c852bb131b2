/**
 * `npm run virtual-wallet -- [options]`: the virtual phone as a contactless card on a vpcd reader, so a
 * kiosk on this machine (pcscd + vsmartcard-vpcd, no reader hardware) sees a real PC/SC card and runs the
 * NFC engagement and handover against it. Commands on stdin, one per line; one line per event on stdout.
 * Exit status: 0 after quit, end of input, SIGINT or SIGTERM; 2 on a usage error or a failed start.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import {
  createHciPhone,
  createHciStacks,
  defaultHciDir,
  defaultQaPkiDir,
  hciTtysIn,
  type PhoneRadio,
  describePhoneProfiles,
  isPhoneProfileName,
  issueTestCredential,
  loadOrCreateQaPki,
  parseHostPort,
  PHONE_PROFILE_NAMES,
  type PhoneBehaviour,
  type PhoneProfileName,
  type PresentationInfo,
  RadioLinkServer,
  type VirtualNfcTag,
  VirtualPhone,
  VirtualRadio,
  VpcdAddressError,
  VpcdCard,
  type VpcdCardEvent,
  type VpcdReaderAddress,
} from '../qa/index.js';
import { errorText } from '../common/error-text.js';

const DEFAULT_AWAY_MS = 600;

const USAGE = `Usage: npm run virtual-wallet -- [options]

The virtual phone as a contactless card on a vpcd reader (pcscd + vsmartcard-vpcd): a kiosk on this
machine sees a card on "Virtual PCD 00 00" and runs the NFC engagement and handover against it.
Commands on stdin, one per line; one line per event on stdout. End of input quits.

Options:
  --vpcd HOST:PORT       the vpcd reader (default 127.0.0.1:35963, slot 0; slot 1 is 35964)
  --profile NAME         the phone's profile (default android; --phone too), one of:
${describePhoneProfiles('                           ')}
                         (docs/wallet-profiles.md: what each does and the captures it rests on)
  --tap                  tap at start
  --away-ms MS           how long a re-tap keeps the phone off the reader, and the least time between a
                         removal and the next tap, so pcscd notices the removal (default ${DEFAULT_AWAY_MS})
  --field-drop-at N      the NFC field drops at APDU N of a presentation (the card leaves the reader)
  --portrait FORMAT      the mDL portrait as jpeg (default) or jpeg2000 (a lossless JP2 file)
  --radio-link PORT      serve the phone's radio on 127.0.0.1:PORT (0: a free port) so that a kiosk in another
                         process reaches it over Bluetooth: npm run relay -- --ble noble --radio-link HOST:PORT
  --hci-dir DIR          the phone's Bluetooth on BlueZ's emulated controllers instead (its wallet on noble and
                         bleno over the ttys phone-central and phone-peripheral that npm run btvirt -- start
                         makes in DIR, default ${defaultHciDir()}); a kiosk on the kiosk-central tty reaches it:
                         BLUETOOTH_HCI_SOCKET_UART_PORT=DIR/kiosk-central npm run relay -- --ble noble --kiosk-ble central …
  -h, --help             this text

The phone's mDL is issued under the QA PKI (${defaultQaPkiDir()}).

Commands:
  tap          lay the phone on the reader with a fresh NFC engagement (a phone already there is lifted)
  remove       take the phone away (also: lift)
  retap        lift it, wait --away-ms, lay it down again continuing the same presentation
  mute on|off  stop / resume answering APDUs (GET ATR still answered: the card stays present)
  qr           show a fresh QR engagement (prints its text, for a kiosk's --qr / --qr-stdin)
  status       card, APDU count, presentation
  quit         take the phone away and exit (also: exit)`;

const NOTE = `[virtual-wallet] note: this exercises the NFC engagement and handover only. The BLE transfer that follows
needs the phone and the kiosk on one radio, which this release has in one process only
(npm run relay -- --devices virtual); a cross-process radio link comes with the BLE adapters.
`;

function fail(message: string): never {
  process.stderr.write(`virtual-wallet: ${message}\n`);
  process.exit(2);
}

const OPTIONS = {
  vpcd: { type: 'string' },
  profile: { type: 'string' },
  phone: { type: 'string' },
  tap: { type: 'boolean' },
  'away-ms': { type: 'string' },
  'field-drop-at': { type: 'string' },
  portrait: { type: 'string' },
  'radio-link': { type: 'string' },
  'hci-dir': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

function parse(): ReturnType<typeof parseArgs<{ options: typeof OPTIONS; strict: true; allowPositionals: false }>>['values'] {
  try {
    return parseArgs({ options: OPTIONS, strict: true, allowPositionals: false }).values;
  } catch (e) {
    fail(`${errorText(e)}\n\n${USAGE}`);
  }
}

function wholeNumber(name: string, value: string | undefined, min: number): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < min) fail(`--${name} takes a whole number ≥ ${min}`);
  return n;
}

function portraitFormat(value: string | undefined): 'jpeg' | 'jpeg2000' {
  if (value === undefined) return 'jpeg';
  if (value !== 'jpeg' && value !== 'jpeg2000') fail('--portrait takes jpeg | jpeg2000');
  return value;
}

function vpcdAddress(value: string | undefined): VpcdReaderAddress {
  try {
    return parseHostPort(value ?? '127.0.0.1:35963');
  } catch (e) {
    if (e instanceof VpcdAddressError) fail(`--vpcd: ${e.message}`);
    throw e;
  }
}

function profileName(args: ReturnType<typeof parse>): PhoneProfileName {
  if (args.profile !== undefined && args.phone !== undefined && args.profile !== args.phone)
    fail('--profile and --phone say different things');
  const name = args.profile ?? args.phone ?? 'android';
  if (!isPhoneProfileName(name)) fail(`--profile takes ${PHONE_PROFILE_NAMES.join(' | ')}`);
  return name;
}

const out = (line: string): void => {
  process.stdout.write(`[virtual-wallet] ${line}\n`);
};

function describePresentation(info: PresentationInfo | undefined): string {
  if (info === undefined) return 'no presentation yet';
  const handover = info.handover?.type === 'nfc' ? 'handover done' : 'handover pending';
  return `presentation ${info.engagement}, ${handover}`;
}

async function main(): Promise<number> {
  const args = parse();
  if (args.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const address = vpcdAddress(args.vpcd);
  const profile = profileName(args);
  const awayMs = wholeNumber('away-ms', args['away-ms'], 0) ?? DEFAULT_AWAY_MS;
  const fieldDrop = wholeNumber('field-drop-at', args['field-drop-at'], 1);
  const portrait = portraitFormat(args.portrait);
  const behaviour: PhoneBehaviour = { portrait, ...(fieldDrop === undefined ? {} : { nfcFieldDropAtApdu: fieldDrop }) };

  const linkPort = wholeNumber('radio-link', args['radio-link'], 0);
  if (linkPort !== undefined && linkPort > 65_535) fail('--radio-link takes a port number');
  const hciDir = args['hci-dir'] === undefined ? undefined : resolve(args['hci-dir']);
  if (hciDir !== undefined && linkPort !== undefined) fail('--hci-dir and --radio-link exclude each other');
  if (linkPort === undefined && hciDir === undefined) process.stderr.write(NOTE);
  const { pki } = await loadOrCreateQaPki(defaultQaPkiDir());
  const credential = await issueTestCredential({ pki, validity: 'valid', portraitFormat: portrait });
  const radio = new VirtualRadio();
  let phone: VirtualPhone<PhoneRadio>;
  if (hciDir === undefined) {
    phone = await VirtualPhone.create({ profile, radio, behaviour, credential });
  } else {
    const ttys = hciTtysIn(hciDir);
    const missing = [ttys.phoneCentral, ttys.phonePeripheral].filter((tty) => !existsSync(tty));
    if (missing.length > 0)
      fail(`--hci-dir: no emulated controller at ${missing.join(', ')}; start them with: npm run btvirt -- start --dir ${hciDir}`);
    phone = await createHciPhone(createHciStacks(ttys), { profile, behaviour, credential });
    out(
      `the phone's Bluetooth: noble on ${ttys.phoneCentral}, bleno on ${ttys.phonePeripheral} (a kiosk: BLUETOOTH_HCI_SOCKET_UART_PORT=${ttys.kioskCentral})`,
    );
  }
  let link: RadioLinkServer | undefined;
  try {
    link = linkPort === undefined ? undefined : await RadioLinkServer.start({ radio, port: linkPort });
  } catch (e) {
    fail(`--radio-link: ${errorText(e)}`);
  }
  if (link) out(`radio link on 127.0.0.1:${link.port}: npm run relay -- --ble noble --radio-link 127.0.0.1:${link.port} …`);

  let handoverReported: PresentationInfo | undefined;
  const onEvent = (event: VpcdCardEvent): void => {
    if (event.type === 'removed' && event.cause === 'field_lost')
      out('the phone left the field: "retap" lays it down again (same presentation)');
    const info = phone.presentation;
    if (event.type === 'apdu' && info?.handover?.type === 'nfc' && handoverReported !== info) {
      handoverReported = info;
      out(
        `handover done: the phone now starts BLE${linkPort === undefined && hciDir === undefined ? ', which needs the kiosk on its radio (see the note at start)' : ''}`,
      );
    }
  };
  const card = new VpcdCard({ ...address, minAwayMs: awayMs, log: out, onEvent });

  let lastTag: VirtualNfcTag | undefined;
  /** A fresh NFC engagement: a new presentation, whose end is reported. */
  const freshTag = (): VirtualNfcTag => {
    const tag = phone.tag();
    const info = phone.presentation;
    void info?.outcome.then((o) => out(`presentation ended: ${o.kind}${o.kind === 'aborted' ? ` (${o.reason})` : ''}`));
    out(`new presentation: ${profile} phone, ${info?.engagement ?? 'nfc'} engagement`);
    return tag;
  };
  const tap = async (): Promise<void> => {
    if (card.inserted) await card.remove();
    lastTag = freshTag();
    await card.insert(lastTag);
  };

  let stopping: Promise<void> | undefined;
  let stopped: () => void = () => undefined;
  const finished = new Promise<void>((resolve) => (stopped = resolve));
  // A function, not the variable: the check runs after awaits, when a signal may have started the stop.
  const isStopping = (): boolean => stopping !== undefined;
  const stop = (why: string): Promise<void> => {
    stopping ??= (async () => {
      out(`${why}: taking the phone away`);
      await card.remove();
      await link?.stop();
      await phone.stop();
      radio.shutdown();
      stopped();
    })();
    return stopping;
  };

  const remove = async (): Promise<void> => {
    if (!card.inserted) out('the phone is not on the reader');
    await card.remove();
  };
  const commands: Partial<Record<string, (arg: string | undefined) => Promise<void> | void>> = {
    tap,
    remove,
    lift: remove,
    retap: async () => {
      lastTag ??= freshTag();
      out(`retap: off the reader for ${awayMs} ms`);
      await card.reinsert(lastTag, { awayMs });
    },
    mute: (arg) => {
      if (arg !== 'on' && arg !== 'off') {
        out('mute takes on | off');
        return;
      }
      card.setMute(arg === 'on');
      out(`muted: ${arg} (APDUs ${arg === 'on' ? 'unanswered' : 'answered'}; GET ATR always answered)`);
    },
    qr: () => {
      const text = phone.presentQr();
      void phone.presentation?.outcome.then((o) => out(`presentation ended: ${o.kind}${o.kind === 'aborted' ? ` (${o.reason})` : ''}`));
      out(`qr: ${text}`);
    },
    status: () => {
      out(
        `status: ${card.inserted ? 'on the reader' : 'off the reader'} (${card.address}), ${card.apdus} APDU(s), muted ${card.muted ? 'on' : 'off'}, ${describePresentation(phone.presentation)}`,
      );
    },
    help: () => {
      out('commands: tap, remove, retap, mute on|off, qr, status, quit');
    },
  };

  const run = async (line: string): Promise<void> => {
    const [name, arg] = line.trim().split(/\s+/);
    if (name === undefined || name === '' || isStopping()) return;
    if (name === 'quit' || name === 'exit') {
      await stop('quit');
      return;
    }
    const command = commands[name];
    if (command === undefined) {
      out(`unknown command "${name}" (help lists them)`);
      return;
    }
    try {
      await command(arg);
    } catch (e) {
      if (!isStopping()) out(`${name} failed: ${errorText(e)}`);
    }
  };

  out(
    `ready: ${profile} phone (${portrait === 'jpeg2000' ? 'JPEG 2000' : 'JPEG'} portrait) for the vpcd reader at ${card.address}; commands: tap, remove, retap, mute on|off, qr, status, quit`,
  );
  if (args.tap) {
    try {
      await tap();
    } catch (e) {
      await stop('start failed');
      fail(errorText(e));
    }
  }

  // Commands run one at a time, in order: a retap finishes before the next line is looked at.
  let queue = Promise.resolve();
  const lines = createInterface({ input: process.stdin, crlfDelay: Number.POSITIVE_INFINITY });
  lines.on('line', (line) => {
    queue = queue.then(() => run(line));
  });
  lines.on('close', () => {
    queue = queue.then(() => stop('end of input'));
  });
  process.once('SIGINT', () => void stop('interrupted'));
  process.once('SIGTERM', () => void stop('terminated'));
  await finished;
  return 0;
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`virtual-wallet: ${errorText(e)}\n`);
    process.exit(2);
  },
);
