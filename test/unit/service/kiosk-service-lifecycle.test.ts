/**
 * The service's lifecycle at its edges: a stop that comes while the start is still building the devices
 * must close them once they exist (a reader or a radio left open would keep the next start from them).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { QrScanQueue } from '../../../src/devices/qr/qr-scan-queue.js';
import { KioskService, type DeviceSet } from '../../../src/service/kiosk-service.js';
import { MemorySecretStore } from '../../../src/service/secret-store.js';
import { LogCapture } from '../../support/harness.js';

const dirs: string[] = [];

afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

describe('KioskService lifecycle', () => {
  it('a stop while the start builds the devices closes them once built; no kiosk is started', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'mdl-kiosk-lifecycle-'));
    dirs.push(dataDir);
    let closed = 0;
    let built: ((set: DeviceSet) => void) | undefined;
    const qr = new QrScanQueue({ freshMs: 1_000 });
    const service = new KioskService({
      devices: () => new Promise<DeviceSet>((resolve) => (built = resolve)),
      dataDir,
      env: {},
      secrets: new MemorySecretStore(),
      logDestination: new LogCapture(),
    });
    const started = service.start();
    // The device factory has been called once the settings and the key are loaded.
    for (let i = 0; i < 500 && built === undefined; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    const stopped = service.stop();
    expect(built).toBeDefined();
    built?.({
      ports: { qr },
      qr,
      close: () => {
        closed++;
        return Promise.resolve();
      },
    });
    await started;
    await stopped;
    expect(closed).toBe(1);
    expect(service.state().view.phase).toBe('stopped');
    expect(service.isIdle()).toBe(false);
  });
});
