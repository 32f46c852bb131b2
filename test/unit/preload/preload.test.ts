/**
 * The preload (Electron security checklist #20: expose domain functions, never Electron's APIs): the
 * exposed surface is exactly the contract, made only of functions; and, wired to main's own IPC layer
 * (src/main/ipc.ts) through a fake ipcMain / ipcRenderer pair, every intent and the state stream work end
 * to end, schemas agree on both sides, and the screen's own client works on top.
 */
import { build } from 'esbuild';
import { beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { IPC_INTENT_NAMES, STATE_CHANNEL, STATE_REQUEST_CHANNEL, intentChannel } from '../../../src/common/ipc-contract.js';
import {
  INTENT_NAMES,
  KIOSK_INTENTS,
  createKioskApiClient,
  type IntentName,
  type KioskApi,
  type ScreenState,
} from '../../../src/common/kiosk-api.js';
import { createLogger } from '../../../src/platform/log.js';
import { registerKioskIpc } from '../../../src/main/ipc.js';
import { createKioskBridge, type KioskBridge } from '../../../src/preload/kiosk-bridge.js';
import {
  BrowserWindow,
  FakeIpcRenderer,
  contextBridge,
  ipcMain,
  ipcRenderer,
  resetFakeElectron,
  type FakeWebContents,
} from '../main/fake-electron.js';
import { fakeService, sampleState } from '../main/fake-service.js';

vi.mock('electron', () => import('../main/fake-electron.js'));

/** The screen's check of a preload bridge (src/renderer/api/connect.ts), loaded at run time: it is DOM-typed code. */
interface ConnectModule {
  preloadKiosk(scope: object): unknown;
  connectViaPreload(bridge: unknown): { api: KioskApi; stop(): void };
}
const CONNECT = '../../../src/renderer/api/connect.ts';

let exposed: unknown;

beforeAll(async () => {
  resetFakeElectron();
  await import('../../../src/preload/index.js');
  exposed = contextBridge.exposed.get('kiosk');
});

describe('the exposed surface', () => {
  it('exposes one key, kiosk, on the main world', () => {
    expect([...contextBridge.exposed.keys()]).toEqual(['kiosk']);
  });

  it('keys === IPC_INTENT_NAMES + onState === Object.keys(KIOSK_INTENTS) + onState', () => {
    const keys = Object.keys(exposed as object).sort();
    expect(keys).toEqual([...IPC_INTENT_NAMES, 'onState'].sort());
    expect(keys).toEqual([...Object.keys(KIOSK_INTENTS), 'onState'].sort());
  });

  it('every value is a function and nothing else: no ipcRenderer, no channel names, no objects with methods', () => {
    for (const [key, value] of Object.entries(exposed as object)) {
      expect(typeof value, key).toBe('function');
      expect(Object.keys(value as object), key).toEqual([]);
    }
    expect(Object.values(exposed as object)).not.toContain(ipcRenderer);
    expect(JSON.stringify(Object.keys(exposed as object))).not.toMatch(/mdl-kiosk:|invoke|send|ipc/i);
  });

  it('the screen recognises it as a preload bridge (preloadKiosk)', async () => {
    const connect = (await import(/* @vite-ignore */ CONNECT)) as ConnectModule;
    expect(connect.preloadKiosk({ kiosk: exposed })).toBe(exposed);
    // One function missing, and it is not a bridge.
    const partial = { ...(exposed as object), selfTest: undefined };
    expect(connect.preloadKiosk({ kiosk: partial })).toBeNull();
  });
});

describe('the bridge on its own', () => {
  let ipc: FakeIpcRenderer;
  let bridge: KioskBridge;

  beforeEach(() => {
    ipc = new FakeIpcRenderer();
    bridge = createKioskBridge(ipc as never);
  });

  it("sends exactly one argument on the intent's fixed channel", async () => {
    ipc.target = () => Promise.resolve({ ok: true, result: { ok: true } });
    // The page may pass anything; only the first argument crosses.
    await Reflect.apply(bridge.next, undefined, [{}, 'extra', { more: 1 }]);
    expect(ipc.invoked).toEqual([{ channel: intentChannel('next'), args: [{}] }]);
  });

  it('unwraps a failure into an Error whose message starts with the code, and keeps the code', async () => {
    ipc.target = () => Promise.resolve({ ok: false, error: { code: 'staff_required', message: 'getSettings needs the staff PIN' } });
    const error = (await bridge.getSettings({}).catch((e: unknown) => e)) as Error & { code?: string };
    expect(error).toBeInstanceOf(Error);
    expect(error.message).toBe('staff_required: getSettings needs the staff PIN');
    expect(error.code).toBe('staff_required');
  });

  it('a reply that is not an envelope is invalid_message', async () => {
    ipc.target = () => Promise.resolve({ accepted: true });
    await expect(bridge.qrScanned({ text: 'mdoc:x', source: 'camera' })).rejects.toThrow(/^invalid_message: qrScanned/);
  });

  it('onState: the current state at once, then pushes, never the IPC event', async () => {
    ipc.target = (channel) => Promise.resolve(channel === STATE_REQUEST_CHANNEL ? { ok: true, result: { n: 1 } } : undefined);
    const seen: unknown[][] = [];
    const off = bridge.onState((...args: unknown[]) => seen.push(args));
    await vi.waitFor(() => expect(seen).toEqual([[{ n: 1 }]]));
    ipc.deliver(STATE_CHANNEL, { n: 2 });
    expect(seen).toEqual([[{ n: 1 }], [{ n: 2 }]]);
    off();
    ipc.deliver(STATE_CHANNEL, { n: 3 });
    expect(seen).toHaveLength(2);
  });

  it('onState: a push that arrives before the requested state wins (no stale state after a fresh one)', async () => {
    let answer: (value: unknown) => void = () => undefined;
    ipc.target = () => new Promise((resolve) => (answer = resolve));
    const seen: unknown[] = [];
    bridge.onState((s) => seen.push(s));
    ipc.deliver(STATE_CHANNEL, { n: 'fresh' });
    answer({ ok: true, result: { n: 'stale' } });
    await new Promise((r) => setTimeout(r, 5));
    expect(seen).toEqual([{ n: 'fresh' }]);
  });

  it('onState: many listeners share one IPC subscription, each unsubscribes alone, a throwing one does not stop the rest', async () => {
    ipc.target = () => Promise.resolve({ ok: true, result: { n: 0 } });
    const a: unknown[] = [];
    const b: unknown[] = [];
    const offs = [
      bridge.onState((s) => a.push(s)),
      bridge.onState(() => {
        throw new Error('listener bug');
      }),
      bridge.onState((s) => b.push(s)),
    ];
    for (let i = 0; i < 20; i++) offs.push(bridge.onState(() => undefined));
    expect(ipc.listenerCount(STATE_CHANNEL)).toBe(1);
    await vi.waitFor(() => expect(b).toEqual([{ n: 0 }]));
    ipc.deliver(STATE_CHANNEL, { n: 1 });
    expect(a).toEqual([{ n: 0 }, { n: 1 }]);
    expect(b).toEqual([{ n: 0 }, { n: 1 }]);
    offs[0]?.();
    offs[0]?.();
    ipc.deliver(STATE_CHANNEL, { n: 2 });
    expect(a).toHaveLength(2);
    expect(b).toHaveLength(3);
    for (const off of offs) off();
    expect(ipc.listenerCount(STATE_CHANNEL)).toBe(0);
  });

  it('onState refuses a non-function', () => {
    expect(() => bridge.onState('nope' as never)).toThrow(TypeError);
  });
});

describe("end to end: the preload over main's IPC layer", () => {
  let contents: FakeWebContents;
  let service: ReturnType<typeof fakeService>;
  let ipc: FakeIpcRenderer;
  let bridge: KioskBridge;

  beforeEach(async () => {
    resetFakeElectron();
    const window = new BrowserWindow({ show: false });
    contents = window.webContents;
    await contents.loadURL('app://kiosk/index.html');
    service = fakeService();
    registerKioskIpc({ ipcMain: ipcMain, contents: contents as never, service: service, log: createLogger({ level: 'silent' }) });
    ipc = new FakeIpcRenderer();
    ipc.target = (channel, ...args) => ipcMain.invoke(channel, contents, contents.mainFrame, ...args);
    contents.onSend = (channel, ...args) => ipc.deliver(channel, ...args);
    bridge = createKioskBridge(ipc as never);
  });

  it('main and the preload agree on every channel', () => {
    for (const intent of IPC_INTENT_NAMES) expect(ipcMain.handlers.has(intentChannel(intent)), intent).toBe(true);
    expect(ipcMain.handlers.has(STATE_REQUEST_CHANNEL)).toBe(true);
  });

  it('every intent round-trips through dispatchIntent with valid arguments', async () => {
    service.unlocked = true;
    const validArgs: Partial<Record<IntentName, unknown>> = {
      qrScanned: { text: 'mdoc:abc', source: 'camera' },
      setLanguage: { language: 'es' },
      reportCamera: { state: 'active' },
      unlock: { pin: '1234' },
      setProfile: { name: 'age_over_18' },
      saveSettings: { defaultLanguage: 'fr' },
      changePin: { current: '1234', next: '5678' },
      reportError: { kind: 'error', message: 'TypeError: x is undefined' },
      synthesizeSpeech: { text: 'Hold your phone on the reader.', language: 'en' },
      reportSpeech: {
        active: false,
        engine: 'none',
        voiceName: '',
        output: 'none',
        outputName: '',
        outputWorks: null,
        systemVoices: {},
      },
    };
    for (const intent of INTENT_NAMES) {
      const args = validArgs[intent] ?? {};
      const result = await bridge[intent](args);
      // What came back satisfies the intent's own result schema (the screen checks it too).
      expect(KIOSK_INTENTS[intent].result.safeParse(result).success, intent).toBe(true);
    }
    expect(service.calls.map((c) => c.intent)).toEqual(INTENT_NAMES);
  });

  it('schemas agree: invalid arguments reach the caller as invalid_args, before the service sees them', async () => {
    const error = (await bridge.qrScanned({ text: 42, source: 'telepathy' }).catch((e: unknown) => e)) as Error & { code?: string };
    expect(error.code).toBe('invalid_args');
    expect(error.message).toMatch(/^invalid_args: qrScanned: /);
    await expect(bridge.setLanguage({ language: 'klingon' })).rejects.toThrow(/^invalid_args:/);
    await expect(bridge.unlock({ pin: '1234', extra: true })).rejects.toThrow(/^invalid_args:/);
    expect(service.calls).toEqual([]);
  });

  it('the staff gate and size bound surface with their codes', async () => {
    await expect(bridge.getDiagnostics({})).rejects.toThrow(/^staff_required:/);
    await expect(bridge.qrScanned({ text: 'x'.repeat(70_000), source: 'paste' })).rejects.toThrow(/^too_large:/);
  });

  it('states flow: the current one at subscription, then every push', async () => {
    const seen: ScreenState[] = [];
    const off = bridge.onState((s) => seen.push(s as ScreenState));
    await vi.waitFor(() => expect(seen).toHaveLength(1));
    expect(seen[0]).toEqual(service.state());
    const next = sampleState({ language: 'fr' });
    service.push(next);
    expect(seen.at(-1)).toEqual(next);
    off();
  });

  it('createKioskApiClient on top of the exposed object works (what the screen builds)', async () => {
    const api = createKioskApiClient({ call: (intent, args) => bridge[intent](args), onState: (listener) => bridge.onState(listener) });
    await expect(api.next({})).resolves.toEqual({ ok: true });
    await expect(api.unlock({ pin: '0000' })).resolves.toEqual({ ok: false, reason: 'wrong_pin', attemptsLeft: 4 });
    await expect(api.setLanguage({ language: 'de' as never })).rejects.toThrow(/^invalid_args:/);
    const states: ScreenState[] = [];
    const off = api.onState((s) => states.push(s));
    await vi.waitFor(() => expect(states).toHaveLength(1));
    service.push(sampleState({ language: 'es' }));
    expect(states.at(-1)?.language).toBe('es');
    off();
  });

  it("the screen's own preload connection (connectViaPreload) works on it", async () => {
    const connect = (await import(/* @vite-ignore */ CONNECT)) as ConnectModule;
    const bridgeSeen = connect.preloadKiosk({ kiosk: bridge });
    expect(bridgeSeen).toBe(bridge);
    const connection = connect.connectViaPreload(bridgeSeen);
    await expect(connection.api.retry({})).resolves.toEqual({ ok: true });
    const states: ScreenState[] = [];
    const off = connection.api.onState((s) => states.push(s));
    await vi.waitFor(() => expect(states).toHaveLength(1));
    off();
    connection.stop();
  });
});

describe('the sandboxed preload bundle', () => {
  it('is one small CommonJS file whose only external is electron, built from the contract and the bridge alone', async () => {
    const result = await build({
      entryPoints: ['src/preload/index.ts'],
      bundle: true,
      format: 'cjs',
      platform: 'node',
      external: ['electron'],
      write: false,
      metafile: true,
      logLevel: 'silent',
    });
    expect(Object.keys(result.metafile.inputs).sort()).toEqual([
      'src/common/ipc-contract.ts',
      'src/common/ipc-reply.ts',
      'src/preload/index.ts',
      'src/preload/kiosk-bridge.ts',
    ]);
    const code = result.outputFiles[0]?.text ?? '';
    expect([...code.matchAll(/require\("([^"]+)"\)/g)].map((m) => m[1])).toEqual(['electron']);
    expect(code.length).toBeLessThan(8_000);
  });
});
