/**
 * The radio process's supervisor and proxies (src/devices/ble/radio-process/) against its real child
 * server, run in this process behind a launcher that structured-clones every message both ways, as the
 * IPC channel does. The child's stack is the fake BLE devices. Crashes, hangs and crash loops are
 * launcher-level (the child "exits"); fake time counts restarts.
 */
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  BleSetupError,
  BleValueTooLargeError,
  type Availability,
  type GattProfile,
  type PeripheralEvent,
} from '../../../../src/devices/ports.js';
import type { LibraryLog } from '../../../../src/devices/ble/library-console.js';
import type { RadioChild, RadioChildExit, RadioLauncher } from '../../../../src/devices/ble/radio-process/launcher.js';
import { ChildMessage, MAX_DATA_BYTES, ParentMessage } from '../../../../src/devices/ble/radio-process/protocol.js';
import { serveRadio, type RadioStack } from '../../../../src/devices/ble/radio-process/child-server.js';
import { RadioProcess } from '../../../../src/devices/ble/radio-process/radio-process.js';
import { FakeBleCentral, FakeBlePeripheral } from '../../../support/fake-devices.js';
import { parseConfig } from '../../../../src/platform/config.js';
import { createLogger } from '../../../../src/platform/log.js';
import { createConfiguredDevices } from '../../../../src/service/configured-devices.js';

const SPEC = (uuid: string) => ({
  uuid,
  operations: ['notify' as const, 'write_without_response' as const],
  permissions: ['readable' as const, 'writeable' as const],
});
const PROFILE: GattProfile = {
  serviceUuid: '0000aa00-0000-1000-8000-00805f9b34fb',
  characteristics: {
    state: SPEC('0000aa01-0000-1000-8000-00805f9b34fb'),
    c2s: SPEC('0000aa02-0000-1000-8000-00805f9b34fb'),
    s2c: SPEC('0000aa03-0000-1000-8000-00805f9b34fb'),
  },
};

class Records implements LibraryLog {
  readonly lines: { level: string; fields: Record<string, unknown>; message: string }[] = [];
  info(fields: object, message: string): void {
    this.lines.push({ level: 'info', fields: fields as Record<string, unknown>, message });
  }
  warn(fields: object, message: string): void {
    this.lines.push({ level: 'warn', fields: fields as Record<string, unknown>, message });
  }
  events(): unknown[] {
    return this.lines.map((l) => l.fields.event);
  }
}

function nth<T>(list: readonly T[], i: number): T {
  const item = list[i];
  if (item === undefined) throw new Error(`no item ${i}`);
  return item;
}
const last = <T>(list: readonly T[]): T => nth(list, list.length - 1);
const central = (h: Harness) => h.radio.central ?? nth([], 0);
const peripheral = (h: Harness) => h.radio.peripheral ?? nth([], 0);

const tick = (): Promise<void> => new Promise((resolve) => queueMicrotask(resolve));
async function settle(rounds = 20): Promise<void> {
  for (let i = 0; i < rounds; i++) await tick();
}

/** A child "process" in this one: the real child server on a channel that clones, with stdout/stderr streams. */
class InProcessChild implements RadioChild {
  static nextPid = 40_000;
  readonly pid = InProcessChild.nextPid++;
  readonly stdout = new PassThrough();
  readonly stderr = new PassThrough();
  readonly toParent: ((m: unknown) => void)[] = [];
  readonly toChild: ((m: unknown) => void)[] = [];
  private readonly exits: ((e: RadioChildExit) => void)[] = [];
  alive = true;
  /** Messages the child takes (the heartbeat test stops it answering). */
  answering = true;
  killed = false;

  postMessage(message: unknown): void {
    const copy = structuredClone(message);
    void tick().then(() => {
      if (this.alive && this.answering) for (const l of this.toChild) l(copy);
    });
  }
  onMessage(listener: (m: unknown) => void): void {
    this.toParent.push(listener);
  }
  onExit(listener: (e: RadioChildExit) => void): void {
    this.exits.push(listener);
  }
  kill(): void {
    this.killed = true;
    this.exit({ code: null, signal: 'SIGKILL' });
  }
  /** The process ends (a crash: any code or signal). */
  exit(e: RadioChildExit): void {
    if (!this.alive) return;
    this.alive = false;
    void tick().then(() => {
      for (const l of this.exits) l(e);
    });
  }
  /** What the child sends, cloned (or raw, for bad-message tests). */
  send(message: unknown): void {
    const copy = structuredClone(message);
    void tick().then(() => {
      if (this.alive) for (const l of this.toParent) l(copy);
    });
  }
}

interface Harness {
  readonly radio: RadioProcess;
  readonly log: Records;
  readonly children: InProcessChild[];
  readonly centrals: FakeBleCentral[];
  readonly peripherals: FakeBlePeripheral[];
  readonly childLogs: Records;
}

const open: RadioProcess[] = [];
afterEach(async () => {
  for (const radio of open.splice(0)) await radio.close();
  vi.useRealTimers();
});

function harness(
  options: {
    readonly launch?: (child: InProcessChild) => void;
    readonly onQa?: (command: string) => void;
    readonly readAnswerMs?: number;
    readonly centralAdapter?: 'gone';
  } & Partial<ConstructorParameters<typeof RadioProcess>[0]> = {},
): Harness {
  const log = new Records();
  const childLogs = new Records();
  const children: InProcessChild[] = [];
  const centrals: FakeBleCentral[] = [];
  const peripherals: FakeBlePeripheral[] = [];
  const launcher: RadioLauncher = () => {
    const child = new InProcessChild();
    children.push(child);
    if (options.launch) {
      options.launch(child);
      return child;
    }
    serveRadio(
      { send: (m) => child.send(m), onMessage: (l) => child.toChild.push(l) },
      (init): RadioStack => {
        const central = new FakeBleCentral();
        if (options.centralAdapter === 'gone') central.usable = false; // reads powered_off
        const peripheral = new FakeBlePeripheral();
        centrals.push(central);
        peripherals.push(peripheral);
        return {
          ...(init.central ? { central } : {}),
          ...(init.peripheral ? { peripheral } : {}),
          problems: [],
          close: () => Promise.resolve(),
        };
      },
      {
        exit: () => child.exit({ code: 0, signal: null }),
        ...(options.onQa ? { onQa: options.onQa } : {}),
        ...(options.readAnswerMs ? { readAnswerMs: options.readAnswerMs } : {}),
      },
    );
    return child;
  };
  const radio = new RadioProcess({ launcher, init: { central: true, peripheral: true }, log, random: () => 0.5, ...options });
  open.push(radio);
  return { radio, log, children, centrals, peripherals, childLogs };
}

function handlers() {
  const notifications: [string, number[]][] = [];
  const disconnects: string[] = [];
  return {
    notifications,
    disconnects,
    onNotification: (uuid: string, data: Uint8Array) => notifications.push([uuid, [...data]]),
    onDisconnect: (reason: string) => disconnects.push(reason),
  };
}

describe('radio process: the ports over the channel', () => {
  it('central: availability follows the child, connect, notifications in order, ordered writes, flush, close', async () => {
    const h = harness();
    expect(h.radio.central?.availability()).toMatchObject({ usable: false, reason: 'starting' });
    expect(await h.radio.started()).toEqual([]);
    expect(h.radio.central?.availability()).toEqual({ usable: true });
    const seen: Availability[] = [];
    h.radio.central?.onAvailabilityChange?.((a) => seen.push(a));

    const hs = handlers();
    const link = await central(h).connect(PROFILE, hs, new AbortController().signal);
    expect(link.mtu).toBe(247);
    const fake = nth(nth(h.centrals, 0).links, 0);
    for (let i = 0; i < 50; i++) fake.notify('aa03', Uint8Array.of(i));
    await settle();
    expect(hs.notifications.map(([, d]) => d[0])).toEqual([...Array(50).keys()]);
    for (let i = 0; i < 5; i++) await link.write('aa02', Uint8Array.of(i, i));
    expect(fake.writes.map((w) => [...w.data])).toEqual([0, 1, 2, 3, 4].map((i) => [i, i]));
    await link.flush?.(new AbortController().signal);
    await link.close();
    expect(fake.closed).toBe(true);
    fake.drop();
    await settle();
    expect(hs.disconnects).toEqual([]); // closed links say nothing more

    nth(h.centrals, 0).usable = false;
    expect(seen).toEqual([]); // the fake has no change notification: nothing invented
  });

  it('the phone dropping a handed-out link reaches onDisconnect once, with its reason', async () => {
    const h = harness();
    await h.radio.started();
    const hs = handlers();
    await central(h).connect(PROFILE, hs, new AbortController().signal);
    nth(nth(h.centrals, 0).links, 0).drop('remote user terminated connection');
    await settle();
    expect(hs.disconnects).toEqual(['remote user terminated connection']);
  });

  it('peripheral: events in order; a read answered here round-trips to the phone; an unanswered one fails after the bound', async () => {
    const h = harness({ readAnswerMs: 50 });
    await h.radio.started();
    const events: PeripheralEvent[] = [];
    const session = await peripheral(h).advertise(
      PROFILE,
      (e) => {
        events.push(e);
        if (e.kind === 'read' && e.offset === 0) e.respond(Uint8Array.of(9, 8, 7));
      },
      new AbortController().signal,
    );
    const fake = nth(nth(h.peripherals, 0).sessions, 0);
    fake.connect();
    fake.subscribe('aa03');
    fake.write('aa02', Uint8Array.of(1, 2));
    expect([...(await fake.read('aa01'))]).toEqual([9, 8, 7]);
    await expect(fake.read('aa01', 1)).rejects.toThrow('read failed'); // never answered: the child's bound fails it
    expect(events.map((e) => e.kind)).toEqual(['connect', 'subscribe', 'write', 'read', 'read']);
    expect([...(events[2] as { data: Uint8Array }).data]).toEqual([1, 2]);
    await session.notify('aa03', Uint8Array.of(5));
    expect(fake.notifications.map((n) => [...n.data])).toEqual([[5]]);
    await session.close();
    expect(fake.closed).toBe(true);
  });

  it("an abort here cancels the child's connect (its signal aborts) and rejects at once", async () => {
    const h = harness();
    await h.radio.started();
    nth(h.centrals, 0).behaviour = { hang: true };
    const controller = new AbortController();
    const connecting = central(h).connect(PROFILE, handlers(), controller.signal);
    await settle();
    expect(nth(h.centrals, 0).connectSignals).toHaveLength(1);
    controller.abort();
    await expect(connecting).rejects.toMatchObject({ name: 'AbortError' });
    await settle();
    expect(nth(nth(h.centrals, 0).connectSignals, 0).aborted).toBe(true);
  });

  it('setup errors keep their class and reason; values no ATT PDU carries are refused before they cross', async () => {
    const h = harness();
    await h.radio.started();
    nth(h.centrals, 0).behaviour = { failWith: new BleSetupError('scan_timeout: no phone advertising the service') };
    await expect(central(h).connect(PROFILE, handlers(), new AbortController().signal)).rejects.toEqual(
      new BleSetupError('scan_timeout: no phone advertising the service'),
    );
    nth(h.centrals, 0).behaviour = {};
    const link = await central(h).connect(PROFILE, handlers(), new AbortController().signal);
    await expect(link.write('aa02', new Uint8Array(600))).rejects.toBeInstanceOf(BleValueTooLargeError);
    expect(nth(nth(h.centrals, 0).links, 0).writes).toEqual([]);
  });
});

describe('radio process: the protocol', () => {
  it('rejects bad messages with a clear error, never a crash, and bounds sizes', () => {
    expect(
      ParentMessage.safeParse({ t: 'write', id: 1, link: 1, uuid: 'aa02', data: new Uint8Array(MAX_DATA_BYTES + 1) }).error?.issues[0]
        ?.message,
    ).toMatch(/more than 2048 bytes/);
    expect(ParentMessage.safeParse({ t: 'write', id: 1, link: 1, uuid: 'aa02', data: 'AQI=' }).success).toBe(false);
    expect(ParentMessage.safeParse({ t: 'connect', id: -1, profile: PROFILE }).success).toBe(false);
    expect(ParentMessage.safeParse({ t: 'ping', id: 1, extra: true }).success).toBe(false);
    expect(ChildMessage.safeParse({ t: 'notification', link: 1, uuid: 'x'.repeat(65), data: new Uint8Array(1) }).success).toBe(false);
    expect(ChildMessage.safeParse({ t: 'log', level: 'warn', event: 'e', message: 'x'.repeat(2_001) }).success).toBe(false);
    expect(ChildMessage.safeParse({ t: 'ready', problems: Array(9).fill('p') }).success).toBe(false);
  });

  it('a child sending garbage is logged and ignored; the link keeps working', async () => {
    const h = harness();
    await h.radio.started();
    const hs = handlers();
    const link = await central(h).connect(PROFILE, hs, new AbortController().signal);
    const child = nth(h.children, 0);
    child.send({ t: 'notification', link: 1, uuid: 'aa03', data: 'not bytes' });
    child.send('hello');
    child.send({ t: 'ok' });
    await settle();
    expect(h.log.lines.filter((l) => l.fields.event === 'radio_process_bad_message').map((l) => l.message)).toEqual([
      'dropped a message from the radio process: data: expected bytes (Uint8Array)',
      expect.stringMatching(/^dropped a message from the radio process: /),
      expect.stringMatching(/^dropped a message from the radio process: id: /),
    ]);
    await link.write('aa02', Uint8Array.of(1));
    expect(nth(nth(h.centrals, 0).links, 0).writes).toHaveLength(1);
  });

  it('the child logs a bad message from the kiosk and keeps serving; the production child refuses QA commands', async () => {
    const h = harness();
    await h.radio.started();
    const child = nth(h.children, 0);
    for (const l of child.toChild) l({ t: 'write', id: 99, link: 1, uuid: 'aa02', data: new Uint8Array(MAX_DATA_BYTES + 1) });
    h.radio.qa('abort');
    await settle();
    expect(h.log.lines.filter((l) => l.fields.library === 'radio-process').map((l) => [l.fields.event, l.message])).toEqual([
      ['radio_process_bad_message', 'the radio process dropped a message from the kiosk: data: more than 2048 bytes'],
      ['radio_process_refused', 'the production radio process has no QA commands (abort)'],
    ]);
    expect(child.alive).toBe(true);
  });

  it("the child's stdout/stderr become escaped, bounded library-output log lines", async () => {
    const h = harness();
    await h.radio.started();
    const child = nth(h.children, 0);
    child.stdout.write('BLEManager: peripheral 12:34:56:78:9A:BC (123456789abc) \u001b[31mred\n');
    child.stderr.write('x'.repeat(3_000));
    child.stderr.end();
    await new Promise((resolve) => setImmediate(resolve));
    const output = h.log.lines.filter((l) => l.fields.event === 'ble_library_output');
    expect(output.map((l) => l.fields.stream)).toEqual(['stdout', 'stderr']); // the unterminated flood is cut into one bounded line
    expect(output[0]?.message).not.toContain('\u001b');
    // A native print may name a phone: its address never reaches the log.
    expect(output[0]?.message).toMatch(/^BLEManager: peripheral \[address\] \(\[address\]\) /);
    for (const line of output) expect(line.message.length).toBeLessThanOrEqual(503);
  });
});

describe('radio process: crashes, hangs and restarts', () => {
  it('a crash mid-link: onDisconnect with the stopped reason, a pending connect rejects radio_process_exited, availability restarting; the restarted child serves the next connect', async () => {
    const h = harness({ restartMinMs: 20 });
    await h.radio.started();
    const hs = handlers();
    await central(h).connect(PROFILE, hs, new AbortController().signal);
    const session: PeripheralEvent[] = [];
    await peripheral(h).advertise(PROFILE, (e) => session.push(e), new AbortController().signal);
    nth(h.centrals, 0).behaviour = { hang: true };
    const pending = central(h).connect(PROFILE, handlers(), new AbortController().signal);
    const seen: Availability[] = [];
    central(h).onAvailabilityChange?.((a) => seen.push(a));
    await settle();

    nth(h.children, 0).exit({ code: null, signal: 'SIGSEGV' });
    await expect(pending).rejects.toEqual(new BleSetupError('radio_process_exited: killed by SIGSEGV'));
    expect(hs.disconnects).toEqual(['the radio process stopped: killed by SIGSEGV']);
    expect(session.at(-1)).toEqual({ kind: 'disconnect', reason: 'the radio process stopped: killed by SIGSEGV' });
    expect(central(h).availability()).toMatchObject({ usable: false, reason: 'starting' });
    expect(central(h).availability().detail).toMatch(/^the radio process stopped \(killed by SIGSEGV\); restarting in \d+\.\d s$/);
    // Asked while restarting: a clear setup error, not a hang.
    await expect(central(h).connect(PROFILE, handlers(), new AbortController().signal)).rejects.toEqual(
      new BleSetupError('radio_process_restarting: the radio process is restarting'),
    );

    await vi.waitFor(() => expect(central(h).availability()).toEqual({ usable: true }), { timeout: 2_000 });
    expect(seen.map((a) => a.reason ?? 'usable')).toEqual(['starting', 'usable']);
    expect(h.children).toHaveLength(2);
    const link = await central(h).connect(PROFILE, handlers(), new AbortController().signal);
    await link.write('aa02', Uint8Array.of(1));
    expect(nth(nth(h.centrals, 1).links, 0).writes).toHaveLength(1);
  });

  it('a child that exits at once, every time, is restarted with a growing, bounded backoff, never in a tight loop (fake time)', async () => {
    vi.useFakeTimers();
    const starts: number[] = [];
    const h = harness({
      restartMinMs: 500,
      restartMaxMs: 30_000,
      launch: (child) => {
        starts.push(Date.now());
        child.exit({ code: 134, signal: null });
      },
    });
    const t0 = Date.now();
    for (let i = 0; i < 600; i++) {
      await vi.advanceTimersByTimeAsync(1_000);
    }
    // 10 minutes: delays 250, 500, 1000, … (half the ceiling with random 0.5 → 0.75 × ceiling), capped at 30 s.
    const gaps = starts.slice(1).map((t, i) => t - (starts[i] ?? t0));
    expect(h.children.length).toBeGreaterThan(15);
    expect(h.children.length).toBeLessThan(35);
    expect(gaps.slice(0, 6)).toEqual([375, 750, 1_500, 3_000, 6_000, 12_000]);
    expect(Math.max(...gaps)).toBeLessThanOrEqual(30_000);
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(375);
    expect(central(h).availability()).toMatchObject({ usable: false, reason: 'starting' });
    expect(h.radio.spawnCount).toBe(h.children.length);
  });

  it('an adapter that stays gone gets a fresh process after recoverAfterMs, then after twice as long each time, at most every 5 min (fake time)', async () => {
    vi.useFakeTimers();
    const h = harness({ centralAdapter: 'gone', recoverAfterMs: 15_000, restartMinMs: 500 });
    const reasons: (string | undefined)[] = [];
    const details: (string | undefined)[] = [];
    central(h).onAvailabilityChange?.((a) => {
      reasons.push(a.reason);
      details.push(a.detail);
    });
    const starts: number[] = [];
    let seen = 0;
    for (let second = 0; second < 40 * 60; second++) {
      await vi.advanceTimersByTimeAsync(1_000);
      if (h.children.length > seen) {
        seen = h.children.length;
        starts.push(Date.now());
      }
    }
    const gaps = starts.slice(1).map((t, i) => Math.round((t - (starts[i] ?? 0)) / 1_000));
    // Each gap: the wait (15, 30, 60, 120, 240, then 300 s) plus the restart's backoff (< 31 s).
    const waits = [15, 30, 60, 120, 240, 300, 300];
    for (const [i, wait] of waits.entries()) {
      expect(gaps[i]).toBeGreaterThanOrEqual(wait);
      expect(gaps[i]).toBeLessThanOrEqual(wait + 31);
    }
    expect(h.children.length).toBeLessThan(14);
    expect(h.log.events()).toContain('radio_process_recovering');
    const stopped = h.log.lines.find((l) => l.fields.event === 'radio_process_stopped');
    expect(stopped?.message).toMatch(/replaced to find the Bluetooth adapter again \(powered_off for 15 s\)/);
    // Every replaced child was asked to shut down, none left running.
    expect(h.children.slice(0, -1).every((c) => !c.alive)).toBe(true);
    // Staff and monitoring read the lost adapter all along, not a `starting` that comes back with each attempt.
    expect(reasons.length).toBeGreaterThan(h.children.length);
    expect(reasons.filter((r) => r !== 'powered_off')).toEqual([]);
    expect(details.filter((d) => d?.includes('looking for the adapter again with a fresh radio process in')).length).toBe(
      h.children.length - 1,
    );
  });

  it('a lost adapter never replaces the process under a verification that uses the radio; once it ends, it does', async () => {
    vi.useFakeTimers();
    const h = harness({ recoverAfterMs: 5_000 });
    await vi.advanceTimersByTimeAsync(10);
    const hs = handlers();
    const link = await central(h).connect(PROFILE, hs, new AbortController().signal);
    nth(h.children, 0).send({
      t: 'availability',
      role: 'peripheral',
      availability: { usable: false, reason: 'no_adapter', detail: 'gone' },
    });
    await vi.advanceTimersByTimeAsync(60_000);
    expect(h.children).toHaveLength(1);
    expect(hs.disconnects).toEqual([]);
    await link.close();
    await vi.advanceTimersByTimeAsync(6_000);
    expect(h.children.length).toBe(2);
  });

  it('no replacement while a role is usable, nor when recoverAfterMs is 0', async () => {
    vi.useFakeTimers();
    const usable = harness({ recoverAfterMs: 5_000 });
    const off = harness({ centralAdapter: 'gone', recoverAfterMs: 0 });
    await vi.advanceTimersByTimeAsync(10 * 60_000);
    expect(usable.children).toHaveLength(1);
    expect(off.children).toHaveLength(1);
  });

  it('after a healthy period the backoff starts over', async () => {
    vi.useFakeTimers();
    const h = harness({ restartMinMs: 1_000, healthyMs: 60_000 });
    await vi.advanceTimersByTimeAsync(10);
    for (let i = 0; i < 4; i++) {
      last(h.children).exit({ code: 1, signal: null });
      await vi.advanceTimersByTimeAsync(20_000);
    }
    expect(h.children).toHaveLength(5);
    await vi.advanceTimersByTimeAsync(61_000); // healthy
    const before = h.children.length;
    last(h.children).exit({ code: 1, signal: null });
    await vi.advanceTimersByTimeAsync(749);
    expect(h.children).toHaveLength(before);
    await vi.advanceTimersByTimeAsync(1);
    expect(h.children).toHaveLength(before + 1);
  });

  it('a child that stops answering the heartbeat is killed and restarted', async () => {
    vi.useFakeTimers();
    const h = harness({ heartbeatMs: 1_000, heartbeatDeadlineMs: 5_000, restartMinMs: 100 });
    await vi.advanceTimersByTimeAsync(10);
    expect(central(h).availability()).toEqual({ usable: true });
    await vi.advanceTimersByTimeAsync(30_000);
    expect(h.children).toHaveLength(1); // answering: left alone
    nth(h.children, 0).answering = false;
    await vi.advanceTimersByTimeAsync(7_000);
    expect(nth(h.children, 0).killed).toBe(true);
    expect(h.log.lines.find((l) => l.fields.event === 'radio_process_stopped')?.message).toMatch(
      /^the radio process stopped: it stopped answering \(no heartbeat for \d+ ms\)$/,
    );
    await vi.advanceTimersByTimeAsync(200);
    expect(h.children).toHaveLength(2);
    expect(central(h).availability()).toEqual({ usable: true });
  });

  it('close: shuts the child down, leaves no timer, and never restarts it', async () => {
    vi.useFakeTimers();
    const h = harness();
    await vi.advanceTimersByTimeAsync(10);
    await h.radio.close();
    expect(nth(h.children, 0).alive).toBe(false);
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(120_000);
    expect(h.children).toHaveLength(1);
  });
});

describe('radio process: configured devices', () => {
  it('ble.process separate: the ports are the proxies; closing the devices (a rebuild) shuts the child down and the next build starts a fresh one', async () => {
    const children: InProcessChild[] = [];
    const inits: unknown[] = [];
    const radioLauncher: RadioLauncher = () => {
      const child = new InProcessChild();
      children.push(child);
      serveRadio(
        { send: (m) => child.send(m), onMessage: (l) => child.toChild.push(l) },
        (init): RadioStack => {
          inits.push(init);
          return { central: new FakeBleCentral(), problems: [], close: () => Promise.resolve() };
        },
        { exit: () => child.exit({ code: 0, signal: null }) },
      );
      return child;
    };
    const log = createLogger({ level: 'silent' });
    const config = parseConfig({ ble: { roles: 'central' } });
    expect(config.ble.process).toBe('separate');
    const first = await createConfiguredDevices(config, log, { nfc: 'none', radioLauncher });
    expect(first.ports.bleCentral?.availability()).toEqual({ usable: true });
    expect(first.ports.blePeripheral).toBeUndefined();
    await first.close();
    expect(nth(children, 0).alive).toBe(false);
    const second = await createConfiguredDevices(config, log, { nfc: 'none', radioLauncher });
    expect(children).toHaveLength(2);
    expect(nth(children, 1).alive).toBe(true);
    await second.close();
    expect(inits).toEqual([
      { central: true, peripheral: false },
      { central: true, peripheral: false },
    ]);
    // inline: no child at all
    const inline = await createConfiguredDevices(parseConfig({ ble: { roles: 'central', process: 'inline' } }), log, {
      nfc: 'none',
      radioLauncher,
      loadBle: () => ({ problems: [], close: () => Promise.resolve() }),
    });
    await inline.close();
    expect(children).toHaveLength(2);
  });
});
