/**
 * `npm run host -- --health-file FILE`: the browser host keeps the fleet health record too — written at
 * start (valid against the published schema), and a final record when it stops.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { afterEach, describe, expect, it } from 'vitest';
import { HealthRecordSchema } from '../../../src/service/health-schema.js';

const dirs: string[] = [];
/** Host processes still running when a test ends (it failed before its SIGTERM): stopped by pid. */
const children: ChildProcess[] = [];
afterEach(async () => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

describe('npm run host -- --health-file', () => {
  it('writes a valid health record while running and a final one at SIGTERM', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'mdl-kiosk-host-health-'));
    dirs.push(dir);
    const config = join(dir, 'config.json');
    await writeFile(config, JSON.stringify({ ble: { roles: 'none' }, app: { health: { everySeconds: 5 } } }));
    const health = join(dir, 'health.json');
    const metrics = join(dir, 'node-exporter', 'mdl_kiosk.prom');
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        'src/host/cli.ts',
        '--config',
        config,
        '--data-dir',
        dir,
        '--nfc',
        'none',
        '--log-level',
        'silent',
        '--health-file',
        health,
        '--metrics-file',
        metrics,
      ],
      {
        env: Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('MDL_KIOSK_'))),
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    children.push(child);
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (c: Buffer) => {
        if (c.toString().includes('http://')) resolve();
      });
      child.once('exit', () => reject(new Error(`the host exited: ${stderr}`)));
    });
    // The first record and its metrics are written as the service starts, asynchronously and one after the
    // other (under load the metrics file came a moment after the record): wait for both.
    let text: string | undefined;
    let metricsText: string | undefined;
    for (let i = 0; i < 200 && (text === undefined || metricsText === undefined); i++) {
      text = await readFile(health, 'utf8').catch(() => undefined);
      metricsText = await readFile(metrics, 'utf8').catch(() => undefined);
      if (text === undefined || metricsText === undefined) await new Promise((r) => setTimeout(r, 25));
    }
    const running = HealthRecordSchema.parse(JSON.parse(text ?? 'null'));
    expect(running).toMatchObject({
      app: 'mdl-kiosk',
      flavour: 'production',
      phase: 'config_error',
      lastError: 'config_error',
      backendOrigin: null,
      pid: child.pid,
    });
    // The same shape as the desktop app's record: the updater's state is there too.
    expect(running.updates).toEqual({ state: 'disabled', error: 'the browser host does not update itself' });
    const families = parsePrometheusTextFormat(metricsText ?? '');
    expect(families.find((f) => f.name === 'mdl_kiosk_phase')?.metrics.find((m) => m.value === '1')?.labels).toEqual({
      phase: 'config_error',
    });
    expect((await stat(metrics)).mode & 0o777).toBe(0o644);
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    const final = HealthRecordSchema.parse(JSON.parse(await readFile(health, 'utf8')));
    expect(final.phase).toBe('stopped');
    expect(Date.parse(final.updatedAt)).toBeGreaterThanOrEqual(Date.parse(running.updatedAt));
  }, 30_000);
});
