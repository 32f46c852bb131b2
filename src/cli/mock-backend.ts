/**
 * `npm run mock-backend -- [options]`: the QA mock of the verification backend (src/qa/sim/mock-backend) with
 * its real ISO 18013-5 reader engine, on loopback by default. Prints its base URL on stdout, then the
 * protocol log (JSON lines) on stderr or to a file. Stops on SIGINT/SIGTERM.
 */
import { createWriteStream } from 'node:fs';
import { parseArgs } from 'node:util';
import { ZodError } from 'zod';
import {
  createIsoReaderEngineFactory,
  DEFAULT_LIFETIME_MS,
  DEFAULT_NFC_RETRY_LIMIT,
  defaultQaPkiDir,
  type FaultPlanInput,
  jsonLines,
  loadOrCreateQaPki,
  loadTrustDirectory,
  MOCK_BACKEND_PHASES as PHASES,
  qaTrustDir,
  startMockBackend,
} from '../qa/index.js';
import { errorText } from '../common/error-text.js';

const USAGE = `Usage: npm run mock-backend -- [options]

The mock verification backend for QA: both session endpoints, the session WebSocket and a real
ISO 18013-5 reader (NFC handover, BLE in both roles, session encryption, response verification).

Options:
  --port N               listen port (default 8787; 0 picks a free one)
  --host ADDR            listen address (default 127.0.0.1; anything else exposes a test service)
  --base-path PATH       path prefix of every endpoint (default none)
  --api-key KEY          accepted API key; repeat for several (or MOCK_BACKEND_API_KEYS=k1,k2)
  --trust-dir DIR        trusted IACA certificates (PEM or DER files); default: the QA PKI's IACA
                         (${defaultQaPkiDir()}/trust, created on first use, shared with the virtual phone)
  --lifetime-ms MS       session lifetime from creation (default ${DEFAULT_LIFETIME_MS})
  --nfc-retry-limit N    recoverable PC/SC failures per verification (default ${DEFAULT_NFC_RETRY_LIMIT})
  --chunk-size N         BLE characteristic size for what the backend sends, flag byte included (default 182)
  --protocol-log FILE    write the protocol log to FILE instead of stderr ('-' for stderr, 'off' for none)
  --log-payloads         log payload bytes in full (by default: length and a short SHA-256)
Faults (QA; also settable at run time with POST <base>/__mock/faults):
  --delay OP=MS          delay each backend message of OP (nfc_apdu, ble_write, complete, …); repeatable
  --fatal-after-apdu N   send error once N APDUs were answered
  --oversize-apdu-at N   send a 70,000-byte APDU in place of the N-th (a fatal reader error through pcscd)
  --error-on OP          send error when the kiosk sends OP
  --close-at PHASE       close the socket (1011) on entering PHASE (${PHASES.join(', ')})
  --conflict-next        answer the next WebSocket handshake with 409
  --malformed-next       send the next message as malformed JSON
  -h, --help             this text`;

function fail(message: string): never {
  process.stderr.write(`mock-backend: ${message}\n`);
  process.exit(2);
}

function integer(name: string, value: string | undefined, min: number): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min) fail(`--${name} takes a whole number ≥ ${min}`);
  return n;
}

async function main(): Promise<void> {
  let values;
  try {
    values = parseArgs({
      options: {
        port: { type: 'string' },
        host: { type: 'string' },
        'base-path': { type: 'string' },
        'api-key': { type: 'string', multiple: true },
        'trust-dir': { type: 'string' },
        'lifetime-ms': { type: 'string' },
        'nfc-retry-limit': { type: 'string' },
        'chunk-size': { type: 'string' },
        'protocol-log': { type: 'string' },
        'log-payloads': { type: 'boolean' },
        delay: { type: 'string', multiple: true },
        'fatal-after-apdu': { type: 'string' },
        'oversize-apdu-at': { type: 'string' },
        'error-on': { type: 'string' },
        'close-at': { type: 'string' },
        'conflict-next': { type: 'boolean' },
        'malformed-next': { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    }).values;
  } catch (e) {
    fail(`${errorText(e)}\n\n${USAGE}`);
  }
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const apiKeys = [...(values['api-key'] ?? []), ...(process.env.MOCK_BACKEND_API_KEYS?.split(',').filter((k) => k !== '') ?? [])];
  if (apiKeys.length === 0) fail('give at least one --api-key (or MOCK_BACKEND_API_KEYS)');

  let trustDir = values['trust-dir'];
  if (trustDir === undefined) {
    const pkiDir = defaultQaPkiDir();
    const { created } = await loadOrCreateQaPki(pkiDir);
    trustDir = qaTrustDir(pkiDir);
    process.stderr.write(`mock-backend: trusting the QA PKI's IACA in ${trustDir}${created ? ' (created)' : ''}\n`);
  }
  let trusted: Uint8Array[];
  try {
    trusted = loadTrustDirectory(trustDir);
  } catch (e) {
    fail(errorText(e));
  }

  const faults: FaultPlanInput = {
    delayMs: Object.fromEntries(
      (values.delay ?? []).map((d) => {
        const [op, ms] = d.split('=');
        if (!op || ms === undefined || !/^\d+$/.test(ms)) fail(`--delay takes OP=MS, got "${d}"`);
        return [op, Number(ms)];
      }),
    ),
    ...(values['fatal-after-apdu'] === undefined ? {} : { fatalAfterApdu: integer('fatal-after-apdu', values['fatal-after-apdu'], 0) }),
    ...(values['oversize-apdu-at'] === undefined ? {} : { oversizeApduAt: integer('oversize-apdu-at', values['oversize-apdu-at'], 1) }),
    ...(values['error-on'] === undefined ? {} : { errorOnOp: values['error-on'] }),
    ...(values['close-at'] === undefined ? {} : { closeAtPhase: values['close-at'] }),
    conflictNextConnect: values['conflict-next'] ?? false,
    malformedNext: values['malformed-next'] ?? false,
  } as FaultPlanInput;

  const logTarget = values['protocol-log'] ?? '-';
  const sink =
    logTarget === 'off'
      ? undefined
      : logTarget === '-'
        ? jsonLines((line) => process.stderr.write(line))
        : (() => {
            const stream = createWriteStream(logTarget, { flags: 'a' });
            return jsonLines((line) => stream.write(line));
          })();

  const chunkSize = integer('chunk-size', values['chunk-size'], 2);
  let backend;
  try {
    backend = await startMockBackend({
      host: values.host ?? '127.0.0.1',
      port: integer('port', values.port, 0) ?? 8787,
      basePath: values['base-path'] ?? '',
      apiKeys,
      engineFactory: createIsoReaderEngineFactory({
        trustedIacaCertificates: trusted,
        ...(chunkSize === undefined ? {} : { maxCharacteristicSize: chunkSize }),
      }),
      lifetimeMs: integer('lifetime-ms', values['lifetime-ms'], 1) ?? DEFAULT_LIFETIME_MS,
      nfcRetryLimit: integer('nfc-retry-limit', values['nfc-retry-limit'], 0) ?? DEFAULT_NFC_RETRY_LIMIT,
      faults,
      ...(sink ? { protocolLog: sink } : {}),
      logPayloads: values['log-payloads'] ?? false,
    });
  } catch (e) {
    if (e instanceof ZodError) fail(`invalid fault: ${e.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
    fail(errorText(e));
  }
  process.stdout.write(`${backend.url}\n`);
  const stop = (): void => {
    void backend.stop().then(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((e: unknown) => fail(errorText(e)));
