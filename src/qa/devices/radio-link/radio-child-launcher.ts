/**
 * Starts the QA radio child (radio-child.ts) with Node's `fork`: the kiosk's radio process, its noble and
 * bleno over the radio link at `address` (docs/radio-link.md). For the relay CLI's `--radio-link` and tests.
 */
import { fileURLToPath } from 'node:url';
import { forkLauncher, type RadioLauncher } from '../../../devices/ble/radio-process/launcher.js';

/** radio-child.ts under tsx, radio-child.js when built by tsc. */
export function qaRadioChildEntry(): string {
  const here = fileURLToPath(import.meta.url);
  return here.replace(/radio-child-launcher\.(ts|js)$/, (_m, ext: string) => `radio-child.${ext}`);
}

export interface RadioLinkLauncherOptions {
  /** The child prints native-style text on its stdout and stderr (tests of the capture). */
  readonly strayOutput?: boolean;
}

export function radioLinkLauncher(
  address: { readonly host: string; readonly port: number },
  options: RadioLinkLauncherOptions = {},
): RadioLauncher {
  return forkLauncher({
    entry: qaRadioChildEntry(),
    env: {
      MDL_KIOSK_QA_RADIO_LINK: `${address.host}:${address.port}`,
      ...(options.strayOutput ? { MDL_KIOSK_QA_RADIO_STRAY_OUTPUT: '1' } : {}),
    },
  });
}
