/**
 * The log files: JSON lines in rotating files (size and day), a private folder and private files, both
 * retention rules (age at open, file count at rotation), and redaction end to end — a kiosk service that
 * saves an API key in its settings and runs a verification that discloses a name, a document number and a
 * portrait leaves none of them, nor a session's client secret, in any file of the log folder.
 */
import { mkdir, mkdtemp, readdir, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { dispatchIntent } from '../../../src/common/kiosk-api.js';
import { createLogger } from '../../../src/platform/log.js';
import { LOG_FILE_NAME, openLogFiles, removeExpiredLogFiles, type LogFiles } from '../../../src/service/log-files.js';
import { hashPin } from '../../../src/service/staff-pin.js';
import { API_KEY, startServiceFixture, TEST_SCRYPT, type ServiceFixture } from './service-fixture.js';

const DAY = 24 * 60 * 60 * 1_000;
const dirs: string[] = [];
let open: LogFiles | undefined;
let fixture: ServiceFixture | undefined;

afterEach(async () => {
  await fixture?.stop();
  fixture = undefined;
  await open?.close();
  open = undefined;
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'mdl-kiosk-logs-'));
  dirs.push(dir);
  return dir;
}

async function logNames(dir: string): Promise<string[]> {
  return (await readdir(dir)).filter((n) => LOG_FILE_NAME.test(n)).sort();
}

async function allText(dir: string): Promise<string> {
  let text = '';
  for (const name of await readdir(dir)) {
    const path = join(dir, name);
    if ((await stat(path)).isFile()) text += await readFile(path, 'latin1');
  }
  return text;
}

async function until(check: () => Promise<boolean>, what: string, timeoutMs = 5_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

const today = (): string => {
  const d = new Date();
  return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;
};

describe('openLogFiles', () => {
  it('writes JSON lines to mdl-kiosk.<date>.<n>.log, in a 0700 folder, 0600 files', async () => {
    const dir = join(await tempDir(), 'nested', 'logs');
    open = await openLogFiles({ dir, retentionDays: 14, maxFileMegabytes: 10 });
    expect(open.dir).toBe(dir);
    const log = createLogger({ level: 'info' }, open.destination);
    log.info({ event: 'hello', count: 2 }, 'first line');
    log.warn({ event: 'second' }, 'second line');
    await open.close();
    open = undefined;
    const names = await logNames(dir);
    expect(names).toEqual([`mdl-kiosk.${today()}.1.log`]);
    const lines = (await readFile(join(dir, names[0] ?? ''), 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.map((l) => l.event)).toEqual(['hello', 'second']);
    if (process.platform !== 'win32') {
      expect((await stat(dir)).mode & 0o777).toBe(0o700);
      expect((await stat(join(dir, names[0] ?? ''))).mode & 0o777).toBe(0o600);
    }
  });

  it("tightens a log file that existed with looser permissions, and appends to today's file", async () => {
    if (process.platform === 'win32') return;
    const dir = await tempDir();
    const existing = join(dir, `mdl-kiosk.${today()}.1.log`);
    await writeFile(existing, '{"event":"before"}\n', { mode: 0o644 });
    open = await openLogFiles({ dir, retentionDays: 14, maxFileMegabytes: 10 });
    expect((await stat(existing)).mode & 0o777).toBe(0o600);
    createLogger({}, open.destination).info({ event: 'after' }, 'x');
    await open.close();
    open = undefined;
    expect(await readFile(existing, 'utf8')).toMatch(/"before"[\s\S]*"after"/);
  });

  it('rolls to a new file at maxFileMegabytes', async () => {
    const dir = await tempDir();
    open = await openLogFiles({ dir, retentionDays: 14, maxFileMegabytes: 1 });
    const log = createLogger({}, open.destination);
    const filler = 'x'.repeat(1_000);
    for (let i = 0; i < 1_300; i++) log.info({ event: 'filler', count: i }, filler);
    await until(async () => (await logNames(dir)).length >= 2, 'a second file');
    await open.close();
    open = undefined;
    const names = await logNames(dir);
    expect(names).toContain(`mdl-kiosk.${today()}.2.log`);
    const first = await stat(join(dir, `mdl-kiosk.${today()}.1.log`));
    // The size is checked after each write of the stream's buffer: the file ends within one buffer of it.
    expect(first.size).toBeGreaterThanOrEqual(1024 * 1024);
    expect(first.size).toBeLessThan(2 * 1024 * 1024);
  });

  it('deletes its own files older than retentionDays when it opens, and nothing else', async () => {
    const dir = await tempDir();
    const now = Date.now();
    const files: [string, number][] = [
      ['mdl-kiosk.2020-01-01.1.log', now - 30 * DAY],
      ['mdl-kiosk.2020-01-02.3.log', now - 15 * DAY],
      ['mdl-kiosk.2020-01-20.1.log', now - 13 * DAY],
      ['other-app.2020-01-01.1.log', now - 30 * DAY],
      ['notes.txt', now - 300 * DAY],
    ];
    for (const [name, at] of files) {
      await writeFile(join(dir, name), 'old\n');
      await utimes(join(dir, name), at / 1_000, at / 1_000);
    }
    await mkdir(join(dir, 'mdl-kiosk.2020-01-03.1.log')); // a folder with our name is not a log file
    open = await openLogFiles({ dir, retentionDays: 14, maxFileMegabytes: 10 });
    const left = (await readdir(dir)).sort();
    expect(left).not.toContain('mdl-kiosk.2020-01-01.1.log');
    expect(left).not.toContain('mdl-kiosk.2020-01-02.3.log');
    expect(left).toEqual(
      expect.arrayContaining([
        'mdl-kiosk.2020-01-20.1.log',
        'other-app.2020-01-01.1.log',
        'notes.txt',
        'mdl-kiosk.2020-01-03.1.log',
        `mdl-kiosk.${today()}.1.log`,
      ]),
    );
    // The sweep on its own, with an explicit clock: the 13-day-old file goes once it is 15 days old.
    expect(await removeExpiredLogFiles(dir, 14, now + 2 * DAY)).toEqual(['mdl-kiosk.2020-01-20.1.log']);
  });

  it("keeps at most retentionDays files besides the current one when it rolls (earlier runs' files count too)", async () => {
    const dir = await tempDir();
    for (const day of ['01', '02', '03', '04', '05']) await writeFile(join(dir, `mdl-kiosk.2021-03-${day}.1.log`), 'recent but many\n');
    open = await openLogFiles({ dir, retentionDays: 2, maxFileMegabytes: 1 });
    const log = createLogger({}, open.destination);
    const filler = 'y'.repeat(1_000);
    for (let i = 0; i < 1_300; i++) log.info({ event: 'filler' }, filler);
    // pino-roll's limit.count: that many files besides the one in use, the oldest (by name's date) go first.
    await until(async () => (await logNames(dir)).length === 3, 'the oldest files removed');
    expect(await logNames(dir)).toEqual(['mdl-kiosk.2021-03-05.1.log', `mdl-kiosk.${today()}.1.log`, `mdl-kiosk.${today()}.2.log`]);
  });

  it('refuses retention and size values the configuration would not allow', async () => {
    const dir = await tempDir();
    await expect(openLogFiles({ dir, retentionDays: 0, maxFileMegabytes: 10 })).rejects.toThrow(/retentionDays/);
    await expect(openLogFiles({ dir, retentionDays: 1, maxFileMegabytes: 0.5 })).rejects.toThrow(/maxFileMegabytes/);
  });
});

describe('redaction end to end (a service logging into the files)', () => {
  it('no API key, client secret, holder name, document number or portrait in any log file', async () => {
    const dir = await tempDir();
    open = await openLogFiles({ dir, retentionDays: 14, maxFileMegabytes: 10 });
    const PIN = '246810';
    const pinHash = await hashPin(PIN, TEST_SCRYPT);
    // The fixture's config logs at debug, the most the kiosk ever writes.
    fixture = await startServiceFixture({
      backend: 'none',
      config: { profile: 'full' },
      overrides: { staff: { pinHash } },
      service: { logDestination: open.destination },
    });
    const f = fixture;
    const clientSecrets: string[] = [];
    const sessions = f.backend.sessions;
    const create = sessions.create.bind(sessions);
    sessions.create = () => {
      const session = create();
      clientSecrets.push(session.clientSecret);
      return session;
    };
    const call = (intent: string, args: unknown): Promise<unknown> =>
      dispatchIntent(f.service, intent, args, () => f.service.staffUnlocked());
    await call('unlock', { pin: PIN });
    expect(await call('saveSettings', { backendUrl: f.backend.url, apiKey: API_KEY })).toMatchObject({ ok: true });
    await f.waitState((s) => s.view.phase === 'ready', 15_000, 'ready after saving');
    await call('lock', {});
    await call('qrScanned', { text: f.rig.phone.presentQr(), source: 'camera' });
    await f.waitState((s) => s.view.phase === 'result', 20_000, 'the result');
    await call('reportError', {
      kind: 'error',
      message: `TypeError: x is undefined \u001b[31m#token=${'t'.repeat(20)}`,
      stack: 'at App (app.js:1:1)',
    });
    await f.stop();
    fixture = undefined;
    await open.close();
    open = undefined;

    const response = f.reports[0]?.outcome?.response ?? {};
    const elements = Object.values(response).reduce<Record<string, unknown>>((all, ns) => ({ ...all, ...ns }), {});
    const text = await allText(dir);
    // The log did get the run: settings saved, the verification, the screen's error.
    expect(text).toContain('"settings_saved"');
    expect(text).toContain('"verification_outcome"');
    expect(text).toContain('"renderer_error"');
    expect(text).not.toContain('\u001b[31m');
    expect(text).not.toContain('t'.repeat(20));

    expect(clientSecrets.length).toBeGreaterThan(0);
    const needles: [string, string][] = [['API key', API_KEY], ...clientSecrets.map((s): [string, string] => ['client secret', s])];
    for (const key of ['family_name', 'given_name', 'document_number']) {
      const value = elements[key];
      expect(typeof value, key).toBe('string');
      needles.push([key, value as string]);
    }
    const portrait = elements.portrait;
    expect(portrait, 'portrait').toBeDefined();
    const portraitBytes =
      portrait instanceof Uint8Array
        ? Buffer.from(portrait)
        : typeof portrait === 'string'
          ? Buffer.from(portrait, 'base64')
          : Buffer.from(JSON.stringify(portrait));
    expect(portraitBytes.length).toBeGreaterThan(100);
    // Any 32-byte run of the portrait, as raw bytes, base64 or hex, would show it leaked.
    const middle = portraitBytes.subarray(Math.floor(portraitBytes.length / 2), Math.floor(portraitBytes.length / 2) + 32);
    needles.push(['portrait (raw)', middle.toString('latin1')], ['portrait (hex)', middle.toString('hex')]);
    for (let shift = 0; shift < 3; shift++)
      needles.push(['portrait (base64)', portraitBytes.subarray(shift + 99, shift + 99 + 30).toString('base64')]);
    if (typeof portrait === 'string') needles.push(['portrait (as sent)', portrait.slice(100, 160)]);
    for (const [what, needle] of needles) expect(text.includes(needle), `${what} in the log files`).toBe(false);
  }, 60_000);
});
