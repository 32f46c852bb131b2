/**
 * The radio process (and the built-in voice's) in the app: Electron's `utilityProcess.fork` (a Node child under Electron's own
 * supervision, no Node integration needed in any window), behind the launcher port the supervisor uses
 * (src/devices/ble/radio-process/launcher.ts). The child is the bundled production entry
 * (`dist/app/radio.js`, tools/build/app.ts); it talks over `process.parentPort`, structured-cloned.
 * stdout/stderr are piped, so a native printf lands in the log, never on the app's console.
 */
import { utilityProcess } from 'electron';
import { ExitReport, type ChildLauncher, type LaunchedChild } from '../devices/shared/child-launcher.js';

export function utilityRadioLauncher(modulePath: string): ChildLauncher {
  return utilityLauncher(modulePath, 'mDL Kiosk radio');
}

/** Any of the app's own processes (the radio, the built-in voice `dist/app/voice.js`) as a utility process. */
export function utilityLauncher(modulePath: string, serviceName: string): ChildLauncher {
  return (): LaunchedChild => {
    const child = utilityProcess.fork(modulePath, [], { stdio: 'pipe', serviceName });
    const exit = new ExitReport();
    // Electron reports a crash as an exit code only (no signal name).
    child.once('exit', (code: number) => exit.report({ code, signal: null }));
    return {
      get pid() {
        return child.pid;
      },
      postMessage(message) {
        if (!exit.exited) child.postMessage(message);
      },
      onMessage(listener) {
        child.on('message', listener);
      },
      onExit(listener) {
        exit.onExit(listener);
      },
      stdout: child.stdout,
      stderr: child.stderr,
      kill() {
        if (!exit.exited) child.kill();
      },
    };
  };
}
