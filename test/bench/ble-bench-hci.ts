/**
 * The HCI half of `npm run bench:ble`: the kiosk's adapters on real noble/bleno stacks over BlueZ's emulated
 * controllers (tools/btvirt), so the figures include HCI, L2CAP, ATT, ACL fragmentation and the emulated
 * controller's flow control (one ACL packet in flight, ACL MTU 192).
 *
 *   notify    streams of NOTIFICATIONS × 240 B from a bleno phone in this process, back to back (at most
 *             WINDOW ahead of the receiver, hci-notify-stream.ts), into four receivers connected at once,
 *             each on a controller of its own with a phone of its own (PhoneServer says why):
 *               kiosk    the production path: `NobleCentral` in the kiosk's radio process (a forked child,
 *                        src/devices/ble/radio-process) and each notification over IPC to a handler here;
 *               inline   `NobleCentral` in this process (the adapter alone, no radio process);
 *               bare-a   noble's own API in a process of its own (hci-bare-noble-child.ts), the floor;
 *               bare-b   the same again on another controller: the A/A control.
 *             Paired and interleaved: after one unmeasured stream per receiver (each process's V8 compiles
 *             noble's HCI code on its first ~2,000 values, ~20 % slower), ROUNDS rounds of one stream per
 *             receiver. The order turns every two rounds and every other round is reversed, so each
 *             receiver comes before and after each other one equally often and a drift of the machine's
 *             load hits all alike. Per round, ratio = receiver's rate / bare-a's rate; the figure is the
 *             geometric mean with a seeded bootstrap 95 % interval over rounds (bench-stats.ts).
 *             Fairness: the floor runs in a process of its own, like the kiosk's noble, so both paths have
 *             the phone's process on one side and their own event loop on the other (a floor in this
 *             process would share the phone's loop and flatter the kiosk). A library instance holds its
 *             controller's tty for the life of its process, so which controller a path uses cannot be
 *             swapped between rounds; instead bare-b/bare-a, two identical receivers on two controllers and
 *             two processes, shows what the rig alone puts between two paths: the kiosk's ratio says
 *             something where its interval is clear of the A/A's;
 *   verify    whole QR → central verifications (kiosk + mock backend + the virtual phone on bleno) with a
 *             ≥ 20 kB response (a large portrait), from the scan to the outcome; median of the runs.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import type { Noble } from '@stoprocent/noble';
import { NobleCentral } from '../../src/devices/ble/noble-central.js';
import { nobleUuid } from '../../src/devices/ble/uuid.js';
import type { BleCentral, BleCentralLink, GattProfile } from '../../src/devices/ports.js';
import type { Bleno } from '../../src/devices/ble/bleno-types.js';
import { createHciBleno, createHciNoble } from '../../src/qa/hci/hci-libraries.js';
import { createHciRig, createHciStacks, HCI_CONTROLLER_NAMES, hciTtysIn, type HciStacks } from '../../src/qa/hci/hci-rig.js';
import { HciPhoneRadio } from '../../src/qa/hci/hci-phone-radio.js';
import { issueTestCredential } from '../../src/qa/sim/virtual-wallet/credential.js';
import { drawPortraitJpeg } from '../../src/qa/sim/virtual-wallet/portrait.js';
import { startEmulatedRadio } from '../../tools/btvirt/emulated-radio.js';
import { startE2eOn } from '../support/e2e-stack.js';
import { forkLauncher } from '../../src/devices/ble/radio-process/launcher.js';
import { RadioProcess } from '../../src/devices/ble/radio-process/radio-process.js';
import { SERVER_MODE } from '../support/radio-phone.js';
import { describeInterval, ratioInterval, type RatioInterval } from './bench-stats.js';
import { describeSummary, summarize } from './bench-tools.js';
import { BareReply, OrderedSink, VALUE_BYTES, WINDOW, notifyValue, type BareRequest } from './hci-notify-stream.js';

const NOTIFICATIONS = 1_000;
/** Measured rounds of the notify comparison, after one unmeasured stream per receiver. */
const ROUNDS = 16;
/** The printed seed of the bootstrap intervals (a run's interval can be recomputed from its ratios). */
const SEED = 34;
const VERIFICATIONS = 5;
const MIN_RESPONSE_BYTES = 20_000;
/** Controllers the notify comparison adds to the rig's four (tools/btvirt makes any number on one air). */
const EXTRA_CONTROLLERS = {
  radioProcess: 'kiosk-radio',
  inline: 'kiosk-inline',
  bareA: 'bare-a',
  bareB: 'bare-b',
  phoneB: 'phone-b',
  phoneC: 'phone-c',
  phoneD: 'phone-d',
} as const;

export interface HciFigures {
  /** Median rate through the kiosk's production path (the radio process), notifications/s. */
  readonly notifiedPerSecond: number;
  readonly floorPerSecond: number;
  /** kiosk (radio process) / bare noble, per round. */
  readonly ratio: RatioInterval | undefined;
  /** NobleCentral in this process / bare noble, per round. */
  readonly inlineRatio: RatioInterval | undefined;
  /** bare noble / bare noble on another controller and process: the rig's own bias and noise. */
  readonly aaRatio: RatioInterval | undefined;
  readonly verificationMedianMs: number;
  /** The same verifications with the kiosk's noble in the production radio process (a forked child). */
  readonly processVerificationMedianMs: number;
  readonly responseBytes: number;
  readonly failures: readonly string[];
}

/** The kiosk's profile in mdoc peripheral server mode (the phone is the GATT server); ble-bench.ts uses it too. */
export function serverModeProfile(serviceUuid: string): GattProfile {
  return {
    serviceUuid,
    characteristics: {
      state: { uuid: SERVER_MODE.state, operations: ['notify', 'write_without_response'], permissions: ['writeable'] },
      c2s: { uuid: SERVER_MODE.c2s, operations: ['write_without_response'], permissions: ['writeable'] },
      s2c: { uuid: SERVER_MODE.s2c, operations: ['notify'], permissions: [] },
    },
  };
}

async function until(test: () => boolean, what: string, ms = 10_000): Promise<void> {
  for (const t0 = performance.now(); !test(); ) {
    if (performance.now() - t0 > ms) throw new Error(`${what} within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** How many values of the current stream a receiver took; the sender waits on it (WINDOW). */
class Progress {
  value = 0;
  private waiter: { n: number; resolve: () => void } | undefined;

  set(value: number): void {
    this.value = value;
    if (this.waiter && value >= this.waiter.n) {
      this.waiter.resolve();
      this.waiter = undefined;
    }
  }

  until(n: number): Promise<void> {
    if (this.value >= n) return Promise.resolve();
    return new Promise((resolve) => (this.waiter = { n, resolve }));
  }
}

/** One receiver of the comparison: how to arm it for a stream, and how far it is in it. */
interface Receiver {
  readonly label: string;
  readonly progress: Progress;
  /** Arms it for a stream of `count` values; resolves once armed, with the arrival time of the last one to come. */
  arm(count: number): Promise<{ readonly finished: Promise<number> }>;
  failures(): readonly string[];
  close(): Promise<void>;
}

/**
 * A phone as a GATT server on bleno, one per receiver on a controller of its own: btvirt (BlueZ 5.66) gives
 * every connection of a controller the same handle (42), so one controller cannot serve two links at once.
 */
class PhoneServer {
  private subscribed: number | undefined;
  readonly phone: HciPhoneRadio;
  constructor(
    bleno: Bleno,
    readonly service: string,
  ) {
    this.phone = new HciPhoneRadio({ bleno });
  }

  /** Serves and advertises, connects the receiver (`connect`), and resolves once it subscribed. */
  async connect(connect: () => Promise<Receiver>): Promise<Receiver> {
    this.phone.peripheral.setServices(
      [
        {
          uuid: this.service,
          characteristics: [
            { uuid: SERVER_MODE.state, properties: ['notify', 'writeWithoutResponse'] },
            { uuid: SERVER_MODE.c2s, properties: ['writeWithoutResponse'] },
            { uuid: SERVER_MODE.s2c, properties: ['notify'] },
          ],
        },
      ],
      {
        onSubscribe: (r) => {
          if (r.characteristicUuid === SERVER_MODE.s2c) this.subscribed = r.connection.handle;
        },
      },
    );
    await this.phone.peripheral.startAdvertising({ localName: 'phone', serviceUuids: [this.service] });
    const receiver = await connect();
    await until(() => this.subscribed !== undefined, `${receiver.label} subscribed`);
    await this.phone.peripheral.stopAdvertising();
    return receiver;
  }

  /** Sends NOTIFICATIONS values to its receiver; resolves with the rate at which it took them all. */
  async stream(receiver: Receiver): Promise<number> {
    const handle = this.subscribed;
    if (handle === undefined) throw new Error(`${receiver.label}: not subscribed`);
    this.phone.trace.splice(0); // not needed here: keep it from growing across streams
    const { finished } = await receiver.arm(NOTIFICATIONS);
    const start = performance.now();
    const { progress } = receiver;
    for (let i = 0; i < NOTIFICATIONS; i++) {
      if (i - progress.value >= WINDOW) await within(progress.until(i - WINDOW + 1), 10_000, `${receiver.label}: value ${i - WINDOW}`);
      await this.phone.peripheral.notify(handle, this.service, SERVER_MODE.s2c, notifyValue(i));
    }
    const end = await within(finished, 60_000, `${receiver.label}: the stream's last notification`);
    return NOTIFICATIONS / ((end - start) / 1000);
  }

  async close(): Promise<void> {
    await until(() => this.phone.peripheral.connections.length === 0, 'the receiver left');
    this.phone.peripheral.setServices([]);
    this.phone.dispose();
  }
}

/** A `NobleCentral` (in this process or in the radio process): notifications reach the sink here. */
async function adapterReceiver(label: string, central: BleCentral, service: string): Promise<Receiver> {
  await until(() => central.availability().usable, `${label} powered on`, 20_000);
  const sink = new OrderedSink();
  const progress = new Progress();
  sink.onValue = (received) => progress.set(received);
  const link: BleCentralLink = await central.connect(
    serverModeProfile(service),
    { onNotification: (_u, d) => sink.receive(d), onDisconnect: () => undefined },
    new AbortController().signal,
  );
  return {
    label,
    progress,
    arm: (count) => {
      progress.set(0);
      return Promise.resolve({ finished: new Promise<number>((resolve) => sink.start(count, () => resolve(performance.now()))) });
    },
    failures: () => sink.failures,
    close: () => link.close(),
  };
}

/** noble alone in a process of its own (hci-bare-noble-child.ts) on the controller behind `tty`. */
async function bareReceiver(label: string, tty: string, service: string): Promise<Receiver> {
  const child: ChildProcess = fork(new URL('./hci-bare-noble-child.js', import.meta.url), [tty], {
    serialization: 'advanced',
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const failures: string[] = [];
  const progress = new Progress();
  let waiting: { t: BareReply['t']; resolve: (reply: BareReply) => void; reject: (e: Error) => void } | undefined;
  const next = (t: BareReply['t']): Promise<BareReply> =>
    new Promise((resolve, reject) => {
      waiting = { t, resolve, reject };
    });
  child.on('message', (raw: unknown) => {
    const parsed = BareReply.safeParse(raw);
    const reply: BareReply = parsed.success ? parsed.data : { t: 'error', message: `${label}: a message that does not parse` };
    const w = waiting;
    if (reply.t === 'error') {
      failures.push(`${label}: ${reply.message}`);
      waiting = undefined;
      w?.reject(new Error(`${label}: ${reply.message}`));
      return;
    }
    if (reply.t === 'progress') progress.set(reply.received);
    if (reply.t === 'done') failures.push(...reply.failures.map((f) => `${label}: ${f}`));
    if (w?.t === reply.t) {
      waiting = undefined;
      w.resolve(reply);
    }
  });
  child.on('exit', (code) => waiting?.reject(new Error(`${label}: the child exited (${code})`)));
  const send = (request: BareRequest): void => void child.send(request);
  const subscribed = next('subscribed');
  send({ t: 'connect', service: nobleUuid(service), characteristic: nobleUuid(SERVER_MODE.s2c) });
  await within(subscribed, 30_000, `${label} connected`);
  return {
    label,
    progress,
    arm: async (count) => {
      progress.set(0);
      const armed = next('armed');
      send({ t: 'expect', count });
      await within(armed, 5_000, `${label} armed`);
      // Nothing else is asked while a stream runs: `done` is the next reply.
      const done = next('done');
      return { finished: done.then(() => performance.now()) };
    },
    failures: () => failures,
    close: async () => {
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      if (child.connected) send({ t: 'stop' });
      const timer = setTimeout(() => child.kill(), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Round `round`'s order: turned every two rounds, every other round reversed (see the header). */
function roundOrder<T>(items: readonly T[], round: number): T[] {
  const turn = Math.floor(round / 2) % items.length;
  const turned = [...items.slice(turn), ...items.slice(0, turn)];
  return round % 2 === 1 ? turned.reverse() : turned;
}

interface NotifyFigures {
  readonly kioskPerSecond: number;
  readonly floorPerSecond: number;
  readonly ratio: RatioInterval;
  readonly inlineRatio: RatioInterval;
  readonly aaRatio: RatioInterval;
}

async function notifyFigures(
  senders: readonly Bleno[],
  kioskCentral: BleCentral,
  inlineNoble: Noble,
  ttys: { readonly bareA: string; readonly bareB: string },
  failures: string[],
): Promise<NotifyFigures> {
  const inline = new NobleCentral(inlineNoble, { platform: 'hci' });
  const pairs: { server: PhoneServer; receiver: Receiver }[] = [];
  const add = async (connect: (service: string) => Promise<Receiver>): Promise<Receiver> => {
    const bleno = senders[pairs.length];
    if (!bleno) throw new Error('a sender per receiver');
    const server = new PhoneServer(bleno, `11111111-2222-4333-8444-5555555555${(0xa1 + pairs.length).toString(16)}`);
    const receiver = await server.connect(() => connect(server.service));
    pairs.push({ server, receiver });
    return receiver;
  };
  try {
    const kiosk = await add((service) => adapterReceiver('kiosk (radio process)', kioskCentral, service));
    const inlined = await add((service) => adapterReceiver('NobleCentral in this process', inline, service));
    const bareA = await add((service) => bareReceiver('bare noble', ttys.bareA, service));
    const bareB = await add((service) => bareReceiver('bare noble B', ttys.bareB, service));
    for (const { server, receiver } of pairs) await server.stream(receiver); // warm-up, unmeasured
    const rates = new Map<Receiver, number[]>(pairs.map((p) => [p.receiver, []]));
    for (let round = 0; round < ROUNDS; round++) {
      for (const { server, receiver } of roundOrder(pairs, round)) rates.get(receiver)?.push(await server.stream(receiver));
    }
    const of = (r: Receiver): number[] => rates.get(r) ?? [];
    const ratios = (r: Receiver): number[] => of(r).map((rate, i) => rate / (of(bareA)[i] ?? Number.NaN));
    const figures: NotifyFigures = {
      kioskPerSecond: summarize(of(kiosk)).median,
      floorPerSecond: summarize(of(bareA)).median,
      ratio: ratioInterval(ratios(kiosk), { seed: SEED }),
      inlineRatio: ratioInterval(ratios(inlined), { seed: SEED }),
      aaRatio: ratioInterval(ratios(bareB), { seed: SEED }),
    };
    const perRound = (r: Receiver): string =>
      of(r)
        .map((v) => v.toFixed(0))
        .join(' ');
    console.log(
      `\nHCI notifications (${NOTIFICATIONS} × ${VALUE_BYTES} B per stream; ${ROUNDS} rounds of one stream per receiver, interleaved, after one unmeasured each; bootstrap seed ${SEED})`,
    );
    for (const { receiver: r } of pairs)
      console.log(`  ${r.label.padEnd(30)} median ${summarize(of(r)).median.toFixed(0)}/s  [${perRound(r)}]`);
    console.log(`  kiosk (radio process) / bare noble:       ${describeInterval(figures.ratio)}`);
    console.log(`  NobleCentral in this process / bare noble: ${describeInterval(figures.inlineRatio)}`);
    console.log(`  A/A: bare noble B / bare noble:           ${describeInterval(figures.aaRatio)}`);
    return figures;
  } finally {
    for (const { server, receiver } of pairs) {
      await receiver.close().catch(() => undefined);
      failures.push(...receiver.failures());
      await server.close().catch((e: unknown) => failures.push(e instanceof Error ? e.message : String(e)));
    }
    inline.dispose();
  }
}

async function verificationFigures(
  stacks: HciStacks,
  failures: string[],
  radioProcess?: RadioProcess,
): Promise<{ medianMs: number; responseBytes: number }> {
  // A portrait large enough that the phone's answer is at least 20 kB.
  const portrait = drawPortraitJpeg({ width: 360, height: 480, quality: 92 });
  const credential = await issueTestCredential({ holder: { portrait } });
  // Through the radio process, the kiosk's libraries here stay unstarted: the child owns the controller.
  const rig = await createHciRig(stacks, {
    profile: 'android',
    credential,
    ble: radioProcess ? { central: false, peripheral: false } : { peripheral: false },
  });
  const stack = await startE2eOn(rig, {
    config: { profile: 'identity' },
    captureLogs: false,
    ...(radioProcess ? { devices: () => ({ ...rig.devices, bleCentral: radioProcess.central }) } : {}),
  });
  const samples: number[] = [];
  let responseBytes = 0;
  try {
    for (let i = 0; i < VERIFICATIONS; i++) {
      await stack.ready();
      const before = rig.phone.device.trace.length;
      const started = performance.now();
      rig.showQr();
      const report = await stack.nextReport(60_000);
      const took = performance.now() - started;
      if (report.result !== 'complete' || report.outcome?.verdict !== 'verified') {
        failures.push(`HCI verification ${i + 1}: ${report.result} ${report.outcome?.verdict ?? ''}`);
        continue;
      }
      samples.push(took);
      responseBytes = rig.phone.device.trace
        .slice(before)
        .filter((v) => v.direction === 'sent')
        .reduce((n, v) => n + v.data.length, 0);
    }
  } finally {
    await stack.stop();
  }
  if (responseBytes < MIN_RESPONSE_BYTES)
    failures.push(`the phone's answer was ${responseBytes} bytes, below the ${MIN_RESPONSE_BYTES} the figure is for`);
  const s = summarize(samples);
  console.log(
    `HCI QR → central verification${radioProcess ? ', noble in the radio process,' : ''} ms (response ${responseBytes} B): ${describeSummary(s, 1)}`,
  );
  return { medianMs: s.median, responseBytes };
}

export async function hciFigures(): Promise<HciFigures> {
  const failures: string[] = [];
  const radio = await startEmulatedRadio({
    controllers: [...Object.values(HCI_CONTROLLER_NAMES), ...Object.values(EXTRA_CONTROLLERS)],
    dir: `/tmp/mdl-kiosk-btvirt-bench-${process.pid}`,
  });
  // Every noble and bleno instance here adds a listener to the process's `exit`: 5 of each, above Node's 10.
  process.setMaxListeners(Math.max(process.getMaxListeners(), 24));
  const tty = (name: string): string => `${radio.dir.replace(/\/$/, '')}/${name}`;
  let inlineNoble: Noble | undefined;
  try {
    const stacks = createHciStacks(hciTtysIn(radio.dir));
    const silent = { info: () => undefined, warn: () => undefined };
    // The radio process on a controller of its own, so that it serves the notify comparison and the
    // verifications through it while the in-process verifications keep the rig's kiosk controller.
    const radioProcess = new RadioProcess({
      launcher: forkLauncher({
        env: { BLUETOOTH_HCI_SOCKET_UART_PORT: tty(EXTRA_CONTROLLERS.radioProcess) },
        // `node --cpu-prof … ble-bench.js` profiles the radio process too (the bare children inherit the flags).
        execArgv: process.execArgv.filter((a) => a.startsWith('--cpu-prof')),
      }),
      init: { central: true, peripheral: false },
      log: silent,
    });
    let verify: { medianMs: number; responseBytes: number } = { medianMs: Number.NaN, responseBytes: 0 };
    let viaProcess = Number.NaN;
    let notify: NotifyFigures | undefined;
    try {
      const problems = await radioProcess.started();
      if (problems.length > 0) throw new Error(`radio process: ${problems.join('; ')}`);
      const central = radioProcess.central;
      if (!central) throw new Error('radio process: no central');
      await until(() => central.availability().usable, 'the radio process powered on', 20_000);
      inlineNoble = createHciNoble({ tty: tty(EXTRA_CONTROLLERS.inline) });
      // A phone per receiver (see PhoneServer): the rig's phone controller and three more, all in this process.
      const senders = [
        stacks.phoneBleno,
        ...[EXTRA_CONTROLLERS.phoneB, EXTRA_CONTROLLERS.phoneC, EXTRA_CONTROLLERS.phoneD].map((n) => createHciBleno({ tty: tty(n) })),
      ];
      notify = await notifyFigures(
        senders,
        central,
        inlineNoble,
        { bareA: tty(EXTRA_CONTROLLERS.bareA), bareB: tty(EXTRA_CONTROLLERS.bareB) },
        failures,
      );
      verify = await verificationFigures(stacks, failures);
      viaProcess = (await verificationFigures(stacks, failures, radioProcess)).medianMs;
    } finally {
      await radioProcess.close();
    }
    stacks.phoneNoble.stop();
    stacks.kioskNoble.stop();
    return {
      notifiedPerSecond: notify.kioskPerSecond,
      floorPerSecond: notify.floorPerSecond,
      ratio: notify.ratio,
      inlineRatio: notify.inlineRatio,
      aaRatio: notify.aaRatio,
      verificationMedianMs: verify.medianMs,
      processVerificationMedianMs: viaProcess,
      responseBytes: verify.responseBytes,
      failures,
    };
  } catch (e) {
    failures.push(`HCI: ${e instanceof Error ? e.message : String(e)}`);
    return {
      notifiedPerSecond: Number.NaN,
      floorPerSecond: Number.NaN,
      ratio: undefined,
      inlineRatio: undefined,
      aaRatio: undefined,
      verificationMedianMs: Number.NaN,
      processVerificationMedianMs: Number.NaN,
      responseBytes: 0,
      failures,
    };
  } finally {
    inlineNoble?.stop();
    await radio.stop();
  }
}
