/**
 * The production entry of the desktop app (bundled as dist/app/main.js): the kiosk on this machine's
 * PC/SC reader and Bluetooth. It never imports QA code; the QA flavour has its own entry
 * (src/qa/app/main.ts).
 */
import { app } from 'electron';
import { runKioskApp } from './app.js';
import { errorText } from '../common/error-text.js';

runKioskApp({ flavour: 'production' }).catch((e: unknown) => {
  process.stderr.write(`mdl-kiosk: the app could not start: ${errorText(e)}\n`);
  // A non-zero exit lets the OS supervisor (systemd, Shell Launcher) restart or report it.
  app.exit(1);
});
