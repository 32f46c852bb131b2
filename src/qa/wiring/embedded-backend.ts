/**
 * The embedded default backend: when nothing is configured, the headless relay (and the app) run against
 * the QA mock backend started in the same process on loopback, with a random API key, trusting the given
 * IACA certificates (the virtual phone's).
 *
 * QA can take it off the air and bring it back on the same address (`goOffline` / `comeBack`), so the
 * kiosk's "offline, retrying" path is exercised as a counter sees it; the fault plan survives the restart.
 * QA can also make it silent (`goSilent` / `answerAgain`): the kiosk reaches it through a loopback gate
 * (silent-gate.ts) that then takes every byte and answers nothing, closing nothing — how real outages
 * begin, and what the kiosk's "not answering" detection is for (docs/protocol.md §10.2).
 */
import { randomBytes } from 'node:crypto';
import type { FaultController, FaultPlanInput } from '../sim/mock-backend/faults.js';
import { createIsoReaderEngineFactory } from '../sim/mock-backend/reader/index.js';
import { startMockBackend, type MockBackend } from '../sim/mock-backend/server.js';
import { SilentGate } from './silent-gate.js';

export interface EmbeddedBackendOptions {
  /** 0 (default) picks a free port. */
  readonly port?: number;
  readonly faults?: FaultPlanInput;
  /** Session lifetime (QA "short expiry"); the mock's default otherwise. */
  readonly lifetimeMs?: number;
}

export interface EmbeddedBackend {
  /** The running mock backend (after `comeBack`, the new one). */
  readonly backend: MockBackend;
  readonly apiKey: string;
  /** Base URL (the silent gate's); stays the same across `goOffline` / `comeBack` and `goSilent` / `answerAgain`. */
  readonly url: string;
  readonly faults: FaultController;
  readonly online: boolean;
  /** Takes the traffic and answers nothing (`goSilent`). */
  readonly silent: boolean;
  /** Nothing answers from now on, and nothing is closed: open connections swallow their bytes. */
  goSilent(): void;
  /** Answers again; the connections that went silent are reset (their lost bytes cannot be resumed). */
  answerAgain(): void;
  /** Stops listening: the kiosk finds the backend unreachable. */
  goOffline(): Promise<void>;
  /** Listens again on the same port, with the same key, trust and fault plan. */
  comeBack(): Promise<void>;
  stop(): Promise<void>;
}

export async function startEmbeddedBackend(
  trustedIacaCertificates: readonly Uint8Array[],
  options: EmbeddedBackendOptions = {},
): Promise<EmbeddedBackend> {
  const apiKey = randomBytes(18).toString('base64url');
  const engineFactory = createIsoReaderEngineFactory({ trustedIacaCertificates });
  const start = (port: number, faults: FaultPlanInput | undefined): Promise<MockBackend> =>
    startMockBackend({
      host: '127.0.0.1',
      port,
      apiKeys: [apiKey],
      engineFactory,
      ...(faults ? { faults } : {}),
      ...(options.lifetimeMs === undefined ? {} : { lifetimeMs: options.lifetimeMs }),
    });
  let current = await start(0, options.faults);
  const port = current.port;
  // The kiosk talks to the gate, on the port QA asked for; the mock backend itself listens on a free one.
  const gate = await SilentGate.open(port, options.port ?? 0);
  const mockUrl = new URL(current.url);
  const url = `http://127.0.0.1:${gate.port}${mockUrl.pathname === '/' ? '' : mockUrl.pathname}`;
  let online = true;
  let stopped = false;
  return {
    get backend() {
      return current;
    },
    apiKey,
    url,
    get faults() {
      return current.faults;
    },
    get online() {
      return online;
    },
    get silent() {
      return gate.silent;
    },
    goSilent() {
      if (!stopped) gate.silence();
    },
    answerAgain() {
      gate.answer();
    },
    async goOffline() {
      if (!online || stopped) return;
      online = false;
      await current.stop();
    },
    async comeBack() {
      if (online || stopped) return;
      current = await start(port, current.faults.current);
      online = true;
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await gate.close();
      if (online) await current.stop();
      online = false;
    },
  };
}
