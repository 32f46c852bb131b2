/**
 * The kiosk's radio process for real: a forked child (the QA radio child, src/qa/devices/radio-link/
 * radio-child.ts) runs noble and bleno over the radio link to the virtual radio of this process, where the
 * virtual phone lives. The kiosk (createKiosk) uses the parent-side proxies. The child is killed mid-transfer
 * (SIGKILL, and a planted native-style abort): the cut verification reports a clear error, the child
 * restarts, the next verification verifies, and nothing is left behind.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { LibraryLog } from '../../../../src/devices/ble/library-console.js';
import { forkLauncher } from '../../../../src/devices/ble/radio-process/launcher.js';
import { RadioProcess } from '../../../../src/devices/ble/radio-process/radio-process.js';
import { RadioLinkServer } from '../../../../src/qa/devices/radio-link/server.js';
import { createVirtualRig } from '../../../../src/qa/devices/virtual-rig.js';
import { expectVerifiedOutcome } from '../../../support/ble-fixtures.js';
import { startE2eOn, type E2eStack } from '../../../support/e2e-stack.js';
import { until } from '../../../support/radio-phone.js';

const QA_CHILD = path.resolve('src/qa/devices/radio-link/radio-child.ts');

class Lines implements LibraryLog {
  readonly lines: { fields: Record<string, unknown>; message: string }[] = [];
  info(fields: object, message: string): void {
    this.lines.push({ fields: fields as Record<string, unknown>, message });
  }
  warn(fields: object, message: string): void {
    this.lines.push({ fields: fields as Record<string, unknown>, message });
  }
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const fds = (): number => readdirSync('/proc/self/fd').length;
const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

interface Counter {
  readonly e2e: E2eStack;
  readonly radio: RadioProcess;
  readonly log: Lines;
  readonly pids: Set<number>;
  /** The backend's `ble_write`s so far (the request on its way to the phone). */
  relayed(): number;
}

async function counter(role: 'central' | 'peripheral', extraEnv: Record<string, string> = {}): Promise<Counter> {
  let relayed = 0;
  const rig = await createVirtualRig({
    profile: role === 'central' ? 'android' : 'iphone',
    // The phone takes its time to answer: a cut after the request reached it lands with the transfer in flight
    // (the virtual radio moves a whole answer in milliseconds, faster than a kill reaches the child).
    behaviour: { consentDelayMs: 1_500 },
    ble: role === 'central' ? { peripheral: false } : { central: false },
  });
  const server = await RadioLinkServer.start({ radio: rig.radio });
  const log = new Lines();
  const pids = new Set<number>();
  const fork = forkLauncher({ entry: QA_CHILD, env: { MDL_KIOSK_QA_RADIO_LINK: `127.0.0.1:${server.port}`, ...extraEnv } });
  const radio = new RadioProcess({
    launcher: () => {
      const child = fork();
      if (child.pid !== undefined) pids.add(child.pid);
      return child;
    },
    init: { central: role === 'central', peripheral: role === 'peripheral' },
    log,
    restartMinMs: 200,
  });
  expect(await radio.started()).toEqual([]);
  const port = role === 'central' ? { bleCentral: radio.central } : { blePeripheral: radio.peripheral };
  const e2e = await startE2eOn(rig, {
    config: { profile: 'identity' },
    backendMessages: (entry) => {
      if (/"ble_write"/.test(JSON.stringify(entry))) relayed += 1;
    },
    devices: () => ({ ...rig.devices, bleCentral: undefined, blePeripheral: undefined, ...port }),
  });
  cleanups.push(async () => {
    await e2e.stop();
    await radio.close();
    await server.stop();
  });
  await e2e.ready();
  return { e2e, radio, log, pids, relayed: () => relayed };
}

/** One verification by QR; `cut` runs mid-transfer: the request has reached the phone, its answer is pending. */
async function verification(c: Counter, cut?: () => void) {
  const { e2e } = c;
  const before = c.relayed();
  e2e.rig.qr.push(e2e.rig.phone.presentQr());
  if (cut) {
    await until(() => c.relayed() > before, 20_000, 'the first Bluetooth message of the exchange');
    cut();
  }
  return e2e.nextReport(30_000);
}

describe('the radio process over the radio link (forked child, virtual radio)', () => {
  for (const how of ['SIGKILL', 'abort'] as const) {
    it(`central: killed mid-transfer (${how}): the cut verification errs clearly, the child restarts, the next one verifies, nothing leaks`, {
      timeout: 90_000,
    }, async () => {
      const fdsBefore = fds();
      const exitListeners = process.listenerCount('exit');
      const c = await counter('central');
      const { e2e, radio, log, pids } = c;
      expectVerifiedOutcome(await verification(c));
      const first = radio.pid ?? 0;

      const cut = await verification(c, () => (how === 'SIGKILL' ? process.kill(first, 'SIGKILL') : radio.qa('abort')));
      // What the core reports, and the error screen's detail: the link was lost because the radio process stopped.
      expect(cut, JSON.stringify(cut)).toMatchObject({
        result: 'ble_link_lost',
        error: { code: 'ble_link_lost', detail: `the radio process stopped: killed by ${how === 'SIGKILL' ? 'SIGKILL' : 'SIGABRT'}` },
      });
      // The screen showed that error (the customer: Bluetooth link lost, may retry; staff: the detail).
      expect(e2e.views.some((v) => v.phase === 'error' && v.error?.code === 'ble_link_lost' && v.error.retryable)).toBe(true);
      const stopped = log.lines.find((l) => l.fields.event === 'radio_process_stopped')?.message ?? '';
      expect(stopped).toBe(`the radio process stopped: killed by ${how === 'SIGKILL' ? 'SIGKILL' : 'SIGABRT'}`);
      expect(
        e2e.logs.records.some(
          (r) => JSON.stringify(r).includes('the radio process stopped') || JSON.stringify(r).includes('radio_process_exited'),
        ),
      ).toBe(true);
      await until(() => radio.central?.availability().usable === true, 20_000, 'the restarted radio process');
      expect(radio.spawnCount).toBe(2);
      await e2e.ready();
      expectVerifiedOutcome(await verification(c));

      const all = [...pids];
      for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
      await until(() => all.every((pid) => !alive(pid)), 5_000, 'every radio child gone');
      expect(process.listenerCount('exit')).toBe(exitListeners);
      await until(() => fds() <= fdsBefore, 5_000, `fds back to ${fdsBefore}`);
    });
  }

  it('central: five kills in a row, each mid-transfer; every verification after each verifies; nothing leaks', {
    timeout: 180_000,
  }, async () => {
    const fdsBefore = fds();
    const exitListeners = process.listenerCount('exit');
    const c = await counter('central');
    for (let kill = 1; kill <= 5; kill++) {
      const pid = c.radio.pid ?? 0;
      const cut = await verification(c, () => process.kill(pid, 'SIGKILL'));
      expect(cut.result).toBe('ble_link_lost');
      await until(() => c.radio.central?.availability().usable === true, 30_000, `the radio process after kill ${kill}`);
      await c.e2e.ready();
      expectVerifiedOutcome(await verification(c));
    }
    expect(c.radio.spawnCount).toBe(6);
    const all = [...c.pids];
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    await until(() => all.every((pid) => !alive(pid)), 5_000, 'every radio child gone');
    expect(process.listenerCount('exit')).toBe(exitListeners);
    await until(() => fds() <= fdsBefore, 5_000, `fds back to ${fdsBefore}`);
  });

  it('peripheral: killed mid-transfer, restarted, the next verification verifies', { timeout: 90_000 }, async () => {
    const c = await counter('peripheral');
    const { e2e, radio } = c;
    const cut = await verification(c, () => process.kill(radio.pid ?? 0, 'SIGKILL'));
    expect(cut).toMatchObject({
      result: 'ble_link_lost',
      error: { code: 'ble_link_lost', detail: 'the radio process stopped: killed by SIGKILL' },
    });
    await until(() => radio.peripheral?.availability().usable === true, 20_000, 'the restarted radio process');
    await e2e.ready();
    expectVerifiedOutcome(await verification(c));
  });

  it("a child that prints on stdout and stderr: the text is logged (escaped) and never reaches this process's stdout", {
    timeout: 60_000,
  }, async () => {
    const written: string[] = [];
    const write = process.stdout.write.bind(process.stdout);
    const spy = (chunk: string | Uint8Array, ...rest: never[]): boolean => {
      written.push(String(chunk));
      return write(chunk, ...rest);
    };
    process.stdout.write = spy;
    cleanups.push(() => {
      process.stdout.write = write;
      return Promise.resolve();
    });
    const c = await counter('central', { MDL_KIOSK_QA_RADIO_STRAY_OUTPUT: '1' });
    c.radio.qa('print');
    expectVerifiedOutcome(await verification(c));
    const { log } = c;
    const output = log.lines.filter((l) => l.fields.event === 'ble_library_output' && l.fields.library === 'radio-process');
    expect(output.map((l) => l.fields.stream)).toContain('stdout');
    expect(output.map((l) => l.fields.stream)).toContain('stderr');
    expect(written.join('')).not.toContain('BLEManager');
  });
});
