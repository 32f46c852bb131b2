/**
 * Result recovery after a dropped socket (src/kiosk/result-recovery.ts) with the proxy in the way: a proxy
 * refusing the kiosk (credentials, policy) ends the polling at once, since it will not change its mind
 * within the polling window; a proxy that is down may come back, so the polling goes on until its deadline.
 */
import { describe, expect, it } from 'vitest';
import { NO_REQUEST } from '../../src/kiosk/request-answer.js';
import { recoverResult } from '../../src/kiosk/result-recovery.js';
import { SessionApiError } from '../../src/kiosk/session-client.js';
import type { SessionService } from '../../src/kiosk/session-service.js';
import { createLogger } from '../../src/platform/log.js';
import { LogCapture } from '../support/harness.js';

/** A session service whose result fetch always fails with `error`, counting the attempts. */
function failingWith(error: SessionApiError): SessionService & { attempts: number } {
  const service = {
    attempts: 0,
    createSession: () => Promise.reject(new Error('not used')),
    getResult: () => {
      service.attempts++;
      return Promise.reject(error);
    },
  };
  return service;
}

async function recover(service: SessionService): Promise<unknown> {
  return recoverResult(service, 'sess_1', {
    transferFinished: true,
    pollForMs: 1_200,
    signal: new AbortController().signal,
    log: createLogger({ level: 'debug' }, new LogCapture()),
    now: Date.now,
    asked: NO_REQUEST,
  });
}

describe('result recovery through a failing proxy', () => {
  it('a proxy refusing the kiosk (407) stops the polling after one attempt', async () => {
    const service = failingWith(
      new SessionApiError(
        'proxy',
        'GET /sessions/{id}: the proxy http://10.0.0.5:3128 asked for credentials (HTTP 407)',
        407,
        undefined,
        'refused',
      ),
    );
    expect(await recover(service)).toBeUndefined();
    expect(service.attempts).toBe(1);
  });

  it('a proxy that cannot be reached is polled again until the deadline', async () => {
    const service = failingWith(
      new SessionApiError(
        'proxy',
        'GET /sessions/{id}: the proxy http://10.0.0.5:3128 cannot be reached (ECONNREFUSED)',
        undefined,
        undefined,
        'unreachable',
      ),
    );
    expect(await recover(service)).toBeUndefined();
    expect(service.attempts).toBeGreaterThan(1);
  });
});
