/**
 * npm run btvirt -- start|stop|status|run|check [options]: the emulated Bluetooth LE radio for QA
 * (emulated-radio.ts). `start` leaves btvirt and the socats running and records their pids in a state file,
 * so `stop` ends them by pid; `run` keeps them in the foreground until Ctrl-C; `check` runs the AF_ALG shim
 * against its test vectors and prints each.
 */
import { existsSync, readFileSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { ensureBtvirtTools, runVectors } from './build.js';
import { defaultRadioDir, startEmulatedRadio, stopEmulatedRadio, type EmulatedRadioState } from './emulated-radio.js';

/** The QA counter's controllers (src/qa/hci): the kiosk's two roles and the phone's two. */
export const DEFAULT_CONTROLLERS = ['kiosk-central', 'kiosk-peripheral', 'phone-central', 'phone-peripheral'];

const USAGE = `usage: npm run btvirt -- <command> [options]

commands:
  start    start btvirt (BlueZ's controller emulator) and one tty per controller, in the background
  stop     stop what 'start' recorded, by pid
  status   tell whether it runs, with the ttys and addresses
  run      start in the foreground; Ctrl-C stops it
  check    run the AF_ALG shim against its AES-128 and AES-CMAC test vectors

options:
  --dir DIR              where the ttys and the state file go (default ${defaultRadioDir()})
  --controllers A,B,…    controller (tty) names, connected in this order
                         (default ${DEFAULT_CONTROLLERS.join(',')})

Needs: sudo apt-get install bluez-test-tools socat libssl-dev gcc. One btvirt per machine (its socket
paths are fixed). The kiosk side: npm run relay -- --devices virtual --ble hci [--hci-dir DIR].`;

const Controller = z.object({ name: z.string(), tty: z.string(), address: z.string(), socatPid: z.number().int().positive() });
const State = z.object({
  btvirtPid: z.number().int().positive(),
  dir: z.string(),
  controllers: z.array(Controller),
  startedAt: z.string(),
});
type State = z.infer<typeof State>;

const statePath = (dir: string): string => path.join(dir, 'state.json');

function readState(dir: string): State | undefined {
  if (!existsSync(statePath(dir))) return undefined;
  return State.parse(JSON.parse(readFileSync(statePath(dir), 'utf8')));
}

function running(state: State): boolean {
  try {
    return readFileSync(`/proc/${state.btvirtPid}/comm`, 'utf8').trim() === 'btvirt';
  } catch {
    return false;
  }
}

function describe(state: EmulatedRadioState): string {
  return [
    `btvirt running, pid ${state.btvirtPid}`,
    ...state.controllers.map((c) => `controller ${c.name.padEnd(18)} ${c.address}  tty ${c.tty}  (socat pid ${c.socatPid})`),
  ].join('\n');
}

async function main(argv: string[]): Promise<number> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { dir: { type: 'string' }, controllers: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
  });
  const command = positionals[0];
  if (values.help === true || command === undefined || positionals.length > 1) {
    console.log(USAGE);
    return values.help === true ? 0 : 2;
  }
  const dir = path.resolve(values.dir ?? defaultRadioDir());
  const controllers = values.controllers === undefined ? DEFAULT_CONTROLLERS : values.controllers.split(',').filter((n) => n !== '');
  const state = readState(dir);
  switch (command) {
    case 'check': {
      const tools = await ensureBtvirtTools().catch((e: unknown) => {
        // ensureBtvirtTools fails on a wrong vector too: print them all in that case
        if (!(e instanceof Error) || !e.message.includes('test vectors')) throw e;
        return undefined;
      });
      if (!tools) return 1;
      let failed = 0;
      for (const { vector, got } of await runVectors(tools)) {
        const ok = got === vector.expected;
        if (!ok) failed++;
        console.log(
          `${ok ? 'ok  ' : 'FAIL'} ${vector.source.padEnd(24)} ${vector.operation} → ${got}${ok ? '' : ` (expected ${vector.expected})`}`,
        );
      }
      console.log(failed === 0 ? `shim ${tools.shim}: all vectors match` : `${failed} vector(s) wrong`);
      return failed === 0 ? 0 : 1;
    }
    case 'start':
    case 'run': {
      if (state !== undefined && running(state)) {
        console.error(`already running\n${describe(state)}`);
        return 1;
      }
      const radio = await startEmulatedRadio({ controllers, dir, detached: command === 'start', logFile: path.join(dir, 'btvirt.log') });
      const record: State = { btvirtPid: radio.btvirtPid, dir, controllers: [...radio.controllers], startedAt: new Date().toISOString() };
      await writeFile(statePath(dir), `${JSON.stringify(record, null, 2)}\n`);
      console.log(describe(radio));
      if (command === 'start') return 0;
      await new Promise<void>((resolve) => {
        process.once('SIGINT', resolve).once('SIGTERM', resolve);
      });
      await radio.stop();
      await rm(statePath(dir), { force: true });
      console.log('stopped');
      return 0;
    }
    case 'stop': {
      if (state === undefined) {
        console.log(`no state in ${dir}: nothing to stop`);
        return 0;
      }
      await stopEmulatedRadio(state);
      await rm(statePath(dir), { force: true });
      console.log(`stopped btvirt pid ${state.btvirtPid}`);
      return 0;
    }
    case 'status': {
      if (state === undefined || !running(state)) {
        console.log('not running');
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
