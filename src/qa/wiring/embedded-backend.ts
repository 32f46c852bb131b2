/**
 * The embedded default backend: when nothing is configured, the headless relay (and the app) run against
 * the QA mock backend started in the same process on loopback, with a random API key, trusting the given
 * IACA certificates (the virtual phone's).
 */
import { randomBytes } from 'node:crypto';
import { createIsoReaderEngineFactory } from '../sim/mock-backend/reader/index.js';
import { startMockBackend, type MockBackend } from '../sim/mock-backend/server.js';

export interface EmbeddedBackend {
  readonly backend: MockBackend;
  readonly apiKey: string;
}

export async function startEmbeddedBackend(trustedIacaCertificates: readonly Uint8Array[]): Promise<EmbeddedBackend> {
  const apiKey = randomBytes(18).toString('base64url');
  const backend = await startMockBackend({
    host: '127.0.0.1',
    port: 0,
    apiKeys: [apiKey],
    engineFactory: createIsoReaderEngineFactory({ trustedIacaCertificates }),
  });
  return { backend, apiKey };
}
