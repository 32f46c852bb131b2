/**
 * The fleet bench's backend: the mock backend with its real ISO 18013-5 reader engine, in a process of its
 * own (forked by fleet.ts with an IPC channel) so that 1,000 kiosks in the bench's process do not share
 * its event loop. Every request that reaches it (`POST /sessions`, upgrades, `GET /sessions/{id}`, anything
 * else) is timestamped on arrival by the mock's `onRequest` hook and sent to the bench in batches.
 *
 * Arguments: `--kiosks N --seed S` (the API keys, fleet-protocol.ts). It loads, reports `loaded`, and listens
 * on 127.0.0.1 when the bench says `listen` (so that a restart after an outage is not delayed by loading).
 * On `down` — or when the IPC channel closes — it stops listening and destroys every connection (the
 * kiosks then meet a refused connection: a real outage), sends what it still holds and exits.
 */
import { parseArgs } from 'node:util';
import { createIsoReaderEngineFactory } from '../../src/qa/sim/mock-backend/reader/index.js';
import { startMockBackend, type MockBackend } from '../../src/qa/sim/mock-backend/server.js';
import { getTestPki } from '../../src/qa/sim/virtual-wallet/pki.js';
import { fleetApiKey, isFleetChildCommand, type FleetChildReport, type WireArrival } from './fleet-protocol.js';
import { sendToParent } from './bench-tools.js';

if (!process.send) {
  console.error('fleet-backend-child: run by the fleet bench (needs an IPC channel)');
  process.exit(2);
}

const { values } = parseArgs({ options: { kiosks: { type: 'string' }, seed: { type: 'string' } }, strict: true });
const kiosks = Number(values.kiosks);
const seed = values.seed ?? '';
if (!Number.isInteger(kiosks) || kiosks < 1 || seed === '') {
  console.error('fleet-backend-child: --kiosks N --seed S');
  process.exit(2);
}

const report = (message: FleetChildReport, sent?: () => void): void => sendToParent(message, sent);

const apiKeys = Array.from({ length: kiosks }, (_, i) => fleetApiKey(seed, i));
const engineFactory = createIsoReaderEngineFactory({ trustedIacaCertificates: [(await getTestPki()).iaca.der] });

let pending: WireArrival[] = [];
function flush(): void {
  if (pending.length === 0) return;
  const arrivals = pending;
  pending = [];
  report({ kind: 'arrivals', arrivals });
}
// Batches, not a message per request: a recovering fleet sends a hundred requests a second.
const flushTimer = setInterval(flush, 100);

let backend: MockBackend | undefined;
let stopping = false;

async function listen(port: number): Promise<void> {
  try {
    backend = await startMockBackend({
      host: '127.0.0.1',
      port,
      apiKeys,
      engineFactory,
      onRequest: (a) => pending.push([a.at, a.exchange, a.apiKeyIndex, a.sessionId ?? null]),
    });
  } catch (e) {
    report(
      { kind: 'failure', detail: `backend child: cannot listen on 127.0.0.1:${port}: ${e instanceof Error ? e.message : String(e)}` },
      () => process.exit(1),
    );
    return;
  }
  report({ kind: 'ready', port: backend.port, listeningAt: Date.now() });
}

async function down(): Promise<void> {
  if (stopping) return;
  stopping = true;
  setTimeout(() => process.exit(0), 5_000).unref(); // should a handle stay open
  const stoppingAt = Date.now();
  await backend?.stop();
  clearInterval(flushTimer);
  flush();
  report({ kind: 'down', stoppingAt }, () => process.exit(0));
}

process.on('message', (command: unknown) => {
  if (!isFleetChildCommand(command)) {
    report({ kind: 'failure', detail: `backend child: unknown command ${JSON.stringify(command).slice(0, 200)}` });
    return;
  }
  if (command.kind === 'listen') void listen(command.port);
  else void down();
});
// The bench ended or died: nothing is left to serve.
process.on('disconnect', () => void down());

report({ kind: 'loaded', pid: process.pid });
