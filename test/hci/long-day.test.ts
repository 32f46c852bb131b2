/**
 * A counter's long day on BlueZ's emulated controllers (tools/btvirt): the kiosk's central in its radio
 * process, exactly as shipped (`createConfiguredDevices` with `ble.process: separate`, the production child
 * taking the kiosk-central controller from `BLUETOOTH_HCI_SOCKET_UART_PORT`), against the virtual phone's
 * wallet on the phone's controllers and the mock backend with real crypto. In one run, many times over:
 * the devices are rebuilt (a settings save), the adapter is switched off and on (the kiosk finds it again
 * through a fresh radio process, `ble.adapterRecoveryMs`), and the radio process is killed — idle, and
 * mid-transfer. Every verification after every event verifies; at the end nothing has grown: file
 * descriptors, process listeners, timers, radio processes.
 */
import { readdirSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forkLauncher, type RadioLauncher } from '../../src/devices/ble/radio-process/launcher.js';
import type { DevicePorts } from '../../src/devices/ports.js';
import type { VerificationReport } from '../../src/kiosk/kiosk.js';
import { mergeConfig, parseConfig } from '../../src/platform/config.js';
import { createLogger } from '../../src/platform/log.js';
import { createHciPhone, createHciRig, hciTtysIn, type HciRig } from '../../src/qa/hci/hci-rig.js';
import { createIsoReaderEngineFactory } from '../../src/qa/sim/mock-backend/reader/index.js';
import { startMockBackend, type MockBackend } from '../../src/qa/sim/mock-backend/server.js';
import { createConfiguredDevices, type ConfiguredDevices } from '../../src/service/configured-devices.js';
import { expectVerifiedOutcome } from '../support/ble-fixtures.js';
import { E2E_API_KEY, startE2eOn, type E2eStack } from '../support/e2e-stack.js';
import { LogCapture } from '../support/harness.js';
import { startHciRadio, type HciRadio } from '../support/hci-stack.js';
import { until } from '../support/radio-phone.js';

const CONTROLLER = 'kiosk-central';
const CYCLES = 3;
const RECOVERY_MS = 1_500;

let radio: HciRadio;
beforeAll(async () => {
  radio = await startHciRadio();
}, 30_000);
afterAll(async () => {
  await radio.radio.stop();
});

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** What a leak would grow: this process's descriptors, its exit/signal listeners, its timers. */
function resources(): { fds: number; listeners: number; timers: number } {
  const timers = process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
  const listeners = (['exit', 'SIGINT', 'SIGTERM', 'uncaughtException', 'unhandledRejection'] as const).reduce(
    (n, e) => n + process.listenerCount(e),
    0,
  );
  return { fds: readdirSync('/proc/self/fd').length, listeners, timers };
}

/** One build of the counter's devices and kiosk, as the runtime makes it after a settings save. */
interface Build {
  readonly devices: ConfiguredDevices;
  readonly e2e: E2eStack<HciRig>;
}

describe('a long day over HCI: rebuilds, adapter off and on, radio process kills', () => {
  it(`${CYCLES} rounds of every event, each followed by a verification that verifies; nothing leaks`, { timeout: 600_000 }, async () => {
    const pids: number[] = [];
    const fork = forkLauncher({ env: { BLUETOOTH_HCI_SOCKET_UART_PORT: hciTtysIn(radio.radio.dir).kioskCentral } });
    const launcher: RadioLauncher = () => {
      const child = fork();
      if (child.pid !== undefined) pids.push(child.pid);
      return child;
    };
    // The kiosk's own libraries in this process stay unstarted: its radio process owns the controller.
    const rig = await createHciRig(radio.stacks, { profile: 'android', ble: { central: false, peripheral: false } });
    let requests = 0; // ble_write messages the backend sent: the transfer is under way
    const backend: MockBackend = await startMockBackend({
      apiKeys: [E2E_API_KEY],
      engineFactory: createIsoReaderEngineFactory({ trustedIacaCertificates: [rig.phone.credential.pki.iaca.der] }),
      protocolLog: (entry) => {
        if (entry.event === 'message' && entry.direction === 'out' && /"ble_write"/.test(JSON.stringify(entry.message))) requests += 1;
      },
      logPayloads: true,
    });
    const config = parseConfig(
      mergeConfig(
        { backend: { baseUrl: backend.url, apiKey: E2E_API_KEY } },
        { ble: { roles: 'central', process: 'separate', adapterRecoveryMs: RECOVERY_MS } },
      ),
    );
    const deviceLogs = new LogCapture();
    const deviceLog = createLogger({ level: 'debug' }, deviceLogs);
    // The rig outlives every build: a build's stop must not stop it.
    const counter = {
      get phone() {
        return rig.phone;
      },
      devices: rig.devices,
      stop: () => Promise.resolve(),
    };
    const build = async (): Promise<Build> => {
      const devices = await createConfiguredDevices(config, deviceLog, { nfc: 'none', radioLauncher: launcher });
      const central = devices.ports.bleCentral;
      if (!central) throw new Error(`no central: ${devices.problems.join('; ')}`);
      const ports: DevicePorts = { ...rig.devices, bleCentral: central };
      const e2e = await startE2eOn(counter as unknown as HciRig, {
        backend,
        config: { profile: 'identity', ble: { roles: 'central' } },
        devices: () => ports,
      });
      await until(() => central.availability().usable, 30_000, 'the central usable in the radio process');
      await e2e.ready();
      return { devices, e2e };
    };
    const rebuild = async (old: Build): Promise<Build> => {
      await old.e2e.stop();
      await old.devices.close();
      return build();
    };
    const currentPid = (): number => {
      const pid = pids.at(-1);
      if (pid === undefined || !alive(pid)) throw new Error('no radio process runs');
      return pid;
    };
    const verify = async (b: Build, what: string, cut?: () => void): Promise<VerificationReport> => {
      await b.e2e.ready();
      const before = requests;
      rig.showQr();
      if (cut) {
        await until(() => requests > before, 30_000, `the request on its way to the phone (${what})`);
        cut();
      }
      return b.e2e.nextReport(45_000);
    };
    const verified: string[] = [];
    const verifyAfter = async (b: Build, what: string): Promise<void> => {
      const report = await verify(b, what);
      expect(report.result, `${what}: ${JSON.stringify(report.error)}`).toBe('complete');
      expectVerifiedOutcome(report);
      verified.push(what);
    };

    let current = await build();
    try {
      await verifyAfter(current, 'the first customer');
      const baseline = resources();
      for (let cycle = 1; cycle <= CYCLES; cycle++) {
        // A settings save: the devices and the kiosk are built again, with a fresh radio process.
        current = await rebuild(current);
        await verifyAfter(current, `rebuild ${cycle}`);

        // The adapter goes off: the kiosk says so; it comes back on a new controller behind the same port,
        // which only a fresh library instance opens — the radio process is replaced after RECOVERY_MS.
        const central = current.devices.ports.bleCentral;
        await radio.radio.switchOff(CONTROLLER);
        // An idle serial adapter whose pty went away is noticed at the library's next write (EIO, then the
        // port closes): serialport takes a pty's EIO on read for an error, not a disconnect, so an idle
        // library may not see it until then; a USB-serial unplug reads ENXIO and is seen at once. A customer
        // who comes meanwhile starts a scan: that write finds the adapter gone, and they are told.
        await until(() => central?.availability().usable === false, 2_000, 'the central unusable with its adapter off').catch(async () => {
          const meanwhile = await verify(current, `a customer while the adapter is off ${cycle}`);
          expect(meanwhile.result).not.toBe('complete');
        });
        await until(() => central?.availability().usable === false, 10_000, 'the central unusable with its adapter off');
        expect(central?.availability().reason).toBe('powered_off');
        await radio.radio.switchOn(CONTROLLER);
        await until(() => central?.availability().usable === true, 60_000, 'the central usable again once the adapter is back');
        await verifyAfter(current, `adapter off and on ${cycle}`);

        // The radio process dies while idle (a native crash between customers).
        process.kill(currentPid(), 'SIGKILL');
        await until(() => central?.availability().usable === false, 10_000, 'the central restarting');
        await until(() => central?.availability().usable === true, 60_000, 'the central back in a new radio process');
        await verifyAfter(current, `idle kill ${cycle}`);

        // ... and mid-transfer (a native abort): that customer is told, the next one verifies.
        const cut = await verify(current, `mid-transfer kill ${cycle}`, () => process.kill(currentPid(), 'SIGABRT'));
        expect(cut).toMatchObject({
          result: 'ble_link_lost',
          error: { code: 'ble_link_lost', detail: 'the radio process stopped: killed by SIGABRT' },
        });
        await until(() => central?.availability().usable === true, 60_000, 'the central back after the abort');
        // btvirt keeps the dead host's link (no supervision timeout): the phone still holds it, so the
        // next customer's phone takes its place, as on the air once the phone's supervision timeout ends it.
        await rig.replacePhone(await createHciPhone(radio.stacks, { profile: 'android' }));
        await verifyAfter(current, `after the mid-transfer kill ${cycle}`);
      }
      const end = resources();
      // Descriptors: the same radio-process pipes and backend sockets as at the baseline (one of each kind).
      expect(end.fds, JSON.stringify({ baseline, end })).toBeLessThanOrEqual(baseline.fds + 2);
      expect(end.listeners).toBe(baseline.listeners);
      expect(end.timers, JSON.stringify({ baseline, end })).toBeLessThanOrEqual(baseline.timers + 2);
      // Every radio process but the running one is gone.
      expect(pids.slice(0, -1).filter(alive)).toEqual([]);
      expect(verified).toHaveLength(1 + 4 * CYCLES);
      expect(deviceLogs.records.filter((r) => r.event === 'radio_process_recovering').length).toBeGreaterThanOrEqual(CYCLES);
    } catch (e) {
      // What the radio processes said (their own log records and the libraries' lines) tells why.
      process.stderr.write(`long day failed; the devices' log:\n${deviceLogs.lines.slice(-60).join('\n')}\n`);
      throw e;
    } finally {
      await current.e2e.stop();
      await current.devices.close();
      await backend.stop();
      await rig.stop();
    }
    await until(() => pids.every((pid) => !alive(pid)), 5_000, 'every radio process gone');
  });
});
