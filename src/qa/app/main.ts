/**
 * The QA flavour's entry of the desktop app (bundled as dist/app/main-qa.js; `npm start` runs it): always
 * TEST MODE, and with no backend configured anywhere, the embedded default — the mock backend and the
 * virtual counter in the main process, and the virtual phone page in a second window. The production
 * entry (src/main/index.ts) is the same app without this hook.
 */
import { app } from 'electron';
import { runKioskApp } from '../../main/app.js';
import { embeddedDefault } from './embedded-default.js';
import { errorText } from '../../common/error-text.js';

runKioskApp({ flavour: 'qa', embedded: embeddedDefault }).catch((e: unknown) => {
  process.stderr.write(`mdl-kiosk (QA): the app could not start: ${errorText(e)}\n`);
  // A non-zero exit: `npm start` reports it.
  app.exit(1);
});
