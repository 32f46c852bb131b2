import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RelaunchGuard } from '../../../src/main/relaunch-guard.js';

let dir: string;
let now: number;
const guard = (): RelaunchGuard =>
  new RelaunchGuard({ file: join(dir, 'sub', 'relaunches.json'), max: 3, windowMs: 600_000, now: () => now });

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'mdl-kiosk-relaunch-'));
  now = 10_000_000;
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('RelaunchGuard', () => {
  it('allows max relaunches within the window, then refuses, across processes (the file)', async () => {
    for (let i = 0; i < 3; i++) {
      expect(guard().tryRecord()).toBe(true);
      now += 1_000;
    }
    expect(guard().tryRecord()).toBe(false);
    expect(guard().recent()).toHaveLength(3);
    const file = JSON.parse(await readFile(join(dir, 'sub', 'relaunches.json'), 'utf8')) as { relaunches: number[] };
    expect(file.relaunches).toEqual([10_000_000, 10_001_000, 10_002_000]);
  });

  it('forgets relaunches older than the window', () => {
    for (let i = 0; i < 3; i++) guard().tryRecord();
    now += 600_001;
    expect(guard().recent()).toEqual([]);
    expect(guard().tryRecord()).toBe(true);
  });

  it('a malformed or foreign file counts as no relaunches', async () => {
    const g = guard();
    g.tryRecord();
    await writeFile(g.file, '{"version":1,"relaunches":"lots"}');
    expect(g.recent()).toEqual([]);
    await writeFile(g.file, 'not json');
    expect(g.recent()).toEqual([]);
    expect(g.tryRecord()).toBe(true);
  });

  it('times in the future (a clock set back) do not count', async () => {
    const g = guard();
    await mkdir(dirname(g.file), { recursive: true });
    await writeFile(g.file, JSON.stringify({ version: 1, relaunches: [now + 5_000, now + 6_000, now + 7_000] }));
    expect(g.recent()).toEqual([]);
  });
});
