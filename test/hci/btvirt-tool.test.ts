/**
 * tools/btvirt: the AF_ALG shim against its published vectors, the emulated radio's start and teardown by
 * pid, one btvirt per machine, and a clear error when a piece is missing.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, symlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { ensureBtvirtTools, runVectors } from '../../tools/btvirt/build.js';
import { CRYPTO_VECTORS } from '../../tools/btvirt/crypto-vectors.js';
import { BT_SERVER_LE, runningBtvirtPids, startEmulatedRadio } from '../../tools/btvirt/emulated-radio.js';

const run = promisify(execFile);

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('the AF_ALG shim', () => {
  it('gives the FIPS-197 AES-128 and RFC 4493 AES-CMAC results through the calls BlueZ makes', async () => {
    const tools = await ensureBtvirtTools();
    const results = await runVectors(tools);
    expect(results).toHaveLength(CRYPTO_VECTORS.length);
    for (const { vector, got } of results) expect(got, vector.source).toBe(vector.expected);
  });

  it('a wrong expectation is caught, and an unknown key size is refused as the kernel would', async () => {
    const tools = await ensureBtvirtTools();
    const [vector] = CRYPTO_VECTORS;
    if (!vector) throw new Error('no vector');
    const [wrong, badKey] = await runVectors(tools, [
      { ...vector, expected: '00'.repeat(16) },
      { source: 'bad key', operation: 'cmac', key: '0011223344', data: '', expected: '' },
    ]);
    expect(wrong?.got).toBe(vector.expected);
    expect(wrong?.got).not.toBe(wrong?.vector.expected);
    expect(badKey?.got).toBe('error: setup');
  });
});

describe('the emulated radio', () => {
  it('starts btvirt and one tty per controller in connection order, refuses a second btvirt, and stops everything by pid', async () => {
    const radio = await startEmulatedRadio({ controllers: ['one', 'two'], dir: path.join(os.tmpdir(), `btvirt-tool-test-${process.pid}`) });
    try {
      expect(radio.controllers.map((c) => [c.name, c.address])).toEqual([
        ['one', '00:AA:01:00:00:42'],
        ['two', '00:AA:01:01:00:42'],
      ]);
      for (const c of radio.controllers) expect(existsSync(c.tty)).toBe(true);
      expect(runningBtvirtPids()).toEqual([radio.btvirtPid]);
      await expect(startEmulatedRadio({ controllers: ['three'] })).rejects.toThrow(`btvirt is already running (pid ${radio.btvirtPid})`);
    } finally {
      await radio.stop();
    }
    expect(alive(radio.btvirtPid)).toBe(false);
    for (const c of radio.controllers) {
      expect(alive(c.socatPid)).toBe(false);
      expect(existsSync(c.tty)).toBe(false);
    }
    expect(existsSync(BT_SERVER_LE)).toBe(false);
  });

  it('names the missing pieces and the apt packages when btvirt and socat are not installed', async () => {
    // A PATH with node and gcc only.
    const bin = await mkdtemp(path.join(os.tmpdir(), 'btvirt-path-'));
    try {
      await symlink(process.execPath, path.join(bin, 'node'));
      await symlink('/usr/bin/gcc', path.join(bin, 'gcc'));
      const cli = path.resolve('tools/btvirt/cli.ts');
      const tsx = path.resolve('node_modules/tsx/dist/cli.mjs');
      const failed = await run(process.execPath, [tsx, cli, 'check'], { env: { ...process.env, PATH: bin } }).then(
        () => undefined,
        (e: unknown) => e as { code: number; stderr: string },
      );
      expect(failed?.code).toBe(1);
      expect(failed?.stderr).toContain('emulated radio: missing btvirt (bluez-test-tools), socat.');
      expect(failed?.stderr).toContain('apt-get install -y --no-install-recommends bluez-test-tools socat libssl-dev gcc');
    } finally {
      await rm(bin, { recursive: true, force: true });
    }
  });
});
