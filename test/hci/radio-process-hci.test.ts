/**
 * The production radio process over BlueZ's emulated controllers (tools/btvirt): the kiosk's noble runs in
 * a forked child (src/devices/ble/radio-process/child-entry.ts, exactly as shipped) on the kiosk-central
 * controller, chosen by `BLUETOOTH_HCI_SOCKET_UART_PORT` in its environment (docs/emulated-radio.md); the
 * virtual phone's wallet runs on the phone's controllers in this process. The child is killed mid-transfer
 * (SIGKILL, and SIGABRT as a native abort raises it): the cut verification errs clearly, the child restarts
 * on the same controller, the next verification verifies, and no child is left.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { LibraryLog } from '../../src/devices/ble/library-console.js';
import { forkLauncher } from '../../src/devices/ble/radio-process/launcher.js';
import { RadioProcess } from '../../src/devices/ble/radio-process/radio-process.js';
import { createHciPhone, createHciRig, hciTtysIn } from '../../src/qa/hci/hci-rig.js';
import { expectVerifiedOutcome } from '../support/ble-fixtures.js';
import { startE2eOn, type E2eStack } from '../support/e2e-stack.js';
import { startHciRadio, type HciRadio } from '../support/hci-stack.js';
import { until } from '../support/radio-phone.js';

let radio: HciRadio;
const cleanups: (() => Promise<void>)[] = [];

beforeAll(async () => {
  radio = await startHciRadio();
}, 30_000);

afterAll(async () => {
  await radio.radio.stop();
});

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('the production radio process over HCI (btvirt)', () => {
  it('central: killed mid-transfer by SIGKILL, then by SIGABRT; each cut verification errs clearly, the next one verifies, no child is left', {
    timeout: 180_000,
  }, async () => {
    const lines: { fields: Record<string, unknown>; message: string }[] = [];
    const log: LibraryLog = {
      info: (fields, message) => lines.push({ fields: fields as Record<string, unknown>, message }),
      warn: (fields, message) => lines.push({ fields: fields as Record<string, unknown>, message }),
    };
    const pids = new Set<number>();
    const fork = forkLauncher({ env: { BLUETOOTH_HCI_SOCKET_UART_PORT: hciTtysIn(radio.radio.dir).kioskCentral } });
    const radioProcess = new RadioProcess({
      launcher: () => {
        const child = fork();
        if (child.pid !== undefined) pids.add(child.pid);
        return child;
      },
      init: { central: true, peripheral: false },
      log,
      restartMinMs: 200,
    });
    // The kiosk's own libraries in this process stay unstarted: the child owns the kiosk-central controller.
    const rig = await createHciRig(radio.stacks, {
      profile: 'android',
      behaviour: { consentDelayMs: 1_500 },
      ble: { central: false, peripheral: false },
    });
    let requests = 0;
    const e2e: E2eStack<typeof rig> = await startE2eOn(rig, {
      config: { profile: 'identity' },
      backendMessages: (entry) => {
        if (/"ble_write"/.test(JSON.stringify(entry))) requests += 1;
      },
      devices: () => ({ ...rig.devices, bleCentral: radioProcess.central }),
    });
    cleanups.push(async () => {
      await e2e.stop();
      await radioProcess.close();
    });
    expect(await radioProcess.started()).toEqual([]);
    await until(() => radioProcess.central?.availability().usable === true, 20_000, 'the central powered on in the child');
    await e2e.ready();

    const verify = async (cut?: () => void) => {
      const before = requests;
      rig.showQr();
      if (cut) {
        await until(() => requests > before, 30_000, 'the request on its way to the phone');
        cut();
      }
      const report = await e2e.nextReport(40_000);
      if (process.env.HCI_TEST_DEBUG)
        process.stderr.write(
          `REPORT ${JSON.stringify({ result: report.result, error: report.error })}\n${lines.map((l) => l.message).join('\n')}\n`,
        );
      return report;
    };
    expectVerifiedOutcome(await verify());
    for (const signal of ['SIGKILL', 'SIGABRT'] as const) {
      const pid = radioProcess.pid ?? 0;
      const cut = await verify(() => process.kill(pid, signal));
      expect(cut, JSON.stringify(cut.error)).toMatchObject({
        result: 'ble_link_lost',
        error: { code: 'ble_link_lost', detail: `the radio process stopped: killed by ${signal}` },
      });
      await until(() => radioProcess.central?.availability().usable === true, 30_000, 'the restarted radio process on the controller');
      // The emulated controller keeps the dead host's link (btvirt has no supervision timeout and its reset
      // tells the peer nothing), so the phone still holds it; on the air the phone's supervision timeout ends
      // it once the kiosk's controller resets. The customer's next phone takes its place here.
      await rig.replacePhone(await createHciPhone(radio.stacks, { profile: 'android', behaviour: { consentDelayMs: 1_500 } }));
      await e2e.ready();
      expectVerifiedOutcome(await verify());
    }
    expect(radioProcess.spawnCount).toBe(3);
    const all = [...pids];
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    await until(() => all.every((pid) => !alive(pid)), 5_000, 'every radio child gone');
  });
});
