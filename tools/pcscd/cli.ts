/**
 * npm run pcscd -- start|stop|status|run [options]: a private pcscd with vpcd readers for QA and
 * manual tests (see pcscd-daemon.ts). `start` leaves it running and records its pid in a state file
 * so that `stop` can end it by pid; `run` keeps it in the foreground until Ctrl-C.
 */
import { existsSync, readFileSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { startPrivatePcscd, type PrivatePcscd } from './pcscd-daemon.js';

const USAGE = `usage: npm run pcscd -- <command> [options]

commands:
  start    start a private pcscd in the background and print how to use it
  stop     stop the pcscd that 'start' recorded (SIGTERM, then SIGKILL)
  status   tell whether it runs
  run      start it in the foreground; Ctrl-C stops it

options:
  --dir DIR        state, socket, config and log directory (default ${defaultDir()})
  --readers N      number of PC/SC readers, made in pairs by vpcd (default 2)
  --port PORT      first vpcd port, then consecutive (default: free random ports)
  --name NAME      reader.conf FRIENDLYNAME (default "Virtual PCD")
  --debug          pcscd --debug --apdu
  --root           keep root instead of running pcscd as nobody (unsafe next to a system pcscd)`;

function defaultDir(): string {
  return path.join(os.tmpdir(), 'mdl-kiosk-pcscd');
}

const State = z.object({
  pid: z.number().int().positive(),
  socketPath: z.string(),
  logFile: z.string(),
  readers: z.array(z.object({ name: z.string(), host: z.string(), port: z.number() })),
  startedAt: z.string(),
});
type State = z.infer<typeof State>;

const statePath = (dir: string): string => path.join(dir, 'state.json');

function readState(dir: string): State | undefined {
  if (!existsSync(statePath(dir))) return undefined;
  return State.parse(JSON.parse(readFileSync(statePath(dir), 'utf8')));
}

/** Alive and still our pcscd: the pid may have been reused since 'start'. Zombies count as dead. */
function isOurPcscd(state: State): boolean {
  try {
    const stat = readFileSync(`/proc/${state.pid}/stat`, 'utf8');
    const processState = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    const cmdline = readFileSync(`/proc/${state.pid}/cmdline`, 'utf8');
    return processState !== 'Z' && cmdline.includes(path.dirname(state.socketPath));
  } catch {
    return false;
  }
}

interface Described {
  readonly pid: number;
  readonly socketPath: string;
  readonly logFile: string;
  readonly readers: readonly { readonly name: string; readonly host: string; readonly port: number }[];
}

function describe(info: Described): string {
  return [
    `private pcscd running, pid ${info.pid}`,
    `socket  ${info.socketPath}`,
    `log     ${info.logFile}`,
    ...info.readers.map((r) => `reader  "${r.name}"  vpcd ${r.host}:${r.port}`),
    `export PCSCLITE_CSOCK_NAME=${info.socketPath}`,
  ].join('\n');
}

/** Not our child once 'start' has exited, so poll /proc instead of waiting for an exit event. */
async function stopByPid(state: State): Promise<void> {
  for (const [signal, boundMs] of [
    ['SIGTERM', 3_000],
    ['SIGKILL', 3_000],
  ] as const) {
    if (!isOurPcscd(state)) return;
    process.kill(state.pid, signal);
    const deadline = Date.now() + boundMs;
    while (isOurPcscd(state) && Date.now() < deadline) await sleep(20);
  }
  if (isOurPcscd(state)) throw new Error(`pid ${state.pid} survived SIGKILL`);
}

async function main(argv: string[]): Promise<number> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      dir: { type: 'string' },
      readers: { type: 'string' },
      port: { type: 'string' },
      name: { type: 'string' },
      debug: { type: 'boolean' },
      root: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const command = positionals[0];
  if (values.help === true || command === undefined || positionals.length > 1) {
    console.log(USAGE);
    return values.help === true ? 0 : 2;
  }
  const dir = path.resolve(values.dir ?? defaultDir());
  const state = readState(dir);
  const start = (detached: boolean): Promise<PrivatePcscd> =>
    startPrivatePcscd({
      dir,
      detached,
      ...(values.readers === undefined ? {} : { readers: Number(values.readers) }),
      ...(values.port === undefined ? {} : { basePort: Number(values.port) }),
      ...(values.name === undefined ? {} : { friendlyName: values.name }),
      debug: values.debug === true,
      ...(values.root === true ? { user: null } : {}),
    });

  switch (command) {
    case 'start':
    case 'run': {
      if (state !== undefined && isOurPcscd(state)) {
        console.error(`already running (pid ${state.pid}); 'stop' it first\n${describe(state)}`);
        return 1;
      }
      const daemon = await start(command === 'start');
      const { pid, socketPath, logFile } = daemon;
      const record: State = { pid, socketPath, logFile, readers: [...daemon.readers], startedAt: new Date().toISOString() };
      await writeFile(statePath(dir), `${JSON.stringify(record, null, 2)}\n`);
      console.log(describe(daemon));
      if (command === 'start') return 0;
      const keepAlive = setInterval(() => undefined, 60_000); // the daemon's child handle is unref'd
      await new Promise<void>((resolve) => {
        process.once('SIGINT', resolve).once('SIGTERM', resolve);
      });
      clearInterval(keepAlive);
      await daemon.stop();
      await rm(statePath(dir), { force: true });
      console.log('stopped');
      return 0;
    }
    case 'stop': {
      if (state === undefined) {
        console.log(`no state in ${dir}: nothing to stop`);
        return 0;
      }
      await stopByPid(state);
      await rm(state.socketPath, { force: true });
      await rm(statePath(dir), { force: true });
      console.log(`stopped pid ${state.pid}`);
      return 0;
    }
    case 'status': {
      if (state === undefined || !isOurPcscd(state)) {
        console.log(state === undefined ? 'not running' : `not running (pid ${state.pid} is gone; log ${state.logFile})`);
        return 3;
      }
      console.log(describe(state));
      return 0;
    }
    default:
      console.error(`unknown command ${JSON.stringify(command)}\n${USAGE}`);
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exitCode = 1;
  },
);
