/**
 * The API key's binding to its backend holds on its own across a restart of the browser host (issue 27 item
 * 6): the kiosk runs once against backend A with the fleet key from `MDL_KIOSK_API_KEY_FILE`,
 * `MDL_KIOSK_API_KEY` or the config file's `backend.apiKeyFile`, stops, and someone edits `settings.json`
 * by hand — not through the settings screen, whose URL lock is tested in host-cli.test.ts — to point the
 * backend address at server B. At the next start the key must not follow the address: B gets no request at
 * all, the host says the kiosk needs staff and why (the key is only sent to A), and the key is in no output.
 * A's address comes from the config file, or only from settings.json (then the key is bound to the address
 * of its first start, remembered across starts).
 *
 * Through the real entry point (`src/host/cli.ts` as a process), which reads settings.json from its data
 * folder; A and B are recording servers on 127.0.0.1.
 */
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startRecordingServer, type RecordingServer } from '../../support/recording-server.js';

const FLEET_KEY = 'fleet-key-9b2e41c7d0';

const dirs: string[] = [];
const servers: RecordingServer[] = [];
const children = new Set<number>();
afterEach(async () => {
  // Only the hosts this file started, by pid (a failed assertion may leave one running).
  for (const pid of children) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  children.clear();
  for (const server of servers.splice(0)) await server.stop();
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'mdl-kiosk-host-binding-'));
  dirs.push(dir);
  return dir;
}

async function recordingServer(): Promise<RecordingServer> {
  const server = await startRecordingServer();
  servers.push(server);
  return server;
}

interface HostRun {
  readonly stdout: () => string;
  readonly stderr: () => string;
  /** Sends SIGTERM and resolves with the exit code. */
  stop(): Promise<number | null>;
}

/** `npm run host` as the systemd unit of docs/browser-host.md runs it, with this environment (and no other MDL_KIOSK_*). */
function startHost(dataDir: string, env: Record<string, string>): HostRun {
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('MDL_KIOSK_')));
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'src/host/cli.ts', '--data-dir', dataDir, '--nfc', 'none', '--log-level', 'trace'],
    {
      env: { ...inherited, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const pid = child.pid;
  if (pid === undefined) throw new Error('the host did not start');
  children.add(pid);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      children.delete(pid);
      resolve(code);
    }),
  );
  return {
    stdout: () => stdout,
    stderr: () => stderr,
    stop: () => {
      if (children.has(pid)) process.kill(pid, 'SIGTERM');
      return exited;
    },
  };
}

/** What a key source puts in the environment and the config file (with backend A's address, or none). */
interface KeySource {
  readonly name: string;
  /** How the host describes the source when it refuses. */
  readonly said: string;
  readonly env: (files: { keyFile: string; config: string }) => Record<string, string>;
  readonly backend: (keyFile: string) => Record<string, string>;
}

const SOURCES: readonly KeySource[] = [
  {
    name: 'MDL_KIOSK_API_KEY_FILE',
    said: 'the environment',
    env: ({ keyFile, config }) => ({ MDL_KIOSK_CONFIG: config, MDL_KIOSK_API_KEY_FILE: keyFile }),
    backend: () => ({}),
  },
  {
    name: 'MDL_KIOSK_API_KEY',
    said: 'the environment',
    env: ({ config }) => ({ MDL_KIOSK_CONFIG: config, MDL_KIOSK_API_KEY: FLEET_KEY }),
    backend: () => ({}),
  },
  {
    name: 'backend.apiKeyFile in the config file',
    said: 'the configuration file',
    env: ({ config }) => ({ MDL_KIOSK_CONFIG: config }),
    backend: (keyFile) => ({ apiKeyFile: keyFile }),
  },
];

/**
 * Where backend A's address is at the first start: in the config file (the systemd set-up of docs/browser-host.md), or
 * only in settings.json, written by hand too (the key's source gives none: the key is then bound to the
 * address of its first start, which must hold at the next one).
 */
const ADDRESSES = [
  { name: 'A in the config file', inConfig: true, boundTo: 'the backend configured with it' },
  {
    name: 'A only in settings.json',
    inConfig: false,
    boundTo: 'the backend it was first used with (it comes with no backend address of its own)',
  },
] as const;

const escaped = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** settings.json as someone edits it by hand: the backend address set, the staff record (if any) kept. */
async function editSettingsByHand(path: string, backendUrl: string): Promise<void> {
  const before = await readFile(path, 'utf8').catch(() => undefined);
  const staff: unknown = before === undefined ? {} : ((JSON.parse(before) as { staff?: unknown }).staff ?? {});
  await writeFile(path, JSON.stringify({ version: 1, settings: { backendUrl }, staff }), { mode: 0o600 });
}

describe('npm run host: settings.json edited by hand between starts does not move the API key to another backend', () => {
  for (const address of ADDRESSES) {
    for (const source of SOURCES) {
      it(`the key from ${source.name}, ${address.name}: the second start refuses backend B (config error naming the binding), B gets no request, the key is in no output`, async () => {
        const dir = await tempDir();
        const backendA = await recordingServer();
        const backendB = await recordingServer();
        const dataDir = join(dir, 'data');
        await mkdir(dataDir, { recursive: true });
        const settingsPath = join(dataDir, 'settings.json');
        const keyFile = join(dir, 'api-key');
        await writeFile(keyFile, `${FLEET_KEY}\n`, { mode: 0o600 });
        const config = join(dir, 'config.json');
        const backend = { ...source.backend(keyFile), ...(address.inConfig ? { baseUrl: backendA.url } : {}) };
        await writeFile(config, JSON.stringify({ backend, ble: { roles: 'none' } }));
        if (!address.inConfig) await editSettingsByHand(settingsPath, backendA.url);
        const env = source.env({ keyFile, config });

        // First start: the kiosk works against A with the fleet key.
        const first = startHost(dataDir, env);
        await expect.poll(() => backendA.seen.length, { timeout: 30_000 }).toBeGreaterThan(0);
        expect(backendA.seen[0]).toBe(`POST /api/sessions Bearer ${FLEET_KEY}`);
        expect(await first.stop()).toBe(0);

        await editSettingsByHand(settingsPath, backendB.url);
        const requestsToA = backendA.seen.length;

        // Second start. A kiosk that did use the key asks B for a session at once: give it the time to.
        const second = startHost(dataDir, env);
        await expect.poll(() => second.stderr(), { timeout: 30_000 }).toContain('"event":"host_started"');
        await new Promise((resolve) => setTimeout(resolve, 2_000));
        expect(backendB.seen, 'server B receives no request').toEqual([]);
        expect(backendA.seen.length, 'nor does A: the kiosk waits for staff').toBe(requestsToA);
        // Refused, naming which key goes to which backend.
        const originA = new URL(backendA.url).origin;
        const originB = new URL(backendB.url).origin;
        expect(second.stderr()).toMatch(
          new RegExp(
            `host: the kiosk needs staff: the API key from ${escaped(source.said)} is only sent to ${escaped(originA)}, ${escaped(address.boundTo)}, and the backend address is now ${escaped(originB)}`,
          ),
        );
        expect(await second.stop()).toBe(0);

        // The key in no output of either run (trace-level JSON logs included), nor in any file of the data
        // folder (settings.json, secrets.json where the binding of a key without an address is kept, and
        // the host's log files under logs/).
        const files = (await readdir(dataDir, { recursive: true, withFileTypes: true }))
          .filter((e) => e.isFile())
          .map((e) => join(e.parentPath, e.name));
        expect(files.some((f) => f.startsWith(join(dataDir, 'logs', 'mdl-kiosk.')))).toBe(true);
        const written = await Promise.all(files.map(async (f) => [f, await readFile(f, 'utf8')] as const));
        const outputs = [
          ['first stdout', first.stdout()],
          ['first stderr', first.stderr()],
          ['second stdout', second.stdout()],
          ['second stderr', second.stderr()],
          ...written,
        ] as const;
        for (const [where, text] of outputs) expect(text, where).not.toContain(FLEET_KEY);
        expect(files).toContain(join(dataDir, 'settings.json')); // the data folder was searched
        expect(first.stderr()).toContain('"event":"host_started"'); // the JSON log was written, and searched
      }, 90_000);
    }
  }
});
