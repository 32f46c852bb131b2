/**
 * The deb's post-install script (build/linux/after-install.sh), run with electron-builder's template values
 * filled in and every system command it calls replaced by a recorder on PATH: it does electron-builder's
 * duties and grants no capability (file capabilities on Electron: docs/installer-guide.md §8).
 */
import { execFile } from 'node:child_process';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const COMMANDS = [
  'update-alternatives',
  'ln',
  'rm',
  'chmod',
  'unshare',
  'update-mime-database',
  'update-desktop-database',
  'apparmor_status',
  'apparmor_parser',
  'cp',
  'setcap',
  'getcap',
];

const temps: string[] = [];
afterAll(async () => {
  for (const d of temps) await rm(d, { recursive: true, force: true });
});

describe('deb post-install script', () => {
  it('links the command, sets the sandbox helper, refreshes the desktop databases, and grants no capability', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'mdl-kiosk-postinst-'));
    temps.push(dir);
    const log = join(dir, 'calls.log');
    for (const command of COMMANDS) {
      await writeFile(
        join(dir, command),
        `#!/bin/sh\nprintf '%s' "${command}" >> "${log}"; for a in "$@"; do printf ' [%s]' "$a" >> "${log}"; done; echo >> "${log}"\nexit 0\n`,
      );
      await chmod(join(dir, command), 0o755);
    }
    const template = await readFile(join(REPO, 'build/linux/after-install.sh'), 'utf8');
    expect(template).not.toMatch(/^\s*setcap\b/m);
    const script = join(dir, 'after-install.sh');
    await writeFile(script, template.replaceAll('${executable}', 'mdl-kiosk').replaceAll('${sanitizedProductName}', 'mDL Kiosk'));
    const run = await new Promise<{ code: number; stderr: string }>((done) => {
      execFile('/bin/bash', [script], { env: { PATH: `${dir}:/usr/bin:/bin` }, timeout: 30_000 }, (error, _stdout, stderr) => {
        done({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stderr });
      });
    });
    expect(run.code).toBe(0);
    const calls = (await readFile(log, 'utf8')).trim().split('\n');
    expect(calls).toContain('update-alternatives [--install] [/usr/bin/mdl-kiosk] [mdl-kiosk] [/opt/mDL Kiosk/mdl-kiosk] [100]');
    expect(calls.some((c) => /^chmod \[(0755|4755)\] \[\/opt\/mDL Kiosk\/chrome-sandbox\]$/.test(c))).toBe(true);
    expect(calls).toEqual(
      expect.arrayContaining(['update-mime-database [/usr/share/mime]', 'update-desktop-database [/usr/share/applications]']),
    );
    expect(calls.filter((c) => c.startsWith('setcap'))).toEqual([]);
    expect(run.stderr).toBe('');
  });
});
