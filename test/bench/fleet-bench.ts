/**
 * Fleet benchmark: `npm run bench:fleet` (compiled by `npm run build`, then `node dist/test/bench/fleet-bench.js`).
 * Issue 27, item 4, "a fleet after an outage, simulated"; what it shows and why: docs/fleet.md.
 *
 * `--kiosks N` real session keepers (default 1,000) in this process, each with its own API key, HTTP client
 * and WebSocket connector, against the mock backend with real ISO 18013-5 crypto in a child process on
 * 127.0.0.1 (fleet.ts, fleet-backend-child.ts). They start together and arm; once armed and healthy the
 * backend goes down for `--down S` seconds (default 90: every keeper's backoff reaches the 30 s cap within
 * about 45 s and then retries at the cap for several rounds; 120 makes the run ~30 s longer and moves no
 * recovery figure, docs/fleet.md — 90 keeps the default run within about 4 minutes), comes back
 * as a new process on the same port (every old session unknown), and every keeper must arm again. Then, on
 * the same fleet, the same for a short outage, `--short-down S` (default 5; 0 leaves it out), where the
 * backoffs are still short. `--backoff-min-ms`, `--backoff-max-ms`, `--budget` change the policy's settings
 * (defaults: the configuration's, 1 s, 30 s, 20 requests per 60 s).
 *
 * Printed: per phase, a table per second (requests at the backend, kiosks arriving, keepers armed), the
 * peaks of the first minute as a share of the fleet, the time until 50/99/100 % are armed, the requests per
 * kiosk per minute while down; then one JSON line, and last the RESULT line. Exit code 1 only when a kiosk
 * exceeded the request budget in a 60 s window or a keeper was not armed again within 3 backoff caps + 60 s
 * (or the harness broke) — never on a time.
 *
 * Open files: each kiosk holds a WebSocket and a pooled HTTP connection, in this process and in the
 * backend's. Node raises its soft limit to the hard one at start, so the hard limit (`ulimit -Hn`) is what
 * counts; when it is too low the bench stops at once and says what to raise.
 */
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { parseConfig } from '../../src/platform/config.js';
import { finishBench } from './bench-tools.js';
import { describeFleet, fleetFigures, runFleet, type FleetReport, type OutageFigures } from './fleet.js';

const USAGE = `Usage: npm run bench:fleet -- [--kiosks N] [--down S] [--short-down S] [--backoff-min-ms MS] [--backoff-max-ms MS] [--budget N]`;

function fail(message: string): never {
  console.error(`bench:fleet: ${message}\n${USAGE}`);
  process.exit(2);
}

function whole(name: string, value: string | undefined, fallback: number, min: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min) fail(`--${name} takes a whole number ≥ ${min}, got "${value}"`);
  return n;
}

/** The soft and hard open-file limits of this process (Linux: /proc/self/limits); undefined elsewhere. */
function openFileLimits(): { soft: number; hard: number } | undefined {
  let text: string;
  try {
    text = readFileSync('/proc/self/limits', 'utf8');
  } catch {
    return undefined;
  }
  const match = /^Max open files\s+(\S+)\s+(\S+)/m.exec(text);
  if (!match) return undefined;
  const value = (s: string | undefined): number => (s === 'unlimited' ? Number.POSITIVE_INFINITY : Number(s));
  return { soft: value(match[1]), hard: value(match[2]) };
}

/** Stops the bench at once when this process may not open enough files for the fleet. */
function checkOpenFiles(kiosks: number): void {
  // Per kiosk: its session socket, a pooled HTTP connection and one closing or being opened; plus Node's own.
  const needed = kiosks * 3 + 512;
  const limits = openFileLimits();
  if (!limits) {
    console.log(`open files: limit unknown on this OS; the fleet needs about ${needed} (ulimit -n)`);
    return;
  }
  // Node has already raised the soft limit as far as the hard one allows.
  if (limits.soft < needed) {
    fail(
      `${kiosks} kiosks need about ${needed} open files; this process may open ${limits.soft} (hard limit ${limits.hard}): raise the hard limit (ulimit -Hn ${needed}) or use fewer --kiosks`,
    );
  }
  console.log(`open files: limit ${limits.soft} (about ${needed} needed)`);
}

function resultLine(report: FleetReport): string {
  const f = (value: number | undefined, digits: number): string =>
    value === undefined || !Number.isFinite(value) ? 'NaN' : value.toFixed(digits);
  const n = report.settings.kiosks;
  const outage = (o: OutageFigures | undefined, prefix: string): string =>
    [
      `${prefix}down_s=${f(o ? o.downMs / 1000 : undefined, 1)}`,
      `${prefix}peak_req_per_s=${f(o?.recovery.peakRequestsPerSecond, 0)}`,
      `${prefix}peak_kiosks_pct=${f(o ? (100 * o.recovery.peakKiosksPerSecond) / n : undefined, 1)}`,
      `${prefix}ready_p99_s=${f(o ? o.recovery.ready.p99Ms / 1000 : undefined, 1)}`,
      `${prefix}ready_p100_s=${f(o ? o.recovery.ready.p100Ms / 1000 : undefined, 1)}`,
      `${prefix}outage_req_per_kiosk_min=${f(o?.outageRequestsPerKioskPerMinute, 2)}`,
    ].join(' ');
  return [
    `RESULT kiosks=${n}`,
    `startup_ready_p99_s=${f(report.startup ? report.startup.ready.p99Ms / 1000 : undefined, 1)}`,
    `startup_peak_req_per_s=${f(report.startup?.peakRequestsPerSecond, 0)}`,
    outage(report.outages[0], ''),
    outage(report.outages[1], 'short_'),
    `max_req_per_kiosk_60s=${f(report.bound?.maxAdmittedPerMinute, 0)}`,
  ].join(' ');
}

async function main(): Promise<void> {
  const started = performance.now();
  let values;
  try {
    values = parseArgs({
      options: {
        kiosks: { type: 'string' },
        down: { type: 'string' },
        'short-down': { type: 'string' },
        'backoff-min-ms': { type: 'string' },
        'backoff-max-ms': { type: 'string' },
        budget: { type: 'string' },
      },
      strict: true,
    }).values;
  } catch (e) {
    fail(e instanceof Error ? e.message : String(e));
  }
  const defaults = parseConfig({}).session;
  const kiosks = whole('kiosks', values.kiosks, 1_000, 1);
  const downS = whole('down', values.down, 90, 1);
  const shortDownS = whole('short-down', values['short-down'], 5, 0);
  const settings = {
    kiosks,
    backoffMinMs: whole('backoff-min-ms', values['backoff-min-ms'], defaults.offlineBackoffMinMs, 1),
    backoffMaxMs: whole('backoff-max-ms', values['backoff-max-ms'], defaults.offlineBackoffMaxMs, 1),
    maxRequestsPerMinute: whole('budget', values.budget, defaults.maxRequestsPerMinute, 4),
  };
  // The configuration's own bounds (e.g. the budget's) apply: the keepers are configured through it.
  parseConfig({
    session: {
      offlineBackoffMinMs: settings.backoffMinMs,
      offlineBackoffMaxMs: settings.backoffMaxMs,
      maxRequestsPerMinute: settings.maxRequestsPerMinute,
    },
  });

  const load = os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
  console.log(`fleet bench: node ${process.version}, ${os.cpus().length} CPU(s), load average ${load}`);
  checkOpenFiles(kiosks);
  const outagesMs = shortDownS > 0 ? [downS * 1000, shortDownS * 1000] : [downS * 1000];
  const t0 = Date.now();
  const report = await runFleet({
    settings,
    outagesMs,
    progress: (line) => console.error(`[${((Date.now() - t0) / 1000).toFixed(1).padStart(6)} s] ${line}`),
  });
  console.log('');
  for (const line of describeFleet(report)) console.log(line);
  console.log('');
  console.log(JSON.stringify(fleetFigures(report)));
  finishBench(
    'fleet bench',
    started,
    report.failures,
    `no kiosk had more than ${settings.maxRequestsPerMinute} requests admitted in any 60 s, none sent one its budget did not admit, the backend saw none over it; every keeper armed again after every outage`,
    resultLine(report),
  );
}

await main();
