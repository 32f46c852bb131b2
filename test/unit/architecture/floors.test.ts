/**
 * The floors of src/ (docs/ARCHITECTURE.md) are kept by lint: each room imports only the rooms below it.
 * This plants an import in a file of each room, for every pair of rooms, and asks the project's
 * eslint.config.js what it makes of it: the refused pairs must fail with the floors rule, the allowed ones
 * must pass. The floors are written down again here, on their own, so loosening the lint table fails a test.
 */
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';
import { beforeAll, describe, expect, it } from 'vitest';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const RULE = 'kiosk/room-floors';

// From the ground up; a room may import the rooms listed for it, and nothing else.
const ORDER = ['common', 'platform', 'devices', 'kiosk', 'service'] as const;
const BELOW_HOSTS = [...ORDER];
const PRODUCTION = [...ORDER, 'host', 'main', 'preload', 'renderer'] as const;
const ALLOWED: Record<string, readonly string[]> = {
  common: [],
  platform: ['common'],
  devices: ['common', 'platform'],
  // The relay core sees the devices through their ports only (checked on its own below).
  kiosk: ['common', 'platform'],
  service: ['common', 'platform', 'devices', 'kiosk'],
  host: BELOW_HOSTS,
  main: BELOW_HOSTS,
  preload: ['common'],
  renderer: ['common'],
  qa: PRODUCTION,
  cli: [...PRODUCTION, 'qa'],
};
const ROOMS = Object.keys(ALLOWED);

let eslint: ESLint;
beforeAll(() => {
  // The project's own config, with type-aware parsing off so files that do not exist can be linted (the
  // floors rule reads only the import's text and the file's place).
  eslint = new ESLint({
    cwd: REPO,
    overrideConfig: [
      {
        files: ['**/*.ts', '**/*.tsx'],
        ...tseslint.configs.disableTypeChecked,
        languageOptions: { parserOptions: { projectService: false, project: null } },
      },
    ],
  });
});

async function floorMessages(file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: join(REPO, file) });
  const messages = result?.messages ?? [];
  const parseErrors = messages.filter((m) => m.ruleId === null);
  expect(parseErrors).toEqual([]);
  return messages.filter((m) => m.ruleId === RULE).map((m) => m.message);
}

const importOf = (spec: string): string => `import { planted } from '${spec}';\nexport const used = planted;\n`;

const PAIRS = ROOMS.flatMap((from) => ROOMS.filter((to) => to !== from).map((to): [string, string] => [from, to]));
const allowed = ([from, to]: [string, string]): boolean => ALLOWED[from]?.includes(to) ?? false;

describe('the floors of src/: a planted import from one room into another', () => {
  it.each(PAIRS.filter((p) => !allowed(p)))('src/%s → src/%s is refused', async (from, to) => {
    // Planted one folder deep too, so the rule resolves the path rather than matching its text.
    const near = await floorMessages(`src/${from}/planted-floor.ts`, importOf(`../${to}/planted.js`));
    const deep = await floorMessages(`src/${from}/inner/planted-floor.ts`, importOf(`../../${to}/inner/planted.js`));
    expect(near).toEqual([expect.stringContaining(`src/${from} may not import src/${to}/planted`)]);
    expect(deep).toEqual([expect.stringContaining(`src/${from} may not import src/${to}/inner/planted`)]);
  });

  it.each(PAIRS.filter(allowed))('src/%s → src/%s is allowed', async (from, to) => {
    expect(await floorMessages(`src/${from}/planted-floor.ts`, importOf(`../${to}/planted.js`))).toEqual([]);
  });

  it('a room imports its own files freely', async () => {
    expect(await floorMessages('src/renderer/screens/planted.tsx', importOf('../api/connect.js'))).toEqual([]);
    expect(await floorMessages('src/kiosk/verification/planted.ts', importOf('../relay-link.js'))).toEqual([]);
  });
});

describe('the floors: the cases the architecture issue named', () => {
  it('a screen file cannot import the session client (Node http)', async () => {
    expect(await floorMessages('src/renderer/screens/ReadyScreen.tsx', importOf('../../kiosk/session-client.js'))).toEqual([
      expect.stringContaining('src/renderer may not import src/kiosk/session-client'),
    ]);
  });

  it('kiosk.ts cannot import the PC/SC adapter nor KioskService, but does see the device ports', async () => {
    expect(await floorMessages('src/kiosk/kiosk.ts', importOf('../devices/pcsc/pcsc-nfc-reader.js'))).toEqual([
      expect.stringContaining('src/kiosk may not import src/devices/pcsc/pcsc-nfc-reader'),
    ]);
    expect(await floorMessages('src/kiosk/kiosk.ts', importOf('../service/kiosk-service.js'))).toEqual([
      expect.stringContaining('src/kiosk may not import src/service/kiosk-service'),
    ]);
    expect(
      await floorMessages(
        'src/kiosk/verification/planted.ts',
        "import type { DevicePorts } from '../../devices/ports.js';\nexport type P = DevicePorts;\n",
      ),
    ).toEqual([]);
  });

  it('main cannot import the browser host, nor the host the Electron shell', async () => {
    expect(await floorMessages('src/main/app.ts', importOf('../host/server.js'))).toEqual([
      expect.stringContaining('src/main may not import src/host/server'),
    ]);
    expect(await floorMessages('src/main/app-scheme.ts', importOf('../host/static-files.js'))).toEqual([
      expect.stringContaining('src/main may not import src/host/static-files'),
    ]);
    expect(await floorMessages('src/host/server.ts', importOf('../main/app.js'))).toEqual([
      expect.stringContaining('src/host may not import src/main/app'),
    ]);
  });

  it('the device adapters cannot reach up to the kiosk (its config and log are in platform)', async () => {
    expect(await floorMessages('src/devices/pcsc/planted-composition.ts', importOf('../../kiosk/kiosk.js'))).toEqual([
      expect.stringContaining('src/devices may not import src/kiosk/kiosk'),
    ]);
    expect(
      await floorMessages('src/devices/pcsc/planted.ts', "import type { Logger } from '../../platform/log.js';\nexport type L = Logger;\n"),
    ).toEqual([]);
  });

  it('no production room imports QA or the CLI', async () => {
    for (const room of PRODUCTION) {
      expect(await floorMessages(`src/${room}/planted-floor.ts`, importOf('../qa/index.js'))).toEqual([
        expect.stringContaining(`src/${room} may not import src/qa/index`),
      ]);
      expect(await floorMessages(`src/${room}/planted-floor.ts`, importOf('../cli/relay.js'))).toEqual([
        expect.stringContaining(`src/${room} may not import src/cli/relay`),
      ]);
    }
  });
});

describe('the floors: every way of naming a module is checked', () => {
  it.each([
    ['import type', "import type { SessionClient } from '../kiosk/session-client.js';\nexport type C = SessionClient;\n"],
    ['export from', "export { SessionClient } from '../kiosk/session-client.js';\n"],
    ['export * from', "export * from '../kiosk/session-client.js';\n"],
    ['dynamic import()', "export const load = () => import('../kiosk/session-client.js');\n"],
    ['import() type', "export type C = import('../kiosk/session-client.js').SessionClient;\n"],
    ['a bare side-effect import', "import '../kiosk/session-client.js';\n"],
  ])('%s', async (_how, code) => {
    expect(await floorMessages('src/renderer/planted-floor.ts', code)).toEqual([
      expect.stringContaining('src/renderer may not import src/kiosk/session-client'),
    ]);
  });

  it('an import that leaves src/ is refused to production rooms', async () => {
    expect(await floorMessages('src/service/planted-floor.ts', importOf('../../test/support/harness.js'))).toEqual([
      expect.stringContaining('src/service imports only from src/'),
    ]);
  });

  it('a new folder under src/ must be given its floor first', async () => {
    const [result] = await eslint.lintText('export const x = 1;\n', { filePath: join(REPO, 'src/gadgets/planted.ts') });
    expect((result?.messages ?? []).map((m) => `${m.ruleId ?? 'parse'}: ${m.message}`)).toEqual([
      `${RULE}: src/gadgets is not a room of the floors table in eslint.config.js: add it there`,
    ]);
  });
});

const PACKAGES_RULE = 'kiosk/room-packages';

/** What one rule says of a planted file (a parse error fails the test). */
async function ruleMessages(rule: string, file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: join(REPO, file) });
  const messages = result?.messages ?? [];
  expect(messages.filter((m) => m.ruleId === null)).toEqual([]);
  return messages.filter((m) => m.ruleId === rule).map((m) => m.message);
}

const packageMessages = (file: string, code: string): Promise<string[]> => ruleMessages(PACKAGES_RULE, file, code);

describe('packages and Node built-ins per room: a planted import', () => {
  const NODE_ONLY = [
    'node:fs',
    'fs',
    'fs/promises',
    'node:crypto',
    'pino',
    'pino-roll',
    'ws',
    'undici',
    'https-proxy-agent',
    'smartcard',
    '@stoprocent/noble',
    '@stoprocent/bleno/lib/bleno',
  ];

  it.each(NODE_ONLY.flatMap((spec) => ['renderer', 'common'].map((room): [string, string] => [room, spec])))(
    'src/%s cannot import %s',
    async (room, spec) => {
      expect(await packageMessages(`src/${room}/inner/planted-package.ts`, importOf(spec))).toEqual([
        expect.stringContaining(`src/${room} may not import`),
      ]);
    },
  );

  it('the page and common keep their own packages', async () => {
    for (const spec of ['react', 'react-i18next', 'zod', 'i18next', 'zxing-wasm/reader']) {
      expect(await packageMessages('src/renderer/planted-package.tsx', importOf(spec))).toEqual([]);
    }
    expect(await packageMessages('src/common/planted-package.ts', importOf('zod'))).toEqual([]);
  });

  it("the screen's build configuration is exempt, with its reason in the table", async () => {
    expect(await packageMessages('src/renderer/vite.config.ts', importOf('node:url'))).toEqual([]);
    expect(await packageMessages('src/renderer/vite-config-copy.ts', importOf('node:url'))).toEqual([
      expect.stringContaining("Node's built-in 'node:url'"),
    ]);
  });

  it('the relay core imports no device library, but may use Node and its own packages', async () => {
    for (const spec of ['smartcard', '@stoprocent/noble', '@stoprocent/bleno', 'serialport']) {
      expect(await packageMessages('src/kiosk/verification/planted-package.ts', importOf(spec))).toEqual([
        expect.stringContaining('through their ports'),
      ]);
    }
    expect(await packageMessages('src/kiosk/planted-package.ts', importOf('undici'))).toEqual([]);
    expect(await packageMessages('src/kiosk/planted-package.ts', importOf('node:net'))).toEqual([]);
    expect(await packageMessages('src/devices/ble/planted-package.ts', importOf('@stoprocent/noble'))).toEqual([]);
  });

  it('every way of naming a package is checked', async () => {
    for (const code of [
      "import type { Server } from 'node:http';\nexport type S = Server;\n",
      "export { createServer } from 'node:http';\n",
      "export const load = () => import('node:http');\n",
      "export type S = import('node:http').Server;\n",
      "import 'node:http';\n",
    ]) {
      expect(await packageMessages('src/renderer/planted-package.ts', code)).toEqual([
        expect.stringContaining("Node's built-in 'node:http'"),
      ]);
    }
  });

  it('require() of a package is checked like an import', async () => {
    const code =
      "import { createRequire } from 'node:module';\nexport const noble: unknown = createRequire(import.meta.url)('@stoprocent/noble');\n";
    expect(await packageMessages('src/kiosk/planted-package.ts', code)).toEqual([
      expect.stringContaining("may not import '@stoprocent/noble'"),
    ]);
    expect(await packageMessages('src/devices/ble/planted-package.ts', code)).toEqual([]);
  });
});

describe('no way around the rooms', () => {
  it('a file directly in src/ belongs to no room and is refused', async () => {
    expect(await packageMessages('src/planted.ts', 'export const x = 1;\n')).toEqual([
      expect.stringContaining('sits directly in src/, in no room'),
    ]);
  });

  it.each([
    [
      'createRequire(…)(…)',
      "import { createRequire } from 'node:module';\nexport const s: unknown = createRequire(import.meta.url)('../service/kiosk-service.js');\n",
    ],
    [
      'a require alias',
      "import { createRequire } from 'node:module';\nconst requireCjs = createRequire(import.meta.url);\nexport const s: unknown = requireCjs('./kiosk-service.js');\n",
    ],
  ])('loading a module of src/ with %s is refused in every room', async (_how, code) => {
    for (const room of ROOMS) {
      // (common and renderer are also told that node:module is not theirs)
      expect(await packageMessages(`src/${room}/planted-require.ts`, code)).toContainEqual(expect.stringContaining('goes past the floors'));
    }
  });
});

const OS_RULE = 'kiosk/os-in-one-place';

const osMessages = (file: string, code: string): Promise<string[]> => ruleMessages(OS_RULE, file, code);

describe('the OS is told in one place: a planted read of the platform', () => {
  it.each([
    ['process.platform', "export const windows = process.platform === 'win32';\n"],
    ["process['platform']", "export const windows = process['platform'] === 'win32';\n"],
    ['os.platform() of node:os', "import os from 'node:os';\nexport const windows = os.platform() === 'win32';\n"],
    ['os.type() of a namespace import', "import * as os from 'os';\nexport const windows = os.type() === 'Windows_NT';\n"],
    ['platform imported by name', "import { platform } from 'node:os';\nexport const windows = platform() === 'win32';\n"],
    ['type imported by name', "import { type as osType } from 'node:os';\nexport const windows = osType() === 'Windows_NT';\n"],
  ])('%s is refused in every room but src/platform/os.ts', async (_how, code) => {
    for (const room of ROOMS) {
      expect(await osMessages(`src/${room}/inner/planted-os.ts`, code)).toEqual([expect.stringContaining('src/platform/os.ts')]);
    }
    expect(await osMessages('src/platform/os.ts', code)).toEqual([]);
  });

  it('the rest of node:os and of process stay open', async () => {
    const code =
      "import { arch, homedir, tmpdir } from 'node:os';\nexport const where = [arch(), homedir(), tmpdir(), process.arch, process.env.HOME];\n";
    expect(await osMessages('src/service/planted-os.ts', code)).toEqual([]);
  });
});
