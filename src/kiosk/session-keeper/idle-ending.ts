/**
 * What the backend did to an idle session, and what follows. While idle the backend should say nothing:
 * `error` resets the session on the backend (spec §3), so it is re-armed; anything else is a violation; a
 * closed socket is reconnected.
 */
import type { Logger } from '../../platform/log.js';
import type { BackendFailure } from '../backend-failure.js';
import type { Arrival } from '../relay-channel.js';
import { CloseCode } from '../relay-link.js';
import { backendErrorFields, closeCodeForViolation } from '../verification/results.js';
import type { Reusable } from './arming.js';
import type { ArmedSession, IdleFailure } from './keeper-types.js';

export interface IdleEnding {
  /** For the retry policy. */
  readonly failure: BackendFailure;
  /** The session to reconnect next, or none (a new one is due). */
  readonly reusable: Reusable | undefined;
  /** The kiosk closes the socket with this (none when it closed by itself). */
  readonly close?: { readonly code: number; readonly reason: string };
  /** What staff are told, briefly. */
  readonly idleFailure?: IdleFailure;
}

/** Reads an arrival on the idle session `armed` (and logs it). */
export function idleEnding(arrival: Arrival, armed: ArmedSession, log: Logger, showBackendErrorText: boolean): IdleEnding {
  // The same id and secret may be retried (spec §5 rule 2), but a session that fails again after a
  // reconnect is replaced rather than retried until it expires.
  const backendEnded = arrival.kind !== 'closed';
  const reusable =
    backendEnded && armed.reuses > 0 ? undefined : { session: armed.session, reuses: armed.reuses + 1, usedBefore: true, conflicts: 0 };
  switch (arrival.kind) {
    case 'closed':
      log.warn(
        {
          event: 'idle_socket_closed',
          sessionId: armed.session.id,
          code: arrival.closed.code,
          unanswered: arrival.closed.unanswered === true,
        },
        'idle session socket closed; re-arming',
      );
      return {
        reusable,
        failure: arrival.closed.unanswered
          ? {
              kind: 'not_answering',
              stage: 'socket',
              detail: 'the backend answered no ping on the idle session socket (timeouts.pongMs); the socket was dropped',
            }
          : { kind: 'socket_lost', stage: 'socket', detail: `the idle session socket closed (code ${arrival.closed.code})` },
      };
    case 'violation':
      log.warn(
        {
          event: 'protocol_violation',
          sessionId: armed.session.id,
          kind: arrival.violation.kind,
          detail: arrival.violation.detail,
          phase: 'idle',
        },
        'invalid message while idle',
      );
      return {
        reusable,
        close: { code: closeCodeForViolation(arrival.violation.kind), reason: `protocol violation: ${arrival.violation.kind}` },
        idleFailure: { code: 'protocol_violation', detail: `${arrival.violation.kind}: ${arrival.violation.detail}` },
        failure: { kind: 'idle_violation', stage: 'socket', detail: `protocol violation while idle: ${arrival.violation.kind}` },
      };
    case 'message': {
      if (arrival.message.type === 'error') {
        log.warn(
          {
            event: 'backend_error',
            sessionId: armed.session.id,
            phase: 'idle',
            ...backendErrorFields(arrival.message.message, showBackendErrorText),
          },
          'backend error while idle',
        );
        return {
          reusable,
          close: { code: CloseCode.normal, reason: 'backend reported an error' },
          idleFailure: {
            code: 'backend_error',
            detail: showBackendErrorText ? arrival.message.message.slice(0, 200) : 'the verification service reported an error',
          },
          failure: { kind: 'idle_error', stage: 'socket', detail: 'the backend reported an error on the idle session' },
        };
      }
      const op = arrival.message.type === 'step_request' ? arrival.message.op : undefined;
      log.warn(
        {
          event: 'protocol_violation',
          sessionId: armed.session.id,
          kind: 'out_of_sequence',
          type: arrival.message.type,
          op,
          phase: 'idle',
        },
        'message before any tap or scan',
      );
      return {
        reusable,
        close: { code: CloseCode.protocolError, reason: 'protocol violation: out_of_sequence' },
        idleFailure: {
          code: 'protocol_violation',
          detail: `out_of_sequence: ${arrival.message.type}${op ? ` ${op}` : ''} before any tap or scan`,
        },
        failure: {
          kind: 'idle_violation',
          stage: 'socket',
          detail: `protocol violation while idle: ${arrival.message.type}${op ? ` ${op}` : ''} before any tap or scan`,
        },
      };
    }
  }
}
