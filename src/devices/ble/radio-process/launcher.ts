/**
 * How the kiosk starts its radio process: the shared launcher port (devices/shared/child-launcher.ts) with
 * the radio's production child as the default entry. The names the radio's code and tests know stay.
 */
import { fileURLToPath } from 'node:url';
import {
  forkLauncher as forkChild,
  type ChildExit,
  type ChildLauncher,
  type ForkLauncherOptions,
  type LaunchedChild,
} from '../../shared/child-launcher.js';

export type RadioChildExit = ChildExit;
export type RadioChild = LaunchedChild;
export type RadioLauncher = ChildLauncher;

/**
 * The production child's entry beside this module: `.ts` under tsx (then the child runs with tsx too),
 * `.js` when built by tsc.
 */
export function defaultChildEntry(): { readonly entry: string; readonly execArgv: readonly string[] } {
  const here = fileURLToPath(import.meta.url);
  const ts = here.endsWith('.ts');
  return { entry: here.replace(/launcher\.(ts|js)$/, `child-entry.${ts ? 'ts' : 'js'}`), execArgv: ts ? ['--import', 'tsx'] : [] };
}

/** `child_process.fork` of the radio child (default: the production one beside this module). */
export function forkLauncher(options: Partial<ForkLauncherOptions> = {}): RadioLauncher {
  return forkChild({ ...options, entry: options.entry ?? defaultChildEntry().entry });
}
