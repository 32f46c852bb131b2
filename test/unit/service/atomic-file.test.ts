/**
 * writeFileAtomic's modes: a file meant for another user's reader (the metrics for node_exporter) must be
 * readable by it at every moment it carries its name, and the folder made for it must let that user in —
 * under a strict umask (077) as well, which takes group and other bits off whatever mkdir and open ask for.
 */
import { mkdir, mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import * as fsPromises from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { writeFileAtomic } from '../../../src/service/atomic-file.js';
import { HealthRecorder, type HealthSource } from '../../../src/service/health-record.js';
import { screenState } from '../../support/screen-fixtures.js';

/** The mode of the file each rename gave its name to, taken as the rename happens. */
const atRename = vi.hoisted(() => ({ modes: [] as number[] }));

vi.mock('node:fs/promises', async (importOriginal) => {
  const actual = await importOriginal<typeof fsPromises>();
  return {
    ...actual,
    rename: async (from: string, to: string) => {
      atRename.modes.push((await actual.stat(from)).mode & 0o777);
      return actual.rename(from, to);
    },
  };
});

const modeOf = async (path: string): Promise<number> => (await stat(path)).mode & 0o777;

let dir: string;
let umask: number;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'mdl-kiosk-atomic-'));
  atRename.modes = [];
  umask = process.umask(0o077);
});
afterEach(async () => {
  process.umask(umask);
  await rm(dir, { recursive: true, force: true });
});

describe('writeFileAtomic under umask 077', () => {
  it('a file for another reader (0644) has its mode before it takes its name, and keeps it over an old 0600 file', async () => {
    const file = join(dir, 'mdl_kiosk.prom');
    await writeFile(file, 'old\n', { mode: 0o600 });
    await writeFileAtomic(file, 'new\n', 0o644);
    expect(atRename.modes).toEqual([0o644]);
    expect(await modeOf(file)).toBe(0o644);
    expect(await readFile(file, 'utf8')).toBe('new\n');
    expect((await readdir(dir)).filter((n) => n.endsWith('.tmp'))).toEqual([]);
  });

  it('folders it creates get the asked mode exactly (0755), from the first missing one down; existing ones are left alone', async () => {
    await fsPromises.chmod(dir, 0o700);
    const file = join(dir, 'var', 'textfile', 'mdl_kiosk.prom');
    await writeFileAtomic(file, 'x 1\n', { mode: 0o644, dirMode: 0o755 });
    expect(await modeOf(join(dir, 'var'))).toBe(0o755);
    expect(await modeOf(join(dir, 'var', 'textfile'))).toBe(0o755);
    expect(await modeOf(dir)).toBe(0o700);
    expect(await modeOf(file)).toBe(0o644);
  });

  it('by default (settings, secrets): 0600 in a 0700 folder', async () => {
    await mkdir(join(dir, 'existing'), { mode: 0o750 });
    await fsPromises.chmod(join(dir, 'existing'), 0o750);
    await writeFileAtomic(join(dir, 'data', 'settings.json'), '{}\n');
    await writeFileAtomic(join(dir, 'existing', 'secrets.json'), '{}\n');
    expect(await modeOf(join(dir, 'data'))).toBe(0o700);
    expect(await modeOf(join(dir, 'data', 'settings.json'))).toBe(0o600);
    expect(await modeOf(join(dir, 'existing'))).toBe(0o750);
    expect(atRename.modes).toEqual([0o600, 0o600]);
  });

  it('the health recorder makes a missing textfile folder 0755 and the metrics file 0644, health.json stays 0600 in 0700', async () => {
    const service: HealthSource = {
      version: '9.9.9',
      startedAt: Date.now() - 1_000,
      state: () => screenState('ready'),
      onState: () => () => undefined,
      onVerification: () => () => undefined,
      backendFailures: () => undefined,
    };
    const metricsFile = join(dir, 'node-exporter', 'mdl_kiosk.prom');
    const healthFile = join(dir, 'data', 'health.json');
    const recorder = new HealthRecorder({ service, file: healthFile, metricsFile, flavour: 'production', everySeconds: 60 });
    recorder.start();
    await recorder.stop();
    expect(await modeOf(join(dir, 'node-exporter'))).toBe(0o755);
    expect(await modeOf(metricsFile)).toBe(0o644);
    expect(await modeOf(join(dir, 'data'))).toBe(0o700);
    expect(await modeOf(healthFile)).toBe(0o600);
    // Every rename of the metrics file was of a 0644 file.
    expect(atRename.modes.filter((m) => m !== 0o600).every((m) => m === 0o644)).toBe(true);
    expect(atRename.modes.filter((m) => m === 0o644).length).toBeGreaterThan(0);
  });
});
