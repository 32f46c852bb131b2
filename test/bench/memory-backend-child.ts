/**
 * The backend of the relay benchmark's memory phase, in a process of its own (forked by relay-bench.ts
 * with an IPC channel), so that the fake backend's allocations and V8 heap sizing stay out of the RSS of
 * the kiosk process that the phase measures.
 *
 * It starts a `FakeBackend` on 127.0.0.1 with a free port, reports `{kind: 'ready', baseUrl, apiKey}`, and
 * runs the scripted full verification by itself on every kiosk connection (see `FULL_*` in
 * bench-protocol.ts):
 *
 *   engage → nfc_card_present → nfc_apdu/nfc_rapdu × 3 → ble_exchange (central) → ble_connected →
 *   ble_write 0x01 on state + ble_write on c2s → ble_notified × 3 (sent by the bench's fake phone) →
 *   ble_write 0x02 on state → complete.
 *
 * Every frame is checked as it arrives, from a synchronous listener (no promise or timer per message).
 * A deviation is reported to the bench (`{kind: 'failure'}`) and ends the verification with a backend
 * `error`, which the bench then sees as a verification that did not complete. Stalls are the bench's to
 * detect (its waits are bounded). Answers `{kind: 'counts'}` with the completed and failed verifications;
 * exits on `{kind: 'stop'}`, or as soon as the IPC channel closes (the bench ended or died).
 */
import { FakeBackend, type FakeConnection } from '../support/fake-backend.js';
import { BackendPeer, sendToParent, type Inbound } from './bench-tools.js';
import {
  BLE_EXCHANGE,
  COMPLETE,
  FULL_APDUS,
  FULL_NOTIFICATIONS,
  RESET,
  S2C_UUID,
  WRITE_C2S,
  WRITE_STATE_END,
  WRITE_STATE_START,
  apduCommand,
  b64,
  fullNotification,
  instantCard,
  isChildCommand,
  stepRequest,
  type ChildReport,
} from './bench-protocol.js';

const APDU_TEXTS: readonly string[] = Array.from({ length: FULL_APDUS }, (_, i) => stepRequest('nfc_apdu', { data: b64(apduCommand(i)) }));
const RAPDU_B64: readonly string[] = Array.from({ length: FULL_APDUS }, (_, i) => b64(instantCard(apduCommand(i))));
const NOTIFIED_B64: readonly string[] = Array.from({ length: FULL_NOTIFICATIONS }, (_, i) => b64(fullNotification(i)));
const sameUuid = (a: unknown, b: string): boolean =>
  typeof a === 'string' && a.replaceAll('-', '').toLowerCase() === b.replaceAll('-', '').toLowerCase();

if (!process.send) {
  console.error('memory-backend-child: run by relay-bench.ts (needs an IPC channel)');
  process.exit(2);
}

const report = (message: ChildReport, sent?: () => void): void => sendToParent(message, sent);

let completed = 0;
let failed = 0;
let connectionCount = 0;
/** Sessions whose verification completed: spent, so dropped from the fake's bookkeeping on close. */
const spent = new Set<string>();

type Stage =
  | { readonly at: 'engage' }
  | { readonly at: 'card' }
  | { readonly at: 'rapdu'; readonly index: number }
  | { readonly at: 'connected' }
  | { readonly at: 'notified'; readonly index: number }
  | { readonly at: 'done' }
  | { readonly at: 'failed' };

/** Runs the script on one connection, driven by its frames. */
function script(connection: FakeConnection): void {
  connectionCount++;
  const peer = new BackendPeer(connection);
  let stage: Stage = { at: 'engage' };
  const fail = (detail: string): void => {
    failed++;
    stage = { at: 'failed' };
    report({ kind: 'failure', detail: `backend child, session ${peer.sessionId}: ${detail}` });
    peer.sendText(RESET);
  };
  const unexpected = (inbound: Inbound, wanted: string): void => {
    fail(`expected ${wanted}, got ${JSON.stringify(inbound.message).slice(0, 200)}`);
  };
  peer.hook = (inbound) => {
    const { op, message } = inbound;
    switch (stage.at) {
      case 'engage':
        if (op === 'engage') stage = { at: 'card' };
        else unexpected(inbound, 'engage');
        break;
      case 'card':
        if (op !== 'nfc_card_present') {
          unexpected(inbound, 'nfc_card_present');
          break;
        }
        stage = { at: 'rapdu', index: 0 };
        peer.sendText(APDU_TEXTS[0] ?? '');
        break;
      case 'rapdu': {
        const i = stage.index;
        if (op !== 'nfc_rapdu' || message.status !== 'ok' || message.data !== RAPDU_B64[i]) {
          unexpected(inbound, `nfc_rapdu ok for APDU ${i}`);
          break;
        }
        if (i + 1 < FULL_APDUS) {
          stage = { at: 'rapdu', index: i + 1 };
          peer.sendText(APDU_TEXTS[i + 1] ?? '');
        } else {
          stage = { at: 'connected' };
          peer.sendText(BLE_EXCHANGE);
        }
        break;
      }
      case 'connected':
        if (op !== 'ble_connected' || message.status !== 'ok' || message.role !== 'central') {
          unexpected(inbound, 'ble_connected ok/central');
          break;
        }
        stage = { at: 'notified', index: 0 };
        peer.sendText(WRITE_STATE_START);
        peer.sendText(WRITE_C2S);
        break;
      case 'notified': {
        const i = stage.index;
        if (op !== 'ble_notified' || !sameUuid(message.char, S2C_UUID) || message.data !== NOTIFIED_B64[i]) {
          unexpected(inbound, `ble_notified ${i} on s2c, in order and unaltered`);
          break;
        }
        if (i + 1 < FULL_NOTIFICATIONS) {
          stage = { at: 'notified', index: i + 1 };
          break;
        }
        stage = { at: 'done' };
        spent.add(peer.sessionId);
        completed++;
        peer.sendText(WRITE_STATE_END);
        peer.sendText(COMPLETE);
        break;
      }
      case 'done':
        unexpected(inbound, 'nothing after complete');
        break;
      case 'failed':
        break;
    }
    return true;
  };
  connection.socket.once('close', () => {
    // An armed session closed while idle (kiosk stopping, session renewed) is not a failure.
    const idle = stage.at === 'engage' || stage.at === 'card' || stage.at === 'done' || stage.at === 'failed';
    if (!idle) {
      failed++;
      report({ kind: 'failure', detail: `backend child, session ${peer.sessionId}: socket closed while waiting at ${stage.at}` });
    }
    prune();
  });
}

/** The fake keeps every connection, session and request for test assertions; drop the finished ones. */
function prune(): void {
  const connections = backend.connections;
  for (let i = connections.length - 1; i >= 0; i--) {
    const connection = connections[i];
    if (!connection?.isClosed) continue;
    connections.splice(i, 1);
    if (spent.delete(connection.session.id)) backend.sessions.delete(connection.session.id);
  }
  backend.http.splice(0);
  backend.handshakes.splice(0);
}

const backend = await FakeBackend.start();
backend.onConnection(script);

let stopping = false;
/** Closes every socket and the server, leaves the IPC channel; the process then ends by itself. */
async function stop(): Promise<void> {
  if (stopping) return;
  stopping = true;
  setTimeout(() => process.exit(0), 2_000).unref(); // in case a handle stays open
  await backend.stop();
  if (process.connected) process.disconnect();
}

process.on('message', (command: unknown) => {
  if (!isChildCommand(command)) {
    report({ kind: 'failure', detail: `backend child: unknown command ${JSON.stringify(command)}` });
    return;
  }
  if (command.kind === 'counts') {
    report({ kind: 'counts', completed, failed, connections: connectionCount });
    return;
  }
  report({ kind: 'counts', completed, failed, connections: connectionCount }, () => void stop());
});
// The bench ended or died: nothing is left to serve.
process.on('disconnect', () => void stop());

report({ kind: 'ready', baseUrl: backend.baseUrl, apiKey: backend.apiKey, pid: process.pid });
