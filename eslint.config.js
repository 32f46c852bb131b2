// Flat config: type-aware rules from typescript-eslint on every TypeScript file.
import js from '@eslint/js';
import path from 'node:path';
import tseslint from 'typescript-eslint';
import { roomFloors } from './tools/lint/room-floors.js';
import { osInOnePlace } from './tools/lint/os-in-one-place.js';
import { roomPackages } from './tools/lint/room-packages.js';

const PRODUCTION_PATTERNS = [
  {
    group: ['**/qa', '**/qa/**'],
    message: 'production code must not import QA-only code (src/qa/): inject it from a QA entry point instead',
  },
  { group: ['**/cli', '**/cli/**'], message: 'production code must not import the CLI (src/cli/)' },
];
const NO_ELECTRON = {
  group: ['electron', 'electron/*'],
  message:
    'Electron belongs to src/main and src/preload; this room is plain Node or browser code (give it a small injected interface instead)',
};
const NO_IPC_RENDERER = {
  name: 'electron',
  importNames: ['ipcRenderer'],
  message: 'only src/preload talks to ipcRenderer, and exposes named KioskApi functions (security checklist #20)',
};
const ELECTRON_LOCKDOWN_SYNTAX = [
  {
    selector: "MemberExpression[property.name='openExternal']",
    message: 'shell.openExternal is not used by the kiosk (security checklist #15)',
  },
  { selector: "Property[key.name='webviewTag'][value.value=true]", message: '<webview> stays off (security checklist #12)' },
  {
    selector: 'Property[key.name=/^nodeIntegration(InWorker|InSubFrames)?$/][value.value=true]',
    message: 'node integration stays off in every renderer (security checklist #2)',
  },
  { selector: "Property[key.name='contextIsolation'][value.value=false]", message: 'context isolation stays on (security checklist #3)' },
  { selector: "Property[key.name='sandbox'][value.value=false]", message: 'the renderer stays sandboxed (security checklist #4)' },
  { selector: "Property[key.name='webSecurity'][value.value=false]", message: 'web security stays on (security checklist #6)' },
  {
    selector: "Property[key.name='allowRunningInsecureContent'][value.value=true]",
    message: 'no insecure content (security checklist #8)',
  },
  { selector: "Property[key.name='bypassCSP'][value.value=true]", message: 'the app scheme does not bypass the CSP' },
];

// The floors of src/ (docs/ARCHITECTURE.md): what each room may import, by room or by single file. From the
// ground up: common (the contracts: IPC, views, wire messages) < platform (configuration, logging, time
// windows) < devices (the hardware adapters behind ports) < kiosk (the relay core, which sees the devices only
// through their ports) < service (the KioskApi owner and what both hosts share) < main | host (the Electron
// shell and the browser host, side by side). The screen (renderer) and the preload bridge stand on common
// alone. QA and the CLI stand above everything, and nothing of production imports them.
const PRODUCTION_ROOMS = ['common', 'platform', 'devices', 'kiosk', 'service', 'host', 'main', 'preload', 'renderer'];
const FLOORS = {
  common: [],
  platform: ['common'],
  devices: ['common', 'platform'],
  kiosk: ['common', 'platform', 'devices/ports.ts'],
  service: ['common', 'platform', 'devices', 'kiosk'],
  host: ['common', 'platform', 'devices', 'kiosk', 'service'],
  main: ['common', 'platform', 'devices', 'kiosk', 'service'],
  preload: ['common'],
  renderer: ['common'],
  qa: PRODUCTION_ROOMS,
  cli: [...PRODUCTION_ROOMS, 'qa'],
};
const FLOOR_REASONS = {
  kiosk: 'the relay core sees the devices only through their ports; the adapters are assembled in src/service',
  host: 'the two hosts stand side by side: what both need lives in src/service',
  main: 'the two hosts stand side by side: what both need lives in src/service',
  renderer: 'the screen runs in a sandboxed browser page and talks to the kiosk only through the KioskApi',
  preload: 'the bridge hands the KioskApi of src/common to the page, nothing else',
};

// The packages each room may not import (tools/lint/room-packages.js). The page and what it shares with Node
// (common) get nothing of Node: neither its built-ins nor a package that needs them; the relay core gets no
// device library (it has the ports). Electron is kept to its two rooms by no-restricted-imports below.
const NODE_ONLY_PACKAGES = [
  'pino*',
  'ws',
  'undici',
  'https-proxy-agent',
  'tar',
  'smartcard',
  '@stoprocent/*',
  'serialport',
  '@serialport/*',
];
const DEVICE_LIBRARIES = ['smartcard', '@stoprocent/*', 'serialport', '@serialport/*'];
const PAGE_WHY = 'it runs in the sandboxed page or is shared with it: no Node module may slip into the page';
const ROOM_PACKAGES = {
  common: { nodeBuiltins: false, deny: NODE_ONLY_PACKAGES, why: PAGE_WHY },
  renderer: {
    nodeBuiltins: false,
    deny: NODE_ONLY_PACKAGES,
    why: PAGE_WHY,
    except: { 'renderer/vite.config.ts': "the screen's build configuration: runs in Node when the page is built, never in it" },
  },
  kiosk: { deny: DEVICE_LIBRARIES, why: 'the relay core reaches the devices only through their ports; the adapters are in src/devices' },
};

export default tseslint.config(
  // test/support/*.cjs: plain CommonJS stand-ins that worker threads require as they are (no TypeScript project).
  { ignores: ['node_modules/**', 'dist/**', 'coverage/**', '.tmp/**', 'test/support/*.cjs'] },
  js.configs.recommended,
  ...tseslint.configs.strictTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true, allowBoolean: true }],
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unnecessary-condition': ['error', { allowConstantLoopConditions: true }],
      '@typescript-eslint/no-confusing-void-expression': ['error', { ignoreArrowShorthand: true }],
      'no-console': 'error',
    },
  },
  {
    files: ['src/**'],
    plugins: { kiosk: { rules: { 'room-floors': roomFloors, 'room-packages': roomPackages, 'os-in-one-place': osInOnePlace } } },
    rules: {
      'kiosk/room-floors': ['error', { src: path.join(import.meta.dirname, 'src'), rooms: FLOORS, why: FLOOR_REASONS }],
      'kiosk/room-packages': ['error', { src: path.join(import.meta.dirname, 'src'), rooms: ROOM_PACKAGES }],
    },
  },
  {
    // Which OS this is, only src/platform/os.ts tells (docs/ARCHITECTURE.md, *The OS in one place*): the
    // rest of src/ asks its capability record, so what differs per OS is read in one file.
    files: ['src/**'],
    ignores: ['src/platform/os.ts'],
    rules: { 'kiosk/os-in-one-place': 'error' },
  },
  {
    // The cut line between the product and QA (docs/ARCHITECTURE.md, *The QA cut line*): everything QA-only lives in src/qa/ (simulators,
    // virtual devices, radio link, QA wiring) and the production package leaves that folder out, so no
    // production room may import it, nor the CLI (a developer tool, not shipped). Electron stays in the two
    // rooms that run in it (src/main, src/preload): the rest is plain Node or browser code, shared with the
    // browser host and tested without Electron.
    files: ['src/common/**', 'src/platform/**', 'src/kiosk/**', 'src/devices/**', 'src/service/**', 'src/host/**', 'src/renderer/**'],
    rules: { 'no-restricted-imports': ['error', { paths: [NO_IPC_RENDERER], patterns: [...PRODUCTION_PATTERNS, NO_ELECTRON] }] },
  },
  {
    files: ['src/main/**', 'src/preload/**'],
    rules: {
      'no-restricted-imports': ['error', { paths: [NO_IPC_RENDERER], patterns: PRODUCTION_PATTERNS }],
      // Electron's security checklist (electronjs.org/docs/latest/tutorial/security): none of these may appear.
      'no-restricted-syntax': ['error', ...ELECTRON_LOCKDOWN_SYNTAX],
    },
  },
  {
    files: ['src/preload/**'],
    rules: { 'no-restricted-imports': ['error', { patterns: PRODUCTION_PATTERNS }] },
  },
  {
    // The CLI reaches QA through the QA room's one door (src/qa/index.ts), as the demo and the Electron QA
    // flavour do, so what QA offers them is listed in one place.
    files: ['src/cli/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [NO_IPC_RENDERER],
          patterns: [{ group: ['**/qa/*/**', '**/qa/*.js', '!**/qa/index.js'], message: 'import QA code through src/qa/index.ts' }],
        },
      ],
    },
  },
  {
    // QA code may drive Electron (the QA flavour's entry) but never the renderer's IPC.
    files: ['src/qa/**'],
    rules: { 'no-restricted-imports': ['error', { paths: [NO_IPC_RENDERER] }] },
  },
  {
    // The simulators are the other side of the wire: they never import the kiosk (docs/ARCHITECTURE.md, *The QA cut line*).
    files: ['src/qa/sim/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [NO_IPC_RENDERER],
          patterns: [{ group: ['**/kiosk/**'], message: 'the simulators never import the kiosk (they are the other side of the wire)' }],
        },
      ],
    },
  },
  {
    files: ['src/cli/**', 'test/bench/**', 'tools/pcscd/cli.ts', 'tools/btvirt/cli.ts'],
    rules: { 'no-console': 'off' },
  },
  {
    files: ['**/*.js'],
    extends: [tseslint.configs.disableTypeChecked],
  },
);
