/**
 * Chromium and Node switches that open the app to its surroundings: a remote debugger (which can read
 * and drive the kiosk screen, and so every customer's data on it), a renderer without its sandbox or
 * same-origin policy, certificate errors ignored, code injected into the V8 engine or the process
 * launchers. Chromium honours them from the command line before any of the app's code runs, so a
 * packaged production app that finds one stops at once, with a message saying which (whoever may edit
 * the kiosk's shortcut or service file must not be able to turn them on). The QA flavour and unpackaged
 * runs keep them for debugging. docs/installer-guide.md lists them.
 */

export const DANGEROUS_SWITCHES: readonly string[] = [
  // Remote debugging and inspection.
  'remote-debugging-port',
  'remote-debugging-pipe',
  'remote-debugging-address',
  'remote-allow-origins',
  'auto-open-devtools-for-tabs',
  'inspect',
  'inspect-brk',
  'inspect-port',
  'inspect-publish-uid',
  'js-flags',
  // Web security and the sandbox.
  'disable-web-security',
  'allow-running-insecure-content',
  'allow-file-access-from-files',
  'unsafely-treat-insecure-origin-as-secure',
  'disable-site-isolation-trials',
  'ignore-certificate-errors',
  'ignore-certificate-errors-spki-list',
  'no-sandbox',
  'disable-gpu-sandbox',
  'single-process',
  'no-zygote',
  // Code from elsewhere.
  'load-extension',
  'renderer-cmd-prefix',
  'gpu-launcher',
  'utility-cmd-prefix',
  'browser-subprocess-path',
  // Where the renderer's names resolve.
  'host-rules',
  'host-resolver-rules',
];

/**
 * The dangerous switches on this command line (the app's arguments, without the executable): Chromium
 * reads `--name`, `--name=value` and `-name` (and `/name` on Windows), case-insensitively on Windows, and
 * stops at a bare `--`. `hasSwitch` asks Chromium's own parse as well (Electron's
 * `app.commandLine.hasSwitch`), for whatever reached it another way.
 */
export function dangerousSwitches(args: readonly string[], platform: NodeJS.Platform, hasSwitch?: (name: string) => boolean): string[] {
  const found = new Set<string>();
  const known = new Set(DANGEROUS_SWITCHES);
  for (const arg of args) {
    if (arg === '--') break;
    const prefix = /^(--|-|\/)/.exec(arg)?.[1];
    if (prefix === undefined || (prefix === '/' && platform !== 'win32')) continue;
    const name = arg.slice(prefix.length).split('=', 1)[0]?.toLowerCase() ?? '';
    if (known.has(name)) found.add(name);
  }
  for (const name of DANGEROUS_SWITCHES) {
    let present = false;
    try {
      present = hasSwitch?.(name) ?? false;
    } catch {
      present = false;
    }
    if (present) found.add(name);
  }
  return DANGEROUS_SWITCHES.filter((name) => found.has(name));
}
