/**
 * Two packs of this commit under different circumstances — another output folder, account, umask, time zone
 * and locale, at another moment — give byte-identical app folders (app.asar, app.asar.unpacked and the
 * rest, modes and times included), and a planted difference is named. Both flavours, packed from this checkout (the full comparison from two clones, each with
 * its own `npm ci`, is `npm run package:reproducibility`, too slow for CI).
 */
import { execFileSync } from 'node:child_process';
import { appendFile, chmod, chown, mkdir, mkdtemp, rm, stat, utimes } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../tools/build/app.js';
import { describeConditions, otherLocale, otherUserUnavailable, type BuildConditions } from '../../tools/package/build-conditions.js';
import { ensureRenderer, makeFakeElectronDist, packFlavour, type PackedFlavour } from '../../tools/package/dry-run.js';
import { buildPackagingHook } from '../../tools/package/hook-build.js';
import { sourceDateEpoch } from '../../tools/package/reproducible.js';
import { compareTrees } from '../../tools/package/tree-compare.js';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const OTHER_USER = 'nobody';
const inCi = process.env.CI !== undefined || process.env.MDL_KIOSK_CI_IN_COPY === '1';

let work = '';
let first: PackedFlavour[];
let second: PackedFlavour[];
const firstConditions: BuildConditions = { umask: 0o022, timeZone: 'UTC', locale: 'C' };
let secondConditions: BuildConditions;

beforeAll(async () => {
  await ensureRenderer(REPO, () => undefined);
  await buildApp({ root: REPO });
  await buildPackagingHook(REPO);
  work = await mkdtemp(join(tmpdir(), 'mdl-kiosk-reproducible-'));
  // mkdtemp makes 0700: the other account must reach its output folder.
  await chmod(work, 0o755);
  const fakeDist = join(work, 'electron-dist');
  await makeFakeElectronDist(fakeDist);
  const userProblem = otherUserUnavailable(OTHER_USER);
  if (userProblem !== undefined && inCi) throw new Error(`the second build must run as ${OTHER_USER} in CI: ${userProblem}`);
  if (userProblem !== undefined) process.stdout.write(`reproducible: the second build runs as this account, not ${OTHER_USER}: ${userProblem}\n`);
  secondConditions = { ...(userProblem === undefined ? { user: OTHER_USER } : {}), umask: 0o077, timeZone: 'Pacific/Auckland', locale: otherLocale() };
  const secondOut = join(work, 'elsewhere', 'second');
  await mkdir(secondOut, { recursive: true });
  if (secondConditions.user !== undefined) {
    const uid = Number(execFileSync('id', ['-u', OTHER_USER], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', OTHER_USER], { encoding: 'utf8' }).trim());
    await chown(secondOut, uid, gid);
  }
  const flavours = ['production', 'qa'] as const;
  first = await Promise.all(flavours.map((f) => packFlavour(REPO, f, fakeDist, join(work, 'first', f), { conditions: firstConditions })));
  second = await Promise.all(flavours.map((f) => packFlavour(REPO, f, fakeDist, join(secondOut, f), { conditions: secondConditions })));
  process.stdout.write(`reproducible: first build ${describeConditions(firstConditions)}; second ${describeConditions(secondConditions)}\n`);
}, 240_000);

afterAll(async () => {
  if (work !== '') await rm(work, { recursive: true, force: true });
});

describe('two packs of one commit under different conditions', () => {
  it('give identical app folders for both flavours: bytes, modes and times', async () => {
    for (const [i, a] of first.entries()) {
      const b = second[i] as PackedFlavour;
      expect(await compareTrees(a.appOutDir, b.appOutDir, ['first', 'second']), a.flavour).toEqual([]);
    }
  });

  it('whatever the umask, the archive and the unpacked addons are readable by every account, with the commit’s time', async () => {
    const epoch = sourceDateEpoch(REPO);
    for (const p of second) {
      const asar = await stat(p.asar);
      expect(asar.mode & 0o777).toBe(0o644);
      expect(Math.floor(asar.mtimeMs / 1000)).toBe(epoch);
      const addon = await stat(join(p.appOutDir, 'resources/app.asar.unpacked/node_modules/smartcard/build/Release/smartcard_napi.node'));
      expect(addon.mode & 0o777).toBe(0o755);
      expect(p.hookReport).toContain(`modes and times normalised to ${new Date(epoch * 1000).toISOString()}`);
    }
  });

  it('a file’s changed time and a build-time string in the archive are each named', async () => {
    const [a, b] = [first[0] as PackedFlavour, second[0] as PackedFlavour];
    const license = 'resources/app.asar.unpacked/node_modules/smartcard/LICENSE';
    await utimes(join(b.appOutDir, license), new Date(), new Date());
    await appendFile(b.asar, `built ${new Date().toISOString()}`);
    const differences = await compareTrees(a.appOutDir, b.appOutDir, ['first', 'second']);
    expect(differences).toEqual([
      expect.stringMatching(/^resources\/app\.asar: content differs \(\d+ B sha256 [0-9a-f]{16}… and \d+ B sha256 [0-9a-f]{16}…\)$/),
      expect.stringMatching(/^resources\/app\.asar: modified .* and .*$/),
      expect.stringMatching(new RegExp(`^${license.replace(/\./g, '\\.')}: modified \\d{4}-.*Z \\(\\d+\\) and \\d{4}-.*Z \\(\\d+\\)$`)),
    ]);
  });
});
