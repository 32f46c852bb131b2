/**
 * A fake `electron` module for the main-process and preload tests: the real one cannot be loaded in plain
 * Node (it downloads its binary on first use). Each main test does
 *
 *   vi.mock('electron', () => import('./fake-electron.js'));
 *
 * and imports the same module to drive and inspect it. Only what the shell uses is here, with the same
 * names and argument orders as electron.d.ts: windows and web contents with event emitters, sessions that
 * record the handlers set on them, ipcMain / ipcRenderer / contextBridge, protocol, app (events, paths,
 * single-instance lock, relaunch, exit, login items), powerSaveBlocker, Menu and safeStorage.
 *
 * `calls` records the notable calls in order, so a test can check what happened before what.
 * `resetFakeElectron()` gives every test a fresh world.
 */
import { EventEmitter } from 'node:events';
import { PassThrough } from 'node:stream';
import type {
  BrowserWindowConstructorOptions,
  CustomScheme,
  HandlerDetails,
  IpcMainInvokeEvent,
  PermissionCheckHandlerHandlerDetails,
  Settings,
  WindowOpenHandlerResponse,
} from 'electron';

/** Notable calls, in order (`app.requestSingleInstanceLock`, `new BrowserWindow`, `ipcMain.handle <channel>`…). */
export const calls: string[] = [];

// ------------------------------------------------------------------------------------------ events

export interface FakeEvent {
  defaultPrevented: boolean;
  preventDefault(): void;
}

/** An Electron event: `preventDefault()` plus the event's own fields (Electron.Event<Params>). */
export function fakeEvent<P extends object>(params: P = {} as P): FakeEvent & P {
  const event = {
    ...params,
    defaultPrevented: false,
    preventDefault() {
      event.defaultPrevented = true;
    },
  };
  return event;
}

// ------------------------------------------------------------------------------------------ frames

let nextProcessId = 100;
let nextTokenNumber = 1;

export class FakeWebFrameMain {
  readonly processId: number;
  readonly routingId: number;
  readonly frameToken: string;
  readonly frameTreeNodeId: number;
  detached = false;
  constructor(
    public url: string,
    readonly parent: FakeWebFrameMain | null = null,
    processId?: number,
  ) {
    this.processId = processId ?? nextProcessId++;
    this.routingId = nextTokenNumber;
    this.frameTreeNodeId = nextTokenNumber;
    this.frameToken = `frame-token-${nextTokenNumber++}`;
  }
  get top(): FakeWebFrameMain {
    return this.parent === null ? this : this.parent.top;
  }
  get origin(): string {
    try {
      const u = new URL(this.url);
      return u.protocol === 'app:' ? `app://${u.host}` : u.origin;
    } catch {
      return 'null';
    }
  }
}

// ------------------------------------------------------------------------------------------ sessions

type PermissionRequestHandler = (
  webContents: unknown,
  permission: string,
  callback: (granted: boolean) => void,
  details: Record<string, unknown>,
) => void;
type PermissionCheckHandler = (
  webContents: unknown,
  permission: string,
  requestingOrigin: string,
  details: PermissionCheckHandlerHandlerDetails,
) => boolean;

export class FakeSession extends EventEmitter {
  permissionRequestHandler: PermissionRequestHandler | null | undefined;
  permissionCheckHandler: PermissionCheckHandler | null | undefined;
  devicePermissionHandler: ((details: unknown) => boolean) | null | undefined;
  bluetoothPairingHandler: unknown;
  displayMediaRequestHandler: unknown;
  constructor(readonly partition: string) {
    super();
  }
  setPermissionRequestHandler(handler: PermissionRequestHandler | null): void {
    calls.push(`session.setPermissionRequestHandler ${this.partition}`);
    this.permissionRequestHandler = handler;
  }
  setPermissionCheckHandler(handler: PermissionCheckHandler | null): void {
    calls.push(`session.setPermissionCheckHandler ${this.partition}`);
    this.permissionCheckHandler = handler;
  }
  setDevicePermissionHandler(handler: ((details: unknown) => boolean) | null): void {
    this.devicePermissionHandler = handler;
  }
  setBluetoothPairingHandler(handler: unknown): void {
    this.bluetoothPairingHandler = handler;
  }
  setDisplayMediaRequestHandler(handler: unknown): void {
    this.displayMediaRequestHandler = handler;
  }
  /** What the request handler answers (synchronously or not). */
  requestPermission(webContents: unknown, permission: string, details: Record<string, unknown>): Promise<boolean> {
    const handler = this.permissionRequestHandler;
    if (!handler) return Promise.resolve(true); // Electron's default approves everything
    return new Promise((resolve) => handler(webContents, permission, resolve, details));
  }
  checkPermission(
    webContents: unknown,
    permission: string,
    requestingOrigin: string,
    details: PermissionCheckHandlerHandlerDetails,
  ): boolean {
    const handler = this.permissionCheckHandler;
    if (!handler) return true;
    return handler(webContents, permission, requestingOrigin, details);
  }
}

const sessions = new Map<string, FakeSession>();

function sessionFor(partition: string | undefined): FakeSession {
  const key = partition ?? '';
  let s = sessions.get(key);
  if (!s) {
    s = new FakeSession(key === '' ? 'default' : key);
    sessions.set(key, s);
  }
  return s;
}

export const session = {
  get defaultSession(): FakeSession {
    return sessionFor(undefined);
  },
  fromPartition(partition: string): FakeSession {
    return sessionFor(partition);
  },
};

// ------------------------------------------------------------------------------------------ web contents

let nextContentsId = 1;

export class FakeWebContents extends EventEmitter {
  readonly id = nextContentsId++;
  readonly session: FakeSession;
  mainFrame: FakeWebFrameMain;
  readonly sent: { channel: string; args: unknown[] }[] = [];
  readonly loaded: string[] = [];
  destroyed = false;
  reloads = 0;
  crashes = 0;
  windowOpenHandler: ((details: HandlerDetails) => WindowOpenHandlerResponse) | undefined;
  visualZoomLimits: [number, number] | undefined;
  zoomFactor = 1;
  devToolsOpened = false;
  constructor(partition?: string) {
    super();
    this.session = sessionFor(partition);
    this.mainFrame = new FakeWebFrameMain('about:blank');
  }
  getURL(): string {
    return this.mainFrame.url;
  }
  loadURL(url: string): Promise<void> {
    calls.push(`webContents.loadURL ${url}`);
    this.loaded.push(url);
    // A navigation gets a fresh main frame (a new document).
    this.mainFrame = new FakeWebFrameMain(url, null, this.mainFrame.processId);
    return Promise.resolve();
  }
  /** A test wires this to `ipcRenderer.deliver` to carry main's pushes to a preload. */
  onSend: ((channel: string, ...args: unknown[]) => void) | undefined;
  send(channel: string, ...args: unknown[]): void {
    if (this.destroyed) throw new Error('Object has been destroyed');
    this.sent.push({ channel, args });
    this.onSend?.(channel, ...args);
  }
  isDestroyed(): boolean {
    return this.destroyed;
  }
  reload(): void {
    this.reloads++;
  }
  isCrashed(): boolean {
    return false;
  }
  forcefullyCrashRenderer(): void {
    this.crashes++;
    this.emit('render-process-gone', fakeEvent(), { reason: 'killed', exitCode: 9 });
  }
  setWindowOpenHandler(handler: (details: HandlerDetails) => WindowOpenHandlerResponse): void {
    this.windowOpenHandler = handler;
  }
  setVisualZoomLevelLimits(min: number, max: number): Promise<void> {
    this.visualZoomLimits = [min, max];
    return Promise.resolve();
  }
  setZoomFactor(factor: number): void {
    this.zoomFactor = factor;
  }
  getZoomFactor(): number {
    return this.zoomFactor;
  }
  isDevToolsOpened(): boolean {
    return this.devToolsOpened;
  }
  closeDevTools(): void {
    this.devToolsOpened = false;
  }
  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    this.emit('destroyed');
  }
  /** Emits a `will-navigate`-style event (details object first) and returns it. */
  navigateEvent(name: 'will-navigate' | 'will-frame-navigate' | 'will-redirect', url: string, isMainFrame = true): FakeEvent {
    const event = fakeEvent({ url, isMainFrame, isSameDocument: false, frame: null, initiator: undefined });
    this.emit(name, event, url, false, isMainFrame);
    return event;
  }
  /** Emits `before-mouse-event` for a wheel turn and returns the event. */
  wheelEvent(modifiers: string[]): FakeEvent {
    const event = fakeEvent();
    this.emit('before-mouse-event', event, { type: 'mouseWheel', x: 1, y: 1, modifiers, wheelTicksY: 1 });
    return event;
  }
  /** Emits `before-input-event` for one key and returns the event. */
  keyEvent(input: {
    key: string;
    code?: string;
    control?: boolean;
    meta?: boolean;
    alt?: boolean;
    shift?: boolean;
    type?: string;
  }): FakeEvent {
    const event = fakeEvent();
    this.emit('before-input-event', event, {
      type: input.type ?? 'keyDown',
      key: input.key,
      code: input.code ?? '',
      control: input.control ?? false,
      meta: input.meta ?? false,
      alt: input.alt ?? false,
      shift: input.shift ?? false,
      isAutoRepeat: false,
      isComposing: false,
      location: 0,
      modifiers: [],
    });
    return event;
  }
}

// ------------------------------------------------------------------------------------------ windows

export class BrowserWindow extends EventEmitter {
  static readonly instances: BrowserWindow[] = [];
  static getAllWindows(): BrowserWindow[] {
    return BrowserWindow.instances.filter((w) => !w.destroyed);
  }
  static fromWebContents(contents: unknown): BrowserWindow | null {
    return BrowserWindow.instances.find((w) => w.webContents === contents) ?? null;
  }
  readonly options: BrowserWindowConstructorOptions;
  readonly webContents: FakeWebContents;
  visible = false;
  focused = false;
  minimized = false;
  destroyed = false;
  contentProtection: boolean | undefined;
  constructor(options: BrowserWindowConstructorOptions = {}) {
    super();
    calls.push('new BrowserWindow');
    this.options = options;
    this.visible = options.show ?? true;
    this.webContents = new FakeWebContents(options.webPreferences?.partition);
    BrowserWindow.instances.push(this);
    app.emit('web-contents-created', fakeEvent(), this.webContents);
  }
  show(): void {
    this.visible = true;
  }
  hide(): void {
    this.visible = false;
  }
  focus(): void {
    this.focused = true;
  }
  isVisible(): boolean {
    return this.visible;
  }
  isMinimized(): boolean {
    return this.minimized;
  }
  minimize(): void {
    this.minimized = true;
  }
  restore(): void {
    this.minimized = false;
  }
  setContentProtection(enable: boolean): void {
    this.contentProtection = enable;
  }
  loadURL(url: string): Promise<void> {
    return this.webContents.loadURL(url);
  }
  isDestroyed(): boolean {
    return this.destroyed;
  }
  /** Like Electron: `close` may be prevented; otherwise the window goes. */
  close(): boolean {
    if (this.destroyed) return false;
    const event = fakeEvent();
    this.emit('close', event);
    if (event.defaultPrevented) return false;
    this.destroy();
    return true;
  }
  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    this.webContents.destroy();
    this.emit('closed');
    if (BrowserWindow.getAllWindows().length === 0) app.emit('window-all-closed');
  }
}

// ------------------------------------------------------------------------------------------ IPC

type InvokeHandler = (event: IpcMainInvokeEvent, ...args: unknown[]) => unknown;

class FakeIpcMain extends EventEmitter {
  readonly handlers = new Map<string, InvokeHandler>();
  handle(channel: string, handler: InvokeHandler): void {
    calls.push(`ipcMain.handle ${channel}`);
    // Electron refuses a second handler on one channel.
    if (this.handlers.has(channel)) throw new Error(`Attempted to register a second handler for '${channel}'`);
    this.handlers.set(channel, handler);
  }
  removeHandler(channel: string): void {
    this.handlers.delete(channel);
  }
  /** Calls a handler as Electron would for `ipcRenderer.invoke` from `sender`'s `frame`. */
  async invoke(channel: string, sender: FakeWebContents, frame: FakeWebFrameMain | null, ...args: unknown[]): Promise<unknown> {
    const handler = this.handlers.get(channel);
    if (!handler) throw new Error(`Error invoking remote method '${channel}': Error: No handler registered for '${channel}'`);
    const event = {
      sender,
      senderFrame: frame,
      frameId: frame?.routingId ?? 0,
      processId: frame?.processId ?? 0,
      type: 'frame',
      preventDefault() {},
    };
    try {
      // Structured clone both ways, as Electron's IPC does.
      return structuredClone(await handler(event as unknown as IpcMainInvokeEvent, ...structuredClone(args)));
    } catch (e) {
      // Electron keeps only the message of an error thrown by a handler.
      throw new Error(`Error invoking remote method '${channel}': ${e instanceof Error ? `Error: ${e.message}` : String(e)}`);
    }
  }
}

export const ipcMain = new FakeIpcMain();

/**
 * The preload's side: `invoke` goes to `ipcRenderer.target` (a test wires it to `ipcMain.invoke` with the
 * window's contents and frame); main's `webContents.send` is replayed with `deliver`.
 */
export class FakeIpcRenderer extends EventEmitter {
  target: ((channel: string, ...args: unknown[]) => Promise<unknown>) | undefined;
  readonly invoked: { channel: string; args: unknown[] }[] = [];
  invoke(channel: string, ...args: unknown[]): Promise<unknown> {
    this.invoked.push({ channel, args });
    if (!this.target) return Promise.reject(new Error(`no main process is wired to ipcRenderer (invoke ${channel})`));
    return this.target(channel, ...args);
  }
  send(): void {
    throw new Error('the kiosk preload never uses ipcRenderer.send');
  }
  /** Main pushed `args` on `channel`: listeners get an IpcRendererEvent first, as in Electron. */
  deliver(channel: string, ...args: unknown[]): void {
    const event = { sender: this, senderId: 0, ports: [] };
    this.emit(channel, event, ...structuredClone(args));
  }
}

export const ipcRenderer = new FakeIpcRenderer();

export const contextBridge = {
  exposed: new Map<string, unknown>(),
  exposeInMainWorld(key: string, api: unknown): void {
    calls.push(`contextBridge.exposeInMainWorld ${key}`);
    if (contextBridge.exposed.has(key)) throw new Error(`Cannot bind an API on top of an existing property on the window object: ${key}`);
    contextBridge.exposed.set(key, api);
  },
};

// ------------------------------------------------------------------------------------------ protocol

type ProtocolHandler = (request: Request) => Response | Promise<Response>;

export const protocol = {
  privileged: undefined as CustomScheme[] | undefined,
  handlers: new Map<string, ProtocolHandler>(),
  registerSchemesAsPrivileged(schemes: CustomScheme[]): void {
    calls.push('protocol.registerSchemesAsPrivileged');
    if (app.ready) throw new Error('protocol.registerSchemesAsPrivileged should be called before app is ready');
    protocol.privileged = schemes;
  },
  handle(scheme: string, handler: ProtocolHandler): void {
    calls.push(`protocol.handle ${scheme}`);
    if (!app.ready) throw new Error('protocol.handle before the app is ready');
    protocol.handlers.set(scheme, handler);
  },
  unhandle(scheme: string): void {
    protocol.handlers.delete(scheme);
  },
};

// ------------------------------------------------------------------------------------------ app

class FakeApp extends EventEmitter {
  ready = false;
  isPackaged = false;
  /** Chromium's own parse of the command line (`app.commandLine`): the test puts switches here. */
  readonly commandLine = {
    switches: new Set<string>(),
    hasSwitch(name: string): boolean {
      return this.switches.has(name);
    },
  };
  name = 'mdl-kiosk';
  lockResult = true;
  lockRequested = false;
  relaunched = 0;
  exitCode: number | undefined;
  quitRequests = 0;
  loginItemSettings: Settings[] = [];
  readonly paths = new Map<string, string>([
    ['userData', '/fake/userData'],
    ['logs', '/fake/logs'],
    ['temp', '/fake/temp'],
    ['exe', '/fake/install/mdl-kiosk'],
  ]);
  private readyResolve: (() => void) | undefined;
  private readyPromise: Promise<void> = this.freshReady();
  private freshReady(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.readyResolve = resolve;
    });
  }
  getPath(name: string): string {
    const path = this.paths.get(name);
    if (path === undefined) throw new Error(`Failed to get '${name}' path`);
    return path;
  }
  setPath(name: string, path: string): void {
    calls.push(`app.setPath ${name}`);
    this.paths.set(name, path);
  }
  getVersion(): string {
    return '0.1.0-test';
  }
  /** The data folder each lock was taken in: like Electron, the lock lives in the current userData. */
  lockDirs: string[] = [];
  hardwareAccelerationDisabled = false;
  disableHardwareAcceleration(): void {
    calls.push('app.disableHardwareAcceleration');
    if (this.ready) throw new Error('app.disableHardwareAcceleration() can only be called before app is ready');
    this.hardwareAccelerationDisabled = true;
  }
  requestSingleInstanceLock(): boolean {
    calls.push('app.requestSingleInstanceLock');
    this.lockRequested = true;
    this.lockDirs.push(this.getPath('userData'));
    return this.lockResult;
  }
  whenReady(): Promise<void> {
    return this.readyPromise;
  }
  isReady(): boolean {
    return this.ready;
  }
  /** The test says when the app becomes ready. */
  becomeReady(): void {
    this.ready = true;
    this.emit('ready');
    this.readyResolve?.();
  }
  relaunch(): void {
    calls.push('app.relaunch');
    this.relaunched++;
  }
  exit(code = 0): void {
    calls.push(`app.exit ${code}`);
    this.exitCode = code;
  }
  /** Like Electron: `before-quit` may be prevented; otherwise windows close and `will-quit` / `quit` follow. */
  quit(): void {
    calls.push('app.quit');
    this.quitRequests++;
    const event = fakeEvent();
    this.emit('before-quit', event);
    if (event.defaultPrevented) return;
    for (const w of BrowserWindow.getAllWindows()) {
      if (!w.close()) return;
    }
    const willQuit = fakeEvent();
    this.emit('will-quit', willQuit);
    if (willQuit.defaultPrevented) return;
    this.emit('quit', fakeEvent(), 0);
    this.exitCode ??= 0;
  }
  setLoginItemSettings(settings: Settings): void {
    calls.push('app.setLoginItemSettings');
    this.loginItemSettings.push(settings);
  }
  reset(): void {
    this.removeAllListeners();
    this.ready = false;
    this.isPackaged = false;
    this.commandLine.switches.clear();
    this.lockResult = true;
    this.lockRequested = false;
    this.lockDirs = [];
    this.hardwareAccelerationDisabled = false;
    this.relaunched = 0;
    this.exitCode = undefined;
    this.quitRequests = 0;
    this.loginItemSettings = [];
    this.paths.set('userData', '/fake/userData');
    this.paths.set('logs', '/fake/logs');
    this.paths.set('exe', '/fake/install/mdl-kiosk');
    this.readyPromise = this.freshReady();
  }
}

export const app = new FakeApp();

// ------------------------------------------------------------------------------------------ the rest

export const powerSaveBlocker = {
  nextId: 1,
  active: new Map<number, string>(),
  start(type: 'prevent-app-suspension' | 'prevent-display-sleep'): number {
    calls.push(`powerSaveBlocker.start ${type}`);
    const id = powerSaveBlocker.nextId++;
    powerSaveBlocker.active.set(id, type);
    return id;
  },
  stop(id: number): boolean {
    calls.push('powerSaveBlocker.stop');
    return powerSaveBlocker.active.delete(id);
  },
  isStarted(id: number): boolean {
    return powerSaveBlocker.active.has(id);
  },
};

export const Menu = {
  applicationMenu: 'default' as unknown,
  setApplicationMenu(menu: unknown): void {
    calls.push('Menu.setApplicationMenu');
    Menu.applicationMenu = menu;
  },
};

export const dialog = {
  errors: [] as { title: string; content: string }[],
  showErrorBox(title: string, content: string): void {
    dialog.errors.push({ title, content });
  },
};

export const shell = {
  openExternal(): Promise<void> {
    throw new Error('the kiosk never calls shell.openExternal');
  },
};

/** Reversible "encryption" that still proves the plain text never reaches the disk as is. */
export const safeStorage = {
  available: true,
  backend: 'gnome_libsecret' as string,
  isEncryptionAvailable(): boolean {
    return safeStorage.available;
  },
  encryptString(text: string): Buffer {
    return Buffer.from(Buffer.from(text, 'utf8').map((b) => b ^ 0x5a));
  },
  decryptString(data: Buffer): string {
    return Buffer.from(data.map((b) => b ^ 0x5a)).toString('utf8');
  },
  getSelectedStorageBackend(): string {
    return safeStorage.backend;
  },
};

/** macOS/Windows media consent, as `systemPreferences` reports and asks for it. */
export const systemPreferences = {
  camera: 'not-determined' as 'not-determined' | 'granted' | 'denied' | 'restricted' | 'unknown',
  /** What the person answers at the system prompt. */
  answer: 'granted' as 'granted' | 'denied',
  asked: 0,
  getMediaAccessStatus(mediaType: 'microphone' | 'camera' | 'screen'): string {
    calls.push(`systemPreferences.getMediaAccessStatus ${mediaType}`);
    return systemPreferences.camera;
  },
  askForMediaAccess(mediaType: 'microphone' | 'camera'): Promise<boolean> {
    calls.push(`systemPreferences.askForMediaAccess ${mediaType}`);
    systemPreferences.asked++;
    systemPreferences.camera = systemPreferences.answer;
    return Promise.resolve(systemPreferences.answer === 'granted');
  },
};

// ------------------------------------------------------------------------------------------ utilityProcess

/** A forked utility process: records what the parent posts; a test emits `message` / `exit` on it. */
export class FakeUtilityProcess extends EventEmitter {
  static readonly forked: FakeUtilityProcess[] = [];
  readonly posted: unknown[] = [];
  readonly stdout = new PassThrough();
  readonly stderr = new PassThrough();
  pid: number | undefined = 4_242 + FakeUtilityProcess.forked.length;
  killed = false;
  constructor(
    readonly modulePath: string,
    readonly args: readonly string[],
    readonly options: { readonly stdio?: unknown; readonly serviceName?: string },
  ) {
    super();
  }
  postMessage(message: unknown): void {
    this.posted.push(structuredClone(message));
  }
  /** As Electron: the process ends, `exit` follows. */
  kill(): boolean {
    this.killed = true;
    this.pid = undefined;
    this.emit('exit', 9);
    return true;
  }
}

export const utilityProcess = {
  fork(
    modulePath: string,
    args: readonly string[] = [],
    options: { readonly stdio?: unknown; readonly serviceName?: string } = {},
  ): FakeUtilityProcess {
    calls.push(`utilityProcess.fork ${modulePath}`);
    const child = new FakeUtilityProcess(modulePath, args, options);
    FakeUtilityProcess.forked.push(child);
    return child;
  },
};

export function resetFakeElectron(): void {
  FakeUtilityProcess.forked.length = 0;
  calls.length = 0;
  systemPreferences.camera = 'not-determined';
  systemPreferences.answer = 'granted';
  systemPreferences.asked = 0;
  sessions.clear();
  BrowserWindow.instances.length = 0;
  ipcMain.handlers.clear();
  ipcMain.removeAllListeners();
  ipcRenderer.removeAllListeners();
  ipcRenderer.target = undefined;
  ipcRenderer.invoked.length = 0;
  contextBridge.exposed.clear();
  protocol.privileged = undefined;
  protocol.handlers.clear();
  app.reset();
  powerSaveBlocker.active.clear();
  Menu.applicationMenu = 'default';
  dialog.errors.length = 0;
  safeStorage.available = true;
  safeStorage.backend = 'gnome_libsecret';
}

export default {
  app,
  BrowserWindow,
  contextBridge,
  dialog,
  ipcMain,
  ipcRenderer,
  Menu,
  powerSaveBlocker,
  protocol,
  safeStorage,
  session,
  shell,
  utilityProcess,
};
