/**
 * The QA flavour on its real embedded default (src/qa/app/embedded-default.ts): the mock backend and
 * virtual counter start in the main process, the kiosk reaches Ready against them in TEST MODE, the
 * virtual phone page answers on loopback in its own window, and quitting stops all of it.
 */
import { EventEmitter } from 'node:events';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { runKioskApp } from '../../../src/main/app.js';
import { embeddedDefault } from '../../../src/qa/app/embedded-default.js';
import { TEST_SCRYPT } from '../service/service-fixture.js';
import { BrowserWindow, app, resetFakeElectron } from './fake-electron.js';

vi.mock('electron', () => import('./fake-electron.js'));

class TextCapture extends Writable {
  text = '';
  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: () => void): void {
    this.text += chunk.toString('utf8');
    callback();
  }
}

let root: string;
const savedPkiDir = process.env.MDL_KIOSK_QA_PKI;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'mdl-kiosk-qa-app-'));
  // The QA PKI the virtual phone and the mock backend share, in a folder of this test's own.
  process.env.MDL_KIOSK_QA_PKI = join(root, 'qa-pki');
});

afterAll(async () => {
  if (savedPkiDir === undefined) delete process.env.MDL_KIOSK_QA_PKI;
  else process.env.MDL_KIOSK_QA_PKI = savedPkiDir;
  await rm(root, { recursive: true, force: true });
});

describe('QA flavour with nothing configured', () => {
  it('runs the kiosk on the embedded mock backend and virtual counter, and stops them on quit', async () => {
    resetFakeElectron();
    app.paths.set('userData', join(root, 'userData'));
    app.paths.set('logs', join(root, 'logs'));
    await mkdir(join(root, 'renderer'), { recursive: true });
    await writeFile(join(root, 'renderer', 'index.html'), '<!doctype html>');
    const stdout = new TextCapture();
    const proc = new EventEmitter();
    const starting = runKioskApp({
      flavour: 'qa',
      embedded: embeddedDefault,
      argv: ['/opt/electron', 'dist/app-dev'],
      dependencies: {
        env: {},
        platform: 'linux',
        defaultApp: true,
        process: proc as never,
        stdout,
        stderr: new TextCapture(),
        preloadPath: join(root, 'preload.cjs'),
        rendererDir: join(root, 'renderer'),
        managedConfigFile: join(root, 'managed.json'),
        devices: () => Promise.reject(new Error('the production devices must not be used here')),
        serviceOptions: { pinScrypt: TEST_SCRYPT },
      },
    });
    app.becomeReady();
    const running = await starting;
    if (!running?.embedded) throw new Error('the embedded default did not start');
    try {
      await vi.waitFor(() => expect(running.service.state().view.phase).toBe('ready'), { timeout: 15_000, interval: 50 });
      const state = running.service.state();
      expect(state.testMode).toBe(true);
      expect(state.backendOrigin).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(state.view.devices.nfc.usable).toBe(true);
      expect(running.embedded.staffPin).toMatch(/^[0-9]{6}$/);
      expect(stdout.text).toContain(running.embedded.phonePageUrl);
      // The phone page answers on loopback, and its window shows it.
      const page = await fetch(running.embedded.phonePageUrl);
      expect(page.status).toBe(200);
      expect(BrowserWindow.instances[1]?.webContents.loaded).toEqual([running.embedded.phonePageUrl]);
    } finally {
      app.quit();
      await vi.waitFor(() => expect(app.exitCode).toBe(0), { timeout: 10_000 });
      running.lifecycle.dispose();
    }
    expect(running.service.state().view.phase).toBe('stopped');
    await expect(fetch(running.embedded.phonePageUrl)).rejects.toThrow();
  }, 30_000);
});
