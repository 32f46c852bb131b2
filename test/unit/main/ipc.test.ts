/**
 * IPC, main side (Electron security checklist #17: validate the sender of every IPC message): exactly the
 * contract's channels, every call checked for its sender, its size and its arguments, replies in the
 * envelope, states to our window only.
 */
import { beforeEach, describe, expect, it, vi } from 'vitest';
import {
  allInvokeChannels,
  intentChannel,
  IPC_INTENT_NAMES,
  STATE_CHANNEL,
  STATE_REQUEST_CHANNEL,
} from '../../../src/common/ipc-contract.js';
import { KioskApiError, MAX_API_MESSAGE_BYTES, type ScreenState } from '../../../src/common/kiosk-api.js';
import { createLogger } from '../../../src/platform/log.js';
import { registerKioskIpc, senderProblem, type KioskIpc } from '../../../src/main/ipc.js';
import { LogCapture } from '../../support/harness.js';
import { BrowserWindow, FakeWebFrameMain, ipcMain, resetFakeElectron, type FakeWebContents } from './fake-electron.js';
import { fakeService, sampleState } from './fake-service.js';

vi.mock('electron', () => import('./fake-electron.js'));

let logs: LogCapture;
let window: BrowserWindow;
let contents: FakeWebContents;
let service: ReturnType<typeof fakeService>;
let ipc: KioskIpc;

const call = (channel: string, ...args: unknown[]): Promise<unknown> => ipcMain.invoke(channel, contents, contents.mainFrame, ...args);

beforeEach(async () => {
  resetFakeElectron();
  logs = new LogCapture();
  window = new BrowserWindow({ show: false });
  contents = window.webContents;
  await contents.loadURL('app://kiosk/index.html');
  service = fakeService();
  ipc = registerKioskIpc({ ipcMain: ipcMain, contents: contents as never, service: service, log: createLogger({ level: 'debug' }, logs) });
});

describe('channels', () => {
  it('registers one handler per intent of the contract plus the state request, and nothing else', () => {
    expect([...ipcMain.handlers.keys()].sort()).toEqual(allInvokeChannels().sort());
    expect(ipc.channels).toHaveLength(IPC_INTENT_NAMES.length + 1);
    expect(ipcMain.listenerCount('message')).toBe(0);
  });

  it('dispose removes every handler and stops the state pushes', () => {
    ipc.dispose();
    expect(ipcMain.handlers.size).toBe(0);
    const before = contents.sent.length;
    service.push(sampleState({ testMode: false }));
    expect(contents.sent.length).toBe(before);
  });

  it('a destroyed window disposes the IPC layer by itself', () => {
    window.destroy();
    expect(ipcMain.handlers.size).toBe(0);
  });
});

describe('#17 sender validation', () => {
  it('accepts the main frame of our window at app://kiosk', async () => {
    await expect(call(intentChannel('next'), {})).resolves.toEqual({ ok: true, result: { ok: true } });
  });

  const refusals: [string, () => { sender: FakeWebContents; frame: FakeWebFrameMain | null }][] = [
    [
      'a subframe of our window',
      () => ({ sender: contents, frame: new FakeWebFrameMain('app://kiosk/frame.html', contents.mainFrame, contents.mainFrame.processId) }),
    ],
    [
      'another window',
      () => {
        const other = new BrowserWindow({ show: false }).webContents;
        other.mainFrame.url = 'app://kiosk/index.html';
        return { sender: other, frame: other.mainFrame };
      },
    ],
    [
      'our window showing another origin',
      () => {
        contents.mainFrame.url = 'https://evil.example/';
        return { sender: contents, frame: contents.mainFrame };
      },
    ],
    ['a frame that is gone', () => ({ sender: contents, frame: null })],
    [
      'a detached frame',
      () => {
        contents.mainFrame.detached = true;
        return { sender: contents, frame: contents.mainFrame };
      },
    ],
    [
      'a stale frame from before a navigation',
      () => {
        const stale = contents.mainFrame;
        void contents.loadURL('app://kiosk/index.html');
        return { sender: contents, frame: stale };
      },
    ],
    [
      'a file:// page',
      () => {
        contents.mainFrame.url = 'file:///app/index.html';
        return { sender: contents, frame: contents.mainFrame };
      },
    ],
  ];
  for (const [what, make] of refusals) {
    it(`refuses ${what}, for intents and the state request, and logs it without the payload`, async () => {
      const { sender, frame } = make();
      await expect(ipcMain.invoke(intentChannel('unlock'), sender, frame, { pin: '123456' })).rejects.toThrow(/refused: .*app:\/\/kiosk/);
      await expect(ipcMain.invoke(STATE_REQUEST_CHANNEL, sender, frame)).rejects.toThrow(/refused/);
      expect(service.calls).toEqual([]);
      const rejected = logs.records.filter((r) => r.event === 'ipc_sender_rejected');
      expect(rejected).toHaveLength(2);
      expect(rejected[0]).toMatchObject({ kind: intentChannel('unlock') });
      expect(logs.text()).not.toContain('123456');
    });
  }

  it('senderProblem names the reason', () => {
    expect(senderProblem({ sender: contents, senderFrame: contents.mainFrame } as never, contents as never)).toBeNull();
    expect(senderProblem({ sender: contents, senderFrame: null } as never, contents as never)).toMatch(/gone/);
  });
});

describe('payloads', () => {
  it('runs the intent through dispatchIntent with the validated arguments', async () => {
    await expect(call(intentChannel('setLanguage'), { language: 'fr' })).resolves.toEqual({ ok: true, result: { ok: true } });
    expect(service.calls).toEqual([{ intent: 'setLanguage', args: { language: 'fr' } }]);
  });

  it('no arguments means {}', async () => {
    await expect(call(intentChannel('next'))).resolves.toEqual({ ok: true, result: { ok: true } });
  });

  it('invalid arguments come back as invalid_args, naming the key', async () => {
    const reply = (await call(intentChannel('setLanguage'), { language: 'xx' })) as { ok: false; error: { code: string; message: string } };
    expect(reply.ok).toBe(false);
    expect(reply.error.code).toBe('invalid_args');
    expect(reply.error.message).toMatch(/^setLanguage: language/);
    expect(service.calls).toEqual([]);
  });

  it('a payload over MAX_API_MESSAGE_BYTES is too_large and never dispatched', async () => {
    const reply = await call(intentChannel('qrScanned'), { text: 'x'.repeat(MAX_API_MESSAGE_BYTES), source: 'camera' });
    expect(reply).toMatchObject({ ok: false, error: { code: 'too_large' } });
    expect(service.calls).toEqual([]);
  });

  it('more than one argument, or arguments that are not JSON data, are invalid_message', async () => {
    expect(await call(intentChannel('next'), {}, {})).toMatchObject({ ok: false, error: { code: 'invalid_message' } });
    expect(
      await ipcMain.handlers.get(intentChannel('next'))?.({ sender: contents, senderFrame: contents.mainFrame } as never, { n: 10n }),
    ).toMatchObject({
      ok: false,
      error: { code: 'invalid_message' },
    });
  });

  it('staff intents need the staff session', async () => {
    expect(await call(intentChannel('getSettings'), {})).toMatchObject({ ok: false, error: { code: 'staff_required' } });
    service.unlocked = true;
    expect(await call(intentChannel('getDiagnostics'), {})).toMatchObject({ ok: true });
  });

  it('a KioskApiError from the service keeps its code; any other error is internal and logged by kind', async () => {
    service.unlocked = true;
    service.failWith = new KioskApiError('invalid_args', 'setProfile: unknown request profile');
    expect(await call(intentChannel('setProfile'), { name: 'x' })).toEqual({
      ok: false,
      error: { code: 'invalid_args', message: 'setProfile: unknown request profile' },
    });
    service.failWith = new Error('disk on fire: /secret/path');
    const reply = await call(intentChannel('setProfile'), { name: 'x' });
    expect(reply).toEqual({ ok: false, error: { code: 'internal', message: 'setProfile failed inside the kiosk; see the diagnostics' } });
    expect(logs.records.find((r) => r.event === 'ipc_intent_failed')).toMatchObject({ kind: 'setProfile' });
    expect(logs.text()).not.toContain('/secret/path');
  });

  it('the state request answers the current state in the envelope', async () => {
    expect(await call(STATE_REQUEST_CHANNEL)).toEqual({ ok: true, result: service.state() });
  });
});

describe('state pushes', () => {
  it('go to our window on STATE_CHANNEL', () => {
    const state: ScreenState = sampleState({ language: 'es' });
    service.push(state);
    expect(contents.sent.at(-1)).toEqual({ channel: STATE_CHANNEL, args: [state] });
  });

  it('never to a destroyed window, and never to a window that left app://kiosk', () => {
    contents.mainFrame.url = 'https://evil.example/';
    const before = contents.sent.length;
    service.push(sampleState({ language: 'es' }));
    expect(contents.sent.length).toBe(before);
    contents.mainFrame.url = 'app://kiosk/index.html';
    window.destroy();
    expect(() => service.push(sampleState({ language: 'fr' }))).not.toThrow();
  });
});
