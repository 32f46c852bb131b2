/**
 * The HCI half of `npm run bench:ble`: the kiosk's adapters on real noble/bleno stacks over BlueZ's emulated
 * controllers (tools/btvirt), so the figures include HCI, L2CAP, ATT, ACL fragmentation and the emulated
 * controller's flow control (one ACL packet in flight, ACL MTU 192).
 *
 *   notify    streams of NOTIFICATIONS × 240 B, back to back, from four bleno phones in a process of their own
 *             (hci-phone-child.ts; a phone is a device of its own, and so no receiver shares the sender's
 *             event loop) into four receivers, each on a controller of its own:
 *               kiosk    the production path: `NobleCentral` in the kiosk's radio process (a forked child,
 *                        src/devices/ble/radio-process) and each notification over IPC to a handler in this
 *                        process, which stands for the kiosk's main process;
 *               inline   `NobleCentral` in this process (the adapter alone, no radio process);
 *               bare-a   noble's own API in a process of its own (hci-bare-noble-child.ts), the floor;
 *               bare-b   the same again on other controllers: the A/A control.
 *             A phone keeps at most WINDOW values ahead of its receiver (hci-notify-stream.ts says why);
 *             every receiver reports its progress to it every PROGRESS_EVERY (16) values, through this
 *             process. After one unmeasured stream per receiver (each process's V8 compiles noble's HCI
 *             code on its first values), ROUNDS rounds, each of:
 *               together  the four streams at once; each receiver's rate over the same span (Phones.round).
 *                         The pairs share the moment, so the machine's load, which swings rates by 2× from
 *                         one second to the next here, cancels in the ratio: this is `hci_ratio`, the
 *                         kiosk's rate over bare noble's, and the issue's question (does the kiosk keep the
 *                         air's rate). What it cannot see: a receiver's own cost while it keeps pace, since
 *                         the phones and btvirt decide the rate then; hence
 *               alone     one stream per receiver, back to back, with the CPU time of this process and the
 *                         receiver's process per notification (/proc schedstat): the kiosk's own cost
 *                         against noble's (`hci_cpu_ratio`), and the rate alone (`hci_alone_ratio`, which
 *                         the load leaves wide: the 0.83–1.15 of the old single-figure bench).
 *             The order of the streams turns every two rounds and every other round is reversed, so each
 *             receiver comes before and after each other one equally often. Per round, ratio = receiver's
 *             figure / bare-a's; the figure is the geometric mean with a seeded bootstrap 95 % interval
 *             over rounds (bench-stats.ts).
 *             Fairness: the floor runs in a process of its own, like the kiosk's noble, so both have the
 *             phones' process on one side and their own event loop on the other. A library instance holds
 *             its controller's tty for the life of its process, so which controllers a path uses cannot be
 *             swapped between rounds; instead bare-b / bare-a, two identical receivers on different
 *             controllers and processes, shows what the rig alone puts between two paths, with its own
 *             interval (A/A, for every figure): a kiosk ratio says something where it is clear of the A/A's;
 *   verify    whole QR → central verifications (kiosk + mock backend + the virtual phone on bleno) with a
 *             ≥ 20 kB response (a large portrait), from the scan to the outcome; median of the runs.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import type { Noble } from '@stoprocent/noble';
import { NobleCentral } from '../../src/devices/ble/noble-central.js';
import { nobleUuid } from '../../src/devices/ble/uuid.js';
import type { BleCentral, BleCentralLink, GattProfile } from '../../src/devices/ports.js';
import { createHciNoble } from '../../src/qa/hci/hci-libraries.js';
import { createHciRig, createHciStacks, HCI_CONTROLLER_NAMES, hciTtysIn, type HciStacks } from '../../src/qa/hci/hci-rig.js';
import { issueTestCredential } from '../../src/qa/sim/virtual-wallet/credential.js';
import { drawPortraitJpeg } from '../../src/qa/sim/virtual-wallet/portrait.js';
import { startEmulatedRadio } from '../../tools/btvirt/emulated-radio.js';
import { startE2eOn } from '../support/e2e-stack.js';
import { forkLauncher } from '../../src/devices/ble/radio-process/launcher.js';
import { RadioProcess } from '../../src/devices/ble/radio-process/radio-process.js';
import { SERVER_MODE } from '../support/radio-phone.js';
import { describeInterval, ratioInterval, type RatioInterval } from './bench-stats.js';
import { describeSummary, summarize } from './bench-tools.js';
import {
  BareReply,
  OrderedSink,
  PROGRESS_EVERY,
  PhoneReply,
  VALUE_BYTES,
  type BareRequest,
  type PhoneRequest,
} from './hci-notify-stream.js';

const NOTIFICATIONS = 1_000;
/** Measured rounds of the notify comparison, after one unmeasured stream per receiver. */
const ROUNDS = 12;
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
  phoneA: 'phone-a',
  phoneB: 'phone-b',
  phoneC: 'phone-c',
  phoneD: 'phone-d',
} as const;

export interface HciFigures {
  /** Median rate of a stream alone through the kiosk's production path (the radio process), notifications/s. */
  readonly notifiedPerSecond: number;
  readonly floorPerSecond: number;
  /** The notify comparison's figures (undefined when it failed). */
  readonly notify: NotifyFigures | undefined;
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

/** One receiver of the comparison: how to arm it for a stream. */
interface Receiver {
  readonly label: string;
  /** Its process, when not this one (the radio process, a bare child): its CPU time is counted too. */
  readonly pid: number | undefined;
  /** Arms it for a stream of `count` values; resolves once armed, with the arrival time of the last one to come. */
  arm(count: number): Promise<{ readonly finished: Promise<number> }>;
  failures(): readonly string[];
  close(): Promise<void>;
}

/** Where a receiver's progress goes: to its phone, for the window (hci-notify-stream.ts). */
type Report = (received: number) => void;

/** A receiver and the phone that streams to it. */
interface Pair {
  readonly index: number;
  readonly receiver: Receiver;
}

/**
 * CPU time of every thread of `pid` so far, ns: the first field of /proc/<pid>/task/<tid>/schedstat
 * (Linux's time on a CPU; ns resolution, where /proc/<pid>/stat counts 10 ms ticks). libuv's pool threads
 * count: the serial port's reads run there. A thread that ended in between is lost (none do here).
 */
function cpuNs(pid: number): number {
  let sum = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      sum += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // the thread ended while we read
    }
  }
  return sum;
}

/** The phones' child (hci-phone-child.ts): a GATT server per receiver, in a process of its own. */
class Phones {
  private readonly child: ChildProcess;
  private readonly subscribed = new Set<number>();
  /** The last progress each receiver reported in the current round, by phone. */
  private readonly reported: number[] = [];
  private readonly failed: Promise<never>;
  private fail: (e: Error) => void = () => undefined;

  constructor(ttys: readonly string[]) {
    this.child = fork(new URL('./hci-phone-child.js', import.meta.url), [...ttys], {
      serialization: 'advanced',
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.failed = new Promise<never>((_, reject) => (this.fail = reject));
    this.failed.catch(() => undefined); // raced in `connect` and `round`
    this.child.on('message', (raw: unknown) => {
      const parsed = PhoneReply.safeParse(raw);
      if (!parsed.success) this.fail(new Error('phones: a message that does not parse'));
      else if (parsed.data.t === 'subscribed') this.subscribed.add(parsed.data.index);
      else this.fail(new Error(`phones: ${parsed.data.message}`));
    });
    this.child.on('exit', (code) => this.fail(new Error(`phones: the child exited (${code})`)));
  }

  service(index: number): string {
    return `11111111-2222-4333-8444-5555555555${(0xa1 + index).toString(16)}`;
  }

  report(index: number): Report {
    return (received) => {
      this.reported[index] = received;
      this.send({ t: 'progress', index, received });
    };
  }

  /** Phone `index` serves and advertises; `connect` brings its receiver; resolves once it subscribed. */
  async connect(index: number, connect: (service: string, report: Report) => Promise<Receiver>): Promise<Receiver> {
    this.send({ t: 'serve', index, service: this.service(index) });
    const receiver = await Promise.race([connect(this.service(index), this.report(index)), this.failed]);
    await Promise.race([until(() => this.subscribed.has(index), `${receiver.label} subscribed`), this.failed]);
    return receiver;
  }

  /**
   * One round: every phone streams NOTIFICATIONS values to its receiver at once (started in `order`), and
   * each receiver's rate is taken over the same span, from the start to the moment the first one has all:
   * the values it has then, over that time (a receiver that has all of them later is not credited with a
   * tail it ran with fewer rivals). Between progress reports the count is known to PROGRESS_EVERY values:
   * half of that is added (the uncounted remainder's mean), for every receiver alike. Resolves once every
   * receiver has all its values, with the rates in the order of `pairs`.
   */
  async round(pairs: readonly Pair[], order: readonly Pair[]): Promise<number[]> {
    const armed = await Promise.all(pairs.map((p) => p.receiver.arm(NOTIFICATIONS)));
    const done = pairs.map(() => false);
    const finished = armed.map(({ finished }, i) =>
      finished.then((at) => {
        done[i] = true;
        return at;
      }),
    );
    for (const p of pairs) this.reported[p.index] = 0;
    const start = performance.now();
    for (const p of order) this.send({ t: 'stream', index: p.index, service: this.service(p.index), count: NOTIFICATIONS });
    const first = await within(Promise.race([...finished, this.failed]), 60_000, 'the first stream of the round');
    const seconds = (first - start) / 1000;
    const counts = pairs.map((p, i) => (done[i] ? NOTIFICATIONS : (this.reported[p.index] ?? 0) + (PROGRESS_EVERY - 1) / 2));
    await within(Promise.race([Promise.all(finished), this.failed]), 60_000, 'every stream of the round');
    return counts.map((n) => n / seconds);
  }

  /**
   * One stream to one receiver alone: its rate, and the CPU time this process and the receiver's own
   * process (`receiver.pid`) spent on it, per value (the phones, btvirt and socat are not counted: they
   * are the same for every receiver).
   */
  async single(pair: Pair): Promise<{ rate: number; cpuUsPerValue: number }> {
    const { finished } = await pair.receiver.arm(NOTIFICATIONS);
    const cpu0 = cpuNs(process.pid) + (pair.receiver.pid === undefined ? 0 : cpuNs(pair.receiver.pid));
    const start = performance.now();
    this.send({ t: 'stream', index: pair.index, service: this.service(pair.index), count: NOTIFICATIONS });
    const end = await within(Promise.race([finished, this.failed]), 60_000, `${pair.receiver.label}: the stream's last notification`);
    const cpu1 = cpuNs(process.pid) + (pair.receiver.pid === undefined ? 0 : cpuNs(pair.receiver.pid));
    return { rate: NOTIFICATIONS / ((end - start) / 1000), cpuUsPerValue: (cpu1 - cpu0) / 1000 / NOTIFICATIONS };
  }

  async close(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    if (this.child.connected) this.send({ t: 'stop' });
    const timer = setTimeout(() => this.child.kill(), 5_000);
    await exited;
    clearTimeout(timer);
  }

  private send(request: PhoneRequest): void {
    if (this.child.connected) this.child.send(request);
  }
}

/** A `NobleCentral` (in this process or in the radio process): notifications reach the sink here. */
async function adapterReceiver(
  label: string,
  central: BleCentral,
  service: string,
  report: Report,
  pid: number | undefined,
): Promise<Receiver> {
  await until(() => central.availability().usable, `${label} powered on`, 20_000);
  const sink = new OrderedSink();
  sink.onValue = (received) => {
    if (received % PROGRESS_EVERY === 0) report(received);
  };
  const link: BleCentralLink = await central.connect(
    serverModeProfile(service),
    { onNotification: (_u, d) => sink.receive(d), onDisconnect: () => undefined },
    new AbortController().signal,
  );
  return {
    label,
    pid,
    arm: (count) => {
      return Promise.resolve({ finished: new Promise<number>((resolve) => sink.start(count, () => resolve(performance.now()))) });
    },
    failures: () => sink.failures,
    close: () => link.close(),
  };
}

/** noble alone in a process of its own (hci-bare-noble-child.ts) on the controller behind `tty`. */
async function bareReceiver(label: string, tty: string, service: string, report: Report): Promise<Receiver> {
  const child: ChildProcess = fork(new URL('./hci-bare-noble-child.js', import.meta.url), [tty], {
    serialization: 'advanced',
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const failures: string[] = [];
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
    if (reply.t === 'progress') report(reply.received);
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
    pid: child.pid,
    arm: async (count) => {
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

/** Per round, receiver / bare noble (A/A: bare noble B / bare noble); rates together and alone, CPU alone. */
export interface NotifyFigures {
  readonly kioskPerSecond: number;
  readonly floorPerSecond: number;
  readonly ratio: RatioInterval;
  readonly inlineRatio: RatioInterval;
  readonly aaRatio: RatioInterval;
  readonly aloneRatio: RatioInterval;
  readonly aloneAaRatio: RatioInterval;
  readonly kioskCpuUs: number;
  readonly floorCpuUs: number;
  readonly cpuRatio: RatioInterval;
  readonly inlineCpuRatio: RatioInterval;
  readonly cpuAaRatio: RatioInterval;
}

async function notifyFigures(
  phoneTtys: readonly string[],
  kioskCentral: BleCentral,
  kioskPid: number | undefined,
  inlineNoble: Noble,
  ttys: { readonly bareA: string; readonly bareB: string },
  failures: string[],
): Promise<NotifyFigures> {
  const inline = new NobleCentral(inlineNoble, { platform: 'hci' });
  const phones = new Phones(phoneTtys);
  const pairs: Pair[] = [];
  const add = async (connect: (service: string, report: Report) => Promise<Receiver>): Promise<Receiver> => {
    const index = pairs.length;
    const receiver = await phones.connect(index, connect);
    pairs.push({ index, receiver });
    return receiver;
  };
  try {
    const kiosk = await add((service, report) => adapterReceiver('kiosk (radio process)', kioskCentral, service, report, kioskPid));
    const inlined = await add((service, report) => adapterReceiver('NobleCentral in this process', inline, service, report, undefined));
    const bareA = await add((service, report) => bareReceiver('bare noble', ttys.bareA, service, report));
    const bareB = await add((service, report) => bareReceiver('bare noble B', ttys.bareB, service, report));
    await phones.round(pairs, pairs); // warm-up, unmeasured
    for (const pair of pairs) await phones.single(pair);
    const series = (): Map<Receiver, number[]> => new Map(pairs.map((p) => [p.receiver, []]));
    const together = series();
    const alone = series();
    const cpu = series();
    for (let round = 0; round < ROUNDS; round++) {
      const order = roundOrder(pairs, round);
      const measured = await phones.round(pairs, order);
      pairs.forEach((p, i) => together.get(p.receiver)?.push(measured[i] ?? Number.NaN));
      for (const pair of order) {
        const { rate, cpuUsPerValue } = await phones.single(pair);
        alone.get(pair.receiver)?.push(rate);
        cpu.get(pair.receiver)?.push(cpuUsPerValue);
      }
    }
    const of = (m: Map<Receiver, number[]>, r: Receiver): number[] => m.get(r) ?? [];
    const ratio = (m: Map<Receiver, number[]>, r: Receiver): RatioInterval =>
      ratioInterval(
        of(m, r).map((v, i) => v / (of(m, bareA)[i] ?? Number.NaN)),
        { seed: SEED },
      );
    const figures: NotifyFigures = {
      // The stream alone, as hci_notified_per_s always was (one stream at a time through the kiosk).
      kioskPerSecond: summarize(of(alone, kiosk)).median,
      floorPerSecond: summarize(of(alone, bareA)).median,
      ratio: ratio(together, kiosk),
      inlineRatio: ratio(together, inlined),
      aaRatio: ratio(together, bareB),
      aloneRatio: ratio(alone, kiosk),
      aloneAaRatio: ratio(alone, bareB),
      kioskCpuUs: summarize(of(cpu, kiosk)).median,
      floorCpuUs: summarize(of(cpu, bareA)).median,
      cpuRatio: ratio(cpu, kiosk),
      inlineCpuRatio: ratio(cpu, inlined),
      cpuAaRatio: ratio(cpu, bareB),
    };
    const row = (m: Map<Receiver, number[]>, r: Receiver, digits: number): string =>
      `median ${summarize(of(m, r)).median.toFixed(digits)}  [${of(m, r)
        .map((v) => v.toFixed(digits))
        .join(' ')}]`;
    console.log(
      `\nHCI notifications, ${NOTIFICATIONS} × ${VALUE_BYTES} B per stream; ${ROUNDS} rounds after one unmeasured, each the four streams at once, then one stream per receiver alone (order turned per round); bootstrap seed ${SEED}`,
    );
    console.log('  together, notifications/s:');
    for (const { receiver: r } of pairs) console.log(`    ${r.label.padEnd(30)} ${row(together, r, 0)}`);
    console.log("  alone, receiver-side CPU µs per notification (this process + the receiver's):");
    for (const { receiver: r } of pairs) console.log(`    ${r.label.padEnd(30)} ${row(cpu, r, 1)}`);
    console.log('  alone, notifications/s:');
    for (const { receiver: r } of pairs) console.log(`    ${r.label.padEnd(30)} ${row(alone, r, 0)}`);
    console.log(`  rate together, kiosk (radio process) / bare noble:        ${describeInterval(figures.ratio)}`);
    console.log(`  rate together, NobleCentral in this process / bare noble: ${describeInterval(figures.inlineRatio)}`);
    console.log(`  rate together, A/A bare noble B / bare noble:             ${describeInterval(figures.aaRatio)}`);
    console.log(`  CPU per notification, kiosk (radio process) / bare noble:  ${describeInterval(figures.cpuRatio)}`);
    console.log(`  CPU per notification, NobleCentral inline / bare noble:    ${describeInterval(figures.inlineCpuRatio)}`);
    console.log(`  CPU per notification, A/A bare noble B / bare noble:       ${describeInterval(figures.cpuAaRatio)}`);
    console.log(`  rate alone, kiosk (radio process) / bare noble:           ${describeInterval(figures.aloneRatio)}`);
    console.log(`  rate alone, A/A bare noble B / bare noble:                ${describeInterval(figures.aloneAaRatio)}`);
    return figures;
  } finally {
    for (const { receiver } of pairs) {
      await receiver.close().catch(() => undefined);
      failures.push(...receiver.failures());
    }
    await phones.close();
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
      const phones = [EXTRA_CONTROLLERS.phoneA, EXTRA_CONTROLLERS.phoneB, EXTRA_CONTROLLERS.phoneC, EXTRA_CONTROLLERS.phoneD].map(tty);
      const bare = { bareA: tty(EXTRA_CONTROLLERS.bareA), bareB: tty(EXTRA_CONTROLLERS.bareB) };
      notify = await notifyFigures(phones, central, radioProcess.pid, inlineNoble, bare, failures);
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
      notify,
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
      notify: undefined,
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
