/**
 * `npm run soak -- [--runs N | --minutes M] [--seed S] [--from K] [--log-level debug|info]`
 *
 * One kiosk, as long-lived as a counter's, runs a seeded random mix of every flow and fault against the
 * mock backend with real crypto through its real adapters (the `smartcard` PC/SC binding + pcscd + vpcd, noble and bleno on
 * the virtual radio); every outcome is checked against its fault, the kiosk must be ready again within a
 * bound, resources must come back, and nothing it writes may hold a secret or the holder's data.
 * Progress goes to stderr; the last lines on stdout are `SECRETS hits=… searched_bytes=…` and
 * `RESULT runs=… outcomes_ok=… wedged=… max_back_to_ready_ms=… rss_growth_mb=… heap_growth_mb=…
 * fd_growth=… listener_growth=… timer_growth=… faults=… hci_runs=… hci_ok=… seed=…`. Exit status 1 on a wrong outcome, a
 * wedge, a leak over its bound or a secret found (the seed and the event trail are printed), 2 on bad
 * arguments. What it does, the faults, the bounds and how to run it for a night: docs/soak.md.
 */
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { FAULT_WEIGHTS, type FaultKind } from './plan.js';
import { randomSeed } from './prng.js';
import { DEFAULT_SOAK_OPTIONS, Soak } from './runner.js';

/** The CI default: a few hundred verifications, a few minutes on two cores. */
export const DEFAULT_RUNS = 200;

const USAGE = `usage: npm run soak -- [--runs N | --minutes M] [--seed S] [--from K] [--log-level debug|info] [--warmup N]

  --runs N        verifications to run (default ${DEFAULT_RUNS})
  --minutes M     run for M minutes instead (a night: --minutes 600)
  --seed S        the seed (default: random, printed in the RESULT line)
  --from K        start at run K of the seed's plan (replays a failure without the runs before it)
  --log-level L   the kiosk's log level (default debug: the most text for the secrets search)
  --warmup N      runs before the resource slopes count (default: 50, or a tenth of --runs if larger)
  --only F,G      only these faults (with their usual weights; \`none\` for runs without a fault)
  --heap-snapshots DIR
                  write a V8 heap snapshot into DIR after warm-up and at the end (to find what a leak keeps)

faults: ${Object.keys(FAULT_WEIGHTS).join(', ')}`;

const Args = z
  .object({
    runs: z.coerce.number().int().min(1).max(10_000_000).optional(),
    minutes: z.coerce
      .number()
      .positive()
      .max(7 * 24 * 60)
      .optional(),
    seed: z.coerce.number().int().min(0).max(0xffffffff).optional(),
    from: z.coerce.number().int().min(1).default(DEFAULT_SOAK_OPTIONS.from),
    'log-level': z.enum(['debug', 'info']).default(DEFAULT_SOAK_OPTIONS.logLevel),
    warmup: z.coerce.number().int().min(0).optional(),
    only: z
      .string()
      .transform((text) => text.split(',').map((f) => f.trim()))
      .pipe(z.array(z.enum(Object.keys(FAULT_WEIGHTS) as [FaultKind, ...FaultKind[]])).min(1))
      .optional(),
    'heap-snapshots': z.string().min(1).optional(),
    help: z.boolean().optional(),
  })
  .refine((a) => a.runs === undefined || a.minutes === undefined, { error: '--runs and --minutes exclude each other' });

function fail(message: string): never {
  process.stderr.write(`soak: ${message}\n\n${USAGE}\n`);
  process.exit(2);
}

async function main(): Promise<number> {
  let raw: Record<string, unknown>;
  try {
    raw = parseArgs({
      options: {
        runs: { type: 'string' },
        minutes: { type: 'string' },
        seed: { type: 'string' },
        from: { type: 'string' },
        'log-level': { type: 'string' },
        warmup: { type: 'string' },
        only: { type: 'string' },
        'heap-snapshots': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    }).values;
  } catch (e) {
    fail((e as Error).message);
  }
  const parsed = Args.safeParse(raw);
  if (!parsed.success)
    fail(parsed.error.issues.map((i) => `${i.path.length > 0 ? `--${i.path.join('.')}` : 'arguments'}: ${i.message}`).join('; '));
  const args = parsed.data;
  if (args.help === true) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const goal =
    args.minutes === undefined
      ? ({ kind: 'runs', runs: args.runs ?? DEFAULT_RUNS } as const)
      : ({ kind: 'minutes', minutes: args.minutes } as const);
  const warmupRuns = args.warmup ?? Math.max(50, goal.kind === 'runs' ? Math.floor(goal.runs / 10) : 500);
  const seed = args.seed ?? randomSeed();
  process.stderr.write(
    `soak: seed ${seed}, ${goal.kind === 'runs' ? `${goal.runs} runs` : `${goal.minutes} minutes`} from run ${args.from}; warm-up ${warmupRuns} runs\n`,
  );
  const only = args.only;
  const weights =
    only === undefined
      ? FAULT_WEIGHTS
      : (Object.fromEntries(Object.entries(FAULT_WEIGHTS).map(([kind, w]) => [kind, only.includes(kind as FaultKind) ? w : 0])) as Record<
          FaultKind,
          number
        >);
  const soak = new Soak({
    ...DEFAULT_SOAK_OPTIONS,
    weights,
    ...(args['heap-snapshots'] === undefined ? {} : { heapSnapshotDir: args['heap-snapshots'] }),
    seed,
    goal,
    from: args.from,
    logLevel: args['log-level'],
    warmupRuns,
    stdout: process.stdout,
    stderr: process.stderr,
  });
  const summary = await soak.run();
  return summary.exitCode;
}

main().then(
  (code) => {
    process.exitCode = code;
    // Native handles (the PC/SC binding's pending status waits) must not keep a finished soak alive.
    setTimeout(() => process.exit(code), 5_000).unref();
  },
  (e: unknown) => {
    process.stderr.write(`soak: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(1);
  },
);
