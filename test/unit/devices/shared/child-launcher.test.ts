import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { forkLauncher, type LaunchedChild } from '../../../../src/devices/shared/child-launcher.js';

describe('forkLauncher', () => {
  let dir: string | undefined;
  let child: LaunchedChild | undefined;
  afterEach(() => {
    child?.kill();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** A child that answers its first message with its execArgv and the variable it was given. */
  const echoExecArgv = (): string => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'mdl-launcher-'));
    const entry = path.join(dir, 'child.mjs');
    writeFileSync(
      entry,
      "process.on('message', () => process.send({ execArgv: process.execArgv, env: process.env.MDL_LAUNCHER_TEST }));\n",
    );
    return entry;
  };

  const ask = (launched: LaunchedChild): Promise<unknown> =>
    new Promise((resolve) => {
      launched.onMessage(resolve);
      launched.postMessage({ t: 'ping' });
    });

  it('passes extra Node flags and environment to the child (a bench hands its --cpu-prof on)', async () => {
    child = forkLauncher({ entry: echoExecArgv(), env: { MDL_LAUNCHER_TEST: 'yes' }, execArgv: ['--max-old-space-size=96'] })();
    expect(await ask(child)).toEqual({ execArgv: ['--max-old-space-size=96'], env: 'yes' });
  });

  it('gives a .js child no flags of its own by default (not the parent’s)', async () => {
    child = forkLauncher({ entry: echoExecArgv() })();
    expect(await ask(child)).toEqual({ execArgv: [], env: undefined });
  });
});
