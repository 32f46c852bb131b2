import { execFile, fork } from 'node:child_process';
import { readFile, mkdtemp, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import {
  AppBuildError,
  buildApp,
  checkPreloadInputs,
  checkProductionInputs,
  findRelativeReads,
  packageOf,
  planRelativeRead,
  rewriteCreateRequire,
} from '../../../tools/build/app.js';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const run = promisify(execFile);

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});
async function tempDir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'mdl-kiosk-build-test-'));
  dirs.push(d);
  return d;
}
const src = (path: string): string => JSON.stringify(join(REPO, path));

describe('createRequire calls to inlined packages become plain requires', () => {
  const external = (s: string): boolean => ['smartcard', '@stoprocent/noble'].includes(packageOf(s));

  it('rewrites a named handle and an inline call for an inlined package, not for a shipped one', () => {
    const source = [
      'const requireCjs = createRequire(import.meta.url);',
      "const cborx = requireCjs('cbor-x');",
      "const noble = requireCjs('@stoprocent/noble/lib/noble');",
      "const codec = createRequire(import.meta.url)('@cornerstonejs/codec-openjpeg/wasmjs');",
      "const pcsc = createRequire(import.meta.url)('smartcard');",
    ].join('\n');
    const out = rewriteCreateRequire(source, external);
    expect(out).toContain('const cborx = require("cbor-x");');
    expect(out).toContain("const noble = requireCjs('@stoprocent/noble/lib/noble');");
    expect(out).toContain('const codec = require("@cornerstonejs/codec-openjpeg/wasmjs");');
    expect(out).toContain("const pcsc = createRequire(import.meta.url)('smartcard');");
  });

  it('leaves a local variable named require alone (esbuild does not follow it) and other calls untouched', () => {
    const source = "function f() { const require = createRequire(import.meta.url); return require('smartcard'); }\nobj.requireCjs('x');";
    expect(rewriteCreateRequire(source, external)).toBe(source);
  });

  it('names packages with and without scope', () => {
    expect(packageOf('@stoprocent/noble/lib/noble')).toBe('@stoprocent/noble');
    expect(packageOf('ws')).toBe('ws');
    expect(packageOf('zod/v4/core')).toBe('zod');
  });
});

describe('bundle contracts', () => {
  it('the preload may carry only itself, src/preload/** and the import-free IPC files, and import only electron', () => {
    const good = {
      'src/preload/index.ts': ['electron', 'src/common/ipc-contract.ts'],
      'src/common/ipc-contract.ts': [],
      'src/common/ipc-reply.ts': [],
    };
    expect(checkPreloadInputs('src/preload/index.ts', good, ['electron'])).toEqual([]);
    const bad = { ...good, 'src/common/kiosk-api.ts': ['zod'], 'src/common/ipc-reply.ts': ['src/common/kiosk-api.ts'] };
    expect(checkPreloadInputs('src/preload/index.ts', bad, ['electron', 'zod']).sort()).toEqual([
      'src/common/ipc-reply.ts must stay import-free (the preload carries it) but imports src/common/kiosk-api.ts',
      "the preload bundle imports zod at run time: a sandboxed preload can require only 'electron'",
      'the preload bundle pulls in src/common/kiosk-api.ts: a sandboxed preload may carry only src/preload/** and src/common/ipc-contract.ts, src/common/ipc-reply.ts',
    ]);
  });

  it('the production main inlines neither QA code nor any package', () => {
    expect(checkProductionInputs(['src/main/index.ts', 'src/service/kiosk-service.ts'])).toEqual([]);
    expect(
      checkProductionInputs(['src/qa/index.ts', 'node_modules/cbor-x/dist/node.cjs', 'node_modules/a/node_modules/@s/b/x.js']),
    ).toEqual([
      'the production bundle pulls in QA code: src/qa/index.ts',
      'the production bundle inlines the package cbor-x (node_modules/cbor-x/dist/node.cjs): list it in "dependencies" so node_modules ships it, or stop importing it from production code',
      'the production bundle inlines the package @s/b (node_modules/a/node_modules/@s/b/x.js): list it in "dependencies" so node_modules ships it, or stop importing it from production code',
    ]);
  });

  it('finds reads relative to a module’s own URL and plans them for the bundle', () => {
    const reads = findRelativeReads(
      join(REPO, 'src/qa/phone-page/server.ts'),
      'readFile(new URL(`./assets/${asset.file}`, import.meta.url)); new URL("../../package.json", import.meta.url); new URL(x, base)',
    );
    expect(reads.map((r) => r.path)).toEqual(['./assets/', '../../package.json']);
    const out = join(REPO, 'dist', 'app');
    const [assets] = reads;
    if (assets === undefined) throw new Error('no read found');
    expect(planRelativeRead(assets, out)).toMatchObject({
      kind: 'copy',
      from: join(REPO, 'src/qa/phone-page/assets'),
      to: join(out, 'assets'),
    });
    expect(planRelativeRead({ source: join(REPO, 'src/service/kiosk-service.ts'), path: '../../package.json' }, out)).toMatchObject({
      kind: 'bundle-relative',
      target: join(REPO, 'package.json'),
    });
    expect(planRelativeRead({ source: join(REPO, 'src/main/window.ts'), path: './preload.cjs' }, out)).toMatchObject({
      kind: 'bundle-relative',
      target: join(out, 'preload.cjs'),
    });
  });
});

describe('buildApp on stand-in entries', () => {
  async function entries(files: Record<string, string>): Promise<{ dir: string; paths: Record<string, string> }> {
    const dir = await tempDir();
    const paths: Record<string, string> = {};
    for (const [name, text] of Object.entries(files)) {
      paths[name] = join(dir, name);
      await mkdir(dirname(paths[name]), { recursive: true });
      await writeFile(paths[name], text);
    }
    return { dir, paths };
  }

  it('fails when the preload pulls in more than the IPC contract, and when production main pulls in QA code', async () => {
    const { dir, paths } = await entries({
      'preload.ts': `import { contextBridge } from 'electron';\nimport { KIOSK_INTENTS } from ${src('src/common/kiosk-api.js')};\ncontextBridge.exposeInMainWorld('k', KIOSK_INTENTS);\n`,
      'main.ts': `import { app } from 'electron';\nimport { defaultQaPkiDir } from ${src('src/qa/index.js')};\nvoid app.whenReady().then(() => defaultQaPkiDir());\n`,
    });
    const error = await buildApp({
      root: REPO,
      outDir: join(dir, 'out'),
      entries: { main: paths['main.ts'], preload: paths['preload.ts'] },
      only: ['main', 'preload'],
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AppBuildError);
    const message = (error as Error).message;
    expect(message).toContain('the preload bundle pulls in src/common/kiosk-api.ts');
    expect(message).toContain('the production bundle pulls in QA code: src/qa/index.ts');
  });

  it('fails on a preload that needs a Node built-in (the sandbox has none)', async () => {
    const { dir, paths } = await entries({ 'preload.ts': "import { readFileSync } from 'node:fs';\nexport const x = readFileSync;\n" });
    await expect(
      buildApp({ root: REPO, outDir: join(dir, 'out'), entries: { preload: paths['preload.ts'] }, only: ['preload'] }),
    ).rejects.toThrow(/preload bundle/);
  });

  it('builds a CommonJS preload that requires only electron', async () => {
    const { dir, paths } = await entries({
      'preload.ts': `import { contextBridge } from 'electron';\nimport { IPC_INTENT_NAMES } from ${src('src/common/ipc-contract.js')};\ncontextBridge.exposeInMainWorld('k', IPC_INTENT_NAMES);\n`,
    });
    const result = await buildApp({ root: REPO, outDir: join(dir, 'out'), entries: { preload: paths['preload.ts'] }, only: ['preload'] });
    const code = await readFile(join(dir, 'out', 'preload.cjs'), 'utf8');
    expect(code).toContain('require("electron")');
    expect([...code.matchAll(/require\("([^"]+)"\)/g)].map((m) => m[1])).toEqual(['electron']);
    expect(result.outputs).toEqual([{ file: expect.stringMatching(/out\/preload\.cjs$/) as string, bytes: Buffer.byteLength(code) }]);
  });

  it('inlines a simulator library loaded through createRequire, so the QA bundle runs with no node_modules at all', async () => {
    const { dir, paths } = await entries({
      'qa.ts': `import { cborDecode, cborEncode } from ${src('src/qa/sim/iso/cbor.js')};\nprocess.stdout.write(JSON.stringify(cborDecode(cborEncode([1, 'x', [true]]))));\n`,
    });
    // Outside the repository: no node_modules on the way up, so cbor-x must be inside the bundle.
    const out = join(dir, 'out');
    await buildApp({ root: REPO, outDir: out, entries: { qa: paths['qa.ts'] }, only: ['qa'] });
    const code = await readFile(join(out, 'main-qa.js'), 'utf8');
    expect(code).not.toMatch(/requireCjs\("cbor-x"\)|__require\("cbor-x"\)/);
    const { stdout } = await run(process.execPath, [join(out, 'main-qa.js')], { cwd: dir });
    expect(JSON.parse(stdout)).toEqual([1, 'x', [true]]);
  });

  it('builds the radio process (radio.js): our sources only, noble and bleno left to node_modules, and it serves over fork', async () => {
    // Inside the repository, as in the package: the shipped packages resolve from node_modules on the way up.
    const out = await mkdtemp(join(REPO, 'node_modules', '.mdl-radio-build-'));
    dirs.push(out);
    const result = await buildApp({ root: REPO, outDir: out, only: ['radio'] });
    expect(result.outputs).toEqual([{ file: expect.stringMatching(/\/radio\.js$/) as string, bytes: expect.any(Number) as number }]);
    const code = await readFile(join(out, 'radio.js'), 'utf8');
    expect(code).not.toContain('src/qa/');
    // Run it as the kiosk does (an IPC channel, structured clone): asked for no roles, it answers ready.
    const child = fork(join(out, 'radio.js'), [], {
      cwd: REPO,
      serialization: 'advanced',
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      timeout: 15_000,
    });
    const ready = new Promise<unknown>((resolveReady) => child.once('message', resolveReady));
    child.send({ t: 'init', init: { central: false, peripheral: false } });
    expect(await ready).toEqual({ t: 'ready', problems: [] });
    const exited = new Promise((resolveExit) => child.once('exit', resolveExit));
    child.send({ t: 'shutdown' });
    expect(await exited).toBe(0);
  });

  it('builds the voice process (voice.js): our sources only, the engine left to node_modules, and it speaks over fork', {
    timeout: 60_000,
  }, async () => {
    const out = await mkdtemp(join(REPO, 'node_modules', '.mdl-voice-build-'));
    dirs.push(out);
    const result = await buildApp({ root: REPO, outDir: out, only: ['voice'] });
    expect(result.outputs).toEqual([{ file: expect.stringMatching(/\/voice\.js$/) as string, bytes: expect.any(Number) as number }]);
    const code = await readFile(join(out, 'voice.js'), 'utf8');
    // The engine (24 MB of data beside its glue) is imported at run time, never inlined.
    expect(code).toMatch(/import\("@echogarden\/espeak-ng-emscripten"\)/);
    expect(code.length).toBeLessThan(200_000);
    const child = fork(join(out, 'voice.js'), [], { cwd: REPO, serialization: 'advanced', stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
    const messages: { t: string; pcm?: Uint8Array }[] = [];
    const audio = new Promise<Uint8Array | undefined>((resolveAudio) =>
      child.on('message', (m: { t: string; pcm?: Uint8Array }) => {
        messages.push(m);
        if (m.t === 'ready') child.send({ t: 'speak', id: 1, text: 'Hola.', voice: 'es', wpm: 175 });
        if (m.t === 'audio' || m.t === 'error' || m.t === 'failed') resolveAudio(m.pcm);
      }),
    );
    expect((await audio)?.byteLength ?? 0, JSON.stringify(messages.map((m) => m.t))).toBeGreaterThan(5_000);
    const exited = new Promise((resolveExit) => child.once('exit', resolveExit));
    child.send({ t: 'shutdown' });
    expect(await exited).toBe(0);
  });

  it('refuses to start without an entry file', async () => {
    await expect(
      buildApp({ root: REPO, outDir: join(await tempDir(), 'out'), entries: { main: '/nonexistent/main.ts' }, only: ['main'] }),
    ).rejects.toThrow('the main entry /nonexistent/main.ts does not exist');
  });
});
