/**
 * The session socket dropped during a verification: the result may exist on the backend anyway
 * (spec §1: "It can also be fetched by GET /sessions/{id}"). If the transfer had finished (the 0x02 end
 * byte went out) the backend may still be verifying, so `GET /sessions/{id}` is polled for a while;
 * otherwise one look is enough.
 */
import type { OutcomeView } from '../common/kiosk-view.js';
import { sleep } from './async-tools.js';
import type { SessionService } from './session-service.js';
import type { Logger } from '../platform/log.js';
import { outcomeFromResult } from './outcome.js';
import type { AskedRequest } from './request-answer.js';
import { proxyFailureIsConfiguration } from './backend-proxy.js';
import { SessionApiError } from './session-client.js';

const POLL_MS = 500;

export async function recoverResult(
  sessions: SessionService,
  sessionId: string,
  options: { transferFinished: boolean; pollForMs: number; signal: AbortSignal; log: Logger; now: () => number; asked: AskedRequest },
): Promise<OutcomeView | undefined> {
  const { transferFinished, signal, log, now } = options;
  const deadline = now() + (transferFinished ? options.pollForMs : 0);
  for (let attempt = 1; ; attempt++) {
    try {
      const outcome = outcomeFromResult(await sessions.getResult(sessionId, signal), options.asked);
      if (outcome) {
        log.info({ event: 'result_recovered', attempt }, 'result recovered after the socket dropped');
        return outcome;
      }
    } catch (e) {
      const kind = e instanceof SessionApiError ? e.kind : 'unknown';
      log.warn({ event: 'result_recovery_failed', kind, attempt }, 'could not fetch the session result');
      // Before the transfer ended a 404 settles it; after, the backend may still be writing the result.
      if (kind === 'unauthorized' || kind === 'forbidden' || kind === 'aborted') return undefined;
      // A proxy refusing us will not change its mind while we poll; one that is down may come back.
      if (e instanceof SessionApiError && e.kind === 'proxy' && proxyFailureIsConfiguration(e)) return undefined;
      if (kind === 'not_found' && !transferFinished) return undefined;
    }
    if (now() >= deadline || signal.aborted) return undefined;
    try {
      await sleep(POLL_MS, signal);
    } catch {
      return undefined;
    }
  }
}
