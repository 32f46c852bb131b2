/**
 * The QA flavour's embedded default (the port src/main/embedded-default.ts): the demo's virtual counter,
 * mock backend and phone page (src/qa/wiring/embedded-counter.ts), with a fresh staff PIN for the run.
 */
import type { EmbeddedDefault } from '../../main/embedded-default.js';
import { randomStaffPin, startEmbeddedCounter } from '../index.js';

export const embeddedDefault: EmbeddedDefault = {
  async start(log, kiosk) {
    const embedded = await startEmbeddedCounter({ scan: (text) => kiosk.scan(text), kioskPhase: () => kiosk.phase() });
    log.info({ event: 'embedded_default_started' }, 'TEST MODE: the embedded mock backend and the virtual counter are running');
    return {
      devices: embedded.devices,
      backendOverride: { baseUrl: embedded.backend.url, apiKey: embedded.backend.apiKey },
      phonePageUrl: embedded.phonePage.url,
      staffPin: randomStaffPin(),
      stop: () => embedded.stop(),
    };
  },
};
