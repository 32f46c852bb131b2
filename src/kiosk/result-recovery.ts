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
import { fullJitter } from './retry-policy.js';
import { SessionApiError } from './session-client.js';

/** Polls back off from this (full jitter, retry-policy.ts) up to POLL_CAP_MS: the backend may be struggling. */
const POLL_BASE_MS = 250;
const POLL_CAP_MS = 2_000;

export async function recoverResult(
  sessions: SessionService,
  sessionId: string,
  options: {
    transferFinished: boolean;
    pollForMs: number;
    signal: AbortSignal;
    log: Logger;
    now: () => number;
    asked: AskedRequest;
    /** Waits for the kiosk's request budget (session-keeper.ts `admitRequest`): every GET counts. */
    admit?: (signal: AbortSignal) => Promise<void>;
    random?: () => number;
  },
): Promise<OutcomeView | undefined> {
  const { transferFinished, signal, log, now } = options;
  const deadline = now() + (transferFinished ? options.pollForMs : 0);
  for (let attempt = 1; ; attempt++) {
    try {
      await options.admit?.(signal);
    } catch {
      return undefined;
    }
    if (now() > deadline && attempt > 1) return undefined;
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
      // At least a little: a poll must not follow the last one at once (full jitter may draw 0).
      const wait = Math.max(POLL_BASE_MS / 2, fullJitter(attempt, POLL_BASE_MS * 2, POLL_CAP_MS, options.random ?? Math.random));
      await sleep(Math.min(wait, Math.max(0, deadline - now())), signal);
    } catch {
      return undefined;
    }
  }
}
