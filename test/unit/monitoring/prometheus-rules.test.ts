/**
 * The fleet's Prometheus rules (docs/monitoring/mdl-kiosk.rules.yml) under `promtool test rules`, on series
 * the kiosk's own metrics writer made (kiosk-series.ts): every cause that keeps a kiosk from verifying
 * fires its alert — a configuration error, refused credentials, a gateway refusing the session socket, no
 * Bluetooth, a dead reader, no way in, a backend that is down, a proxy refusing the tunnel, an untrusted
 * certificate, a crashed app, a computer that is off, metrics node_exporter cannot read, a kiosk that never
 * gets ready, a broken camera on a kiosk without NFC — and a healthy QR-only kiosk, a busy one, a backend
 * blip, a kiosk starting up and a camera that is off outside Ready or recovered stay silent; a broken camera
 * with NFC, or with a handheld scanner (target label `qr_scanner="yes"`), only warns (KioskCameraProblem).
 * The rule the installer guide used to print is kept as a case: it fired only when Bluetooth was gone.
 *
 * promtool is Debian's `prometheus` package (.ci/run installs it); without it these tests fail, naming it.
 */
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ScreenState } from '../../../src/common/kiosk-api.js';
import type { BackendFailure } from '../../../src/kiosk/backend-failure.js';
import type { VerificationReport } from '../../../src/kiosk/kiosk.js';
import { screenState, type FixtureName } from '../../support/screen-fixtures.js';
import { SimKiosk, type Minute } from './kiosk-series.js';

const RULES = resolve('docs/monitoring/mdl-kiosk.rules.yml');
/** Each kiosk runs this many minutes (one scrape a minute); the rules are evaluated at the last one. */
const MINUTES = 12;
const EVAL_AT = `${MINUTES - 1}m`;

/** The rule the installer guide printed before (§12): its `and` matches on every label. */
const OLD_GUIDE_RULES = `groups:
  - name: old-guide
    rules:
      - alert: KioskStale
        expr: time() - mdl_kiosk_last_update_time_seconds > 120
      - alert: KioskCannotVerify
        expr: >
          (time() - mdl_kiosk_start_time_seconds > 120) and (
            mdl_kiosk_phase{phase=~"config_error|cannot_verify"} == 1
            or sum without (device, reason) (mdl_kiosk_device_usable{device=~"bleCentral|blePeripheral"}) == 0
            or mdl_kiosk_device_usable{device="nfc", reason!="not_configured"} == 0)
`;

function promtool(args: string[], input?: string): { status: number | null; output: string } {
  const r = spawnSync('promtool', args, { encoding: 'utf8', input, timeout: 60_000 });
  if (r.error && (r.error as NodeJS.ErrnoException).code === 'ENOENT') {
    throw new Error(
      "promtool is missing: install Debian's prometheus package (apt-get install -y --no-install-recommends prometheus); the monitoring rules are tested with it and never skipped",
    );
  }
  if (r.error) throw r.error;
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

// ------------------------------------------------------------------ what the kiosk shows

type Devices = ScreenState['view']['devices'];
const HEALTHY: Devices = {
  nfc: { usable: true },
  qr: { usable: true },
  bleCentral: { usable: true },
  blePeripheral: { usable: false, reason: 'not_configured' },
};
const QR_ONLY: Devices = { ...HEALTHY, nfc: { usable: false, reason: 'not_configured' } };
const STARTING: Devices = {
  nfc: { usable: false, reason: 'starting' },
  qr: { usable: true },
  bleCentral: { usable: false, reason: 'starting' },
  blePeripheral: { usable: false, reason: 'not_configured' },
};

function show(name: FixtureName, patch: Partial<ScreenState['view']> = {}): ScreenState {
  const s = screenState(name, 0);
  return { ...s, testMode: false, view: { ...s.view, ...patch } };
}
const ready = (devices: Devices = HEALTHY): ScreenState => show('ready', { devices });
const starting = (): ScreenState => show('starting', { devices: STARTING });

function fail(kind: BackendFailure['kind'], stage: BackendFailure['stage'], status?: number): BackendFailure {
  return { kind, stage, ...(status === undefined ? {} : { status }), detail: `${kind} (simulated)` };
}

function verified(transport: 'nfc' | 'qr'): VerificationReport {
  return {
    transport,
    sessionId: null,
    result: 'complete',
    outcome: screenState('result_verified', 0).view.outcome,
    error: null,
    durationMs: 2_000,
    apdus: transport === 'nfc' ? 4 : 0,
    bleMessages: 12,
  };
}

const up: Minute = { state: ready(), healthy: true };

/** A kiosk that started at minute 0 and shows `minute` for the rest of the run (after a minute starting). */
function steady(instance: string, minute: Minute): SimKiosk {
  return new SimKiosk(instance)
    .boot(starting())
    .run({ state: starting(), noKiosk: minute.noKiosk ?? false })
    .run(minute, MINUTES - 1);
}

interface Case {
  readonly kiosk: SimKiosk;
  /** The alerts firing at the end: alert name, and its cause or kind label where it has one. */
  readonly firing: readonly (readonly [string, string?])[];
}

function cases(): Case[] {
  const configError = show('config_error', {
    error: {
      code: 'config_error',
      detail: 'the managed configuration file /etc/mdl-kiosk/config.json: profile: unknown profile',
      retryable: false,
    },
  });
  const noInput = show('cannot_verify', {
    devices: { ...HEALTHY, nfc: { usable: false, reason: 'no_reader' }, qr: { usable: false, reason: 'closed' } },
    error: { code: 'no_input', detail: 'no way in works', retryable: false },
  });
  return [
    // A managed file that cannot be used: no kiosk runs, no backend metrics; the phase says it.
    { kiosk: steady('config-error', { state: configError, noKiosk: true }), firing: [['KioskCannotVerify', 'config_error']] },
    // The backend refused the API key once: permanent, the kiosk stops trying until staff act.
    {
      kiosk: new SimKiosk('credentials-refused')
        .boot(starting())
        .run({ state: show('connecting'), failures: [fail('credentials_refused', 'create', 401)] })
        .run({ state: show('config_error') }, MINUTES - 1),
      firing: [
        ['KioskCannotVerify', 'config_error'],
        ['KioskBackendMisconfigured', 'credentials_refused'],
      ],
    },
    // A gateway answering 404 to every session socket: checked again every 15–30 s.
    {
      kiosk: steady('gateway-404', {
        state: show('config_error_gateway'),
        failures: [fail('socket_refused', 'handshake', 404), fail('socket_refused', 'handshake', 404)],
      }),
      firing: [['KioskCannotVerify', 'config_error'], ['KioskBackendMisconfigured', 'socket_refused'], ['KioskBackendFailing']],
    },
    {
      kiosk: steady('no-bluetooth', { state: show('cannot_verify'), healthy: true }),
      firing: [
        ['KioskCannotVerify', 'cannot_verify'],
        ['KioskCannotVerify', 'no_bluetooth'],
      ],
    },
    // The reader's PC/SC service is down; QR codes still work, so the kiosk shows Ready.
    {
      kiosk: steady('dead-reader', { state: ready({ ...HEALTHY, nfc: { usable: false, reason: 'service_down' } }), healthy: true }),
      firing: [['KioskCannotVerify', 'nfc_reader']],
    },
    {
      kiosk: steady('no-way-in', { state: noInput, healthy: true }),
      firing: [
        ['KioskCannotVerify', 'cannot_verify'],
        ['KioskCannotVerify', 'nfc_reader'],
      ],
    },
    {
      kiosk: steady('backend-down', { state: show('offline'), failures: [fail('unreachable', 'create'), fail('unreachable', 'create')] }),
      firing: [['KioskBackendFailing']],
    },
    {
      kiosk: steady('proxy-407', {
        state: show('config_error'),
        failures: [fail('proxy_refused', 'create', 407), fail('proxy_refused', 'create', 407)],
      }),
      firing: [['KioskCannotVerify', 'config_error'], ['KioskBackendMisconfigured', 'proxy_refused'], ['KioskBackendFailing']],
    },
    // An untrusted certificate: the kiosk shows Offline (tls is retried slowly), the alerts say why.
    {
      kiosk: steady('tls-untrusted', { state: show('offline'), failures: [fail('tls', 'create'), fail('tls', 'create')] }),
      firing: [['KioskBackendMisconfigured', 'tls'], ['KioskBackendFailing']],
    },
    {
      kiosk: new SimKiosk('crashed')
        .boot(starting())
        .run(up, 4)
        .hang(MINUTES - 4),
      firing: [['KioskStale']],
    },
    {
      kiosk: new SimKiosk('powered-off')
        .boot(starting())
        .run(up, 4)
        .off(MINUTES - 4),
      firing: [['KioskDown']],
    },
    {
      kiosk: new SimKiosk('metrics-unreadable').unreadable([{ name: 'node_textfile_scrape_error', labels: {}, value: '1' }], MINUTES),
      firing: [['KioskMetricsUnreadable']],
    },
    // A Bluetooth role and a reader that never finish starting: the kiosk stays Connecting.
    {
      kiosk: steady('stuck-starting', { state: show('connecting', { devices: STARTING }), healthy: true }),
      firing: [
        ['KioskCannotVerify', 'no_bluetooth'],
        ['KioskCannotVerify', 'nfc_reader'],
        ['KioskCannotVerify', 'not_ready'],
      ],
    },

    // The camera: kept as the service keeps it (a problem stays until the camera runs again, though the screen
    // turns it off whenever it leaves Ready), written by the real metrics writer.
    // A QR-only kiosk whose camera was unplugged: no way in, though the kiosk shows Ready; at the evaluation the
    // screen has left Ready (a backend blip) and turned the camera off — the problem stays.
    {
      kiosk: new SimKiosk('camera-qr-only')
        .boot(starting())
        .run({ state: starting() })
        .run({ state: ready(QR_ONLY), healthy: true, camera: ['starting', 'active'] }, 2)
        .run({ state: ready(QR_ONLY), healthy: true, camera: ['unplugged'] })
        .run({ state: ready(QR_ONLY), healthy: true, camera: ['off', 'starting', 'missing'] }, MINUTES - 5)
        .run({ state: show('offline', { devices: QR_ONLY }), failures: [fail('unreachable', 'create')], camera: ['off'] }),
      firing: [['KioskCannotVerify', 'camera'], ['KioskCameraProblem']],
    },
    // The same with a dead reader: both causes.
    {
      kiosk: steady('camera-and-reader', {
        state: ready({ ...HEALTHY, nfc: { usable: false, reason: 'no_reader' } }),
        healthy: true,
        camera: ['starting', 'error'],
      }),
      firing: [['KioskCannotVerify', 'nfc_reader'], ['KioskCannotVerify', 'camera'], ['KioskCameraProblem']],
    },
    // Camera access denied, NFC fine: customers still tap, so a warning only.
    {
      kiosk: steady('camera-denied-nfc-fine', { state: ready(), healthy: true, camera: ['starting', 'denied'] }),
      firing: [['KioskCameraProblem']],
    },
    // A QR-only kiosk with a handheld scanner, marked so in the scrape configuration: a warning only.
    {
      kiosk: new SimKiosk('camera-scanner-kiosk', { qr_scanner: 'yes' })
        .boot(starting())
        .run({ state: starting() })
        .run({ state: ready(QR_ONLY), healthy: true, camera: ['starting', 'missing'] }, MINUTES - 1),
      firing: [['KioskCameraProblem']],
    },

    // ------------------------------------------------------------------ silent
    // A QR-only kiosk serving customers by camera: the camera runs in Ready and is off everywhere else.
    {
      kiosk: new SimKiosk('camera-off-outside-ready')
        .boot(starting())
        .run({ state: starting() })
        .run({ state: ready(QR_ONLY), healthy: true, camera: ['starting', 'active'] })
        .run({ state: show('result_verified', { devices: QR_ONLY }), verifications: [verified('qr')], camera: ['off'] }, 2)
        .run({ state: ready(QR_ONLY), healthy: true, camera: ['starting', 'active'] })
        .run({ state: show('result_rejected', { devices: QR_ONLY }), verifications: [verified('qr')], camera: ['off'] }, MINUTES - 5),
      firing: [],
    },
    // A camera error that cleared when the camera ran again a minute later.
    {
      kiosk: new SimKiosk('camera-recovered')
        .boot(starting())
        .run({ state: starting() })
        .run({ state: ready(QR_ONLY), healthy: true, camera: ['starting', 'active'] }, MINUTES - 4)
        .run({ state: ready(QR_ONLY), healthy: true, camera: ['error', 'off'] })
        .run({ state: ready(QR_ONLY), healthy: true, camera: ['starting', 'active'] })
        .run({ state: show('result_verified', { devices: QR_ONLY }), verifications: [verified('qr')], camera: ['off'] }),
      firing: [],
    },
    {
      kiosk: new SimKiosk('qr-only')
        .boot(starting())
        .run({ state: starting() })
        .run({ state: ready(QR_ONLY), failures: [fail('unreachable', 'create')] })
        .run({ state: ready(QR_ONLY), healthy: true }, 3)
        .run({ state: show('result_verified', { devices: QR_ONLY }), verifications: [verified('qr')] }, 2)
        .run({ state: ready(QR_ONLY), healthy: true }, MINUTES - 7),
      firing: [],
    },
    {
      kiosk: new SimKiosk('busy')
        .boot(starting())
        .run({ state: starting() })
        .run({ state: show('engaging_nfc'), healthy: true })
        .run({ state: show('transferring_receiving') })
        .run({ state: show('result_verified'), verifications: [verified('nfc')] })
        .run({ state: show('remove_phone') })
        .run({ state: show('result_rejected'), verifications: [verified('qr')] })
        .run(up, MINUTES - 6),
      firing: [],
    },
    {
      kiosk: new SimKiosk('backend-blip')
        .boot(starting())
        .run(up, 4)
        .run({ state: show('offline'), failures: [fail('unreachable', 'create'), fail('timeout', 'create')] })
        .run(up, MINUTES - 5),
      firing: [],
    },
    // Ran for a while, restarted a minute before the evaluation: starting, no devices, no backend yet.
    {
      kiosk: new SimKiosk('restarting')
        .boot(starting())
        .run(up, MINUTES - 2)
        .boot(starting())
        .run({ state: starting(), noKiosk: true }, 2),
      firing: [],
    },
    // Installed a minute before the evaluation: node_exporter ran, the kiosk's file appeared just now.
    {
      kiosk: new SimKiosk('fresh-install')
        .unreadable([], MINUTES - 2)
        .boot(starting())
        .run({ state: starting(), noKiosk: true }, 2),
      firing: [],
    },
  ];
}

/** A promtool unit-test file (JSON is YAML) for these kiosks, asserting exactly the alerts firing at the end. */
function unitTest(ruleFile: string, kiosks: readonly Case[], firing: (c: Case) => readonly (readonly [string, string?])[]): string {
  const samples = kiosks.flatMap((c) =>
    firing(c).map(([alertname, detail]) => {
      const extra = detail === undefined ? '' : alertname === 'KioskBackendMisconfigured' ? `,kind="${detail}"` : `,cause="${detail}"`;
      return { labels: `{alertname="${alertname}",instance="${c.kiosk.instance}"${extra}}`, value: 1 };
    }),
  );
  return JSON.stringify({
    rule_files: [ruleFile],
    evaluation_interval: '1m',
    tests: [
      {
        interval: '1m',
        input_series: kiosks.flatMap((c) => c.kiosk.inputSeries()),
        promql_expr_test: [
          { expr: 'count by (alertname, instance, cause, kind) (ALERTS{alertstate="firing"})', eval_time: EVAL_AT, exp_samples: samples },
        ],
      },
    ],
  });
}

let dir: string;
let all: Case[] = [];
beforeAll(async () => {
  promtool(['--version']);
  dir = await mkdtemp(join(tmpdir(), 'mdl-kiosk-promtool-'));
  all = cases();
});
afterAll(async () => {
  for (const c of all) await c.kiosk.stop();
  await rm(dir, { recursive: true, force: true });
});

describe('the monitoring rules (promtool)', () => {
  it('promtool check rules: the file is valid', () => {
    const r = promtool(['check', 'rules', RULES]);
    expect(r.output).toContain('SUCCESS');
    expect(r.status, r.output).toBe(0);
  });

  it('every cause that keeps a kiosk from verifying fires; healthy, busy, blipping and starting kiosks stay silent', async () => {
    for (const c of all) expect(c.kiosk.instance === 'metrics-unreadable' || c.kiosk.texts().length > 0).toBe(true);
    const file = join(dir, 'kiosks.test.yml');
    await writeFile(
      file,
      unitTest(RULES, all, (c) => c.firing),
    );
    const r = promtool(['test', 'rules', file]);
    expect(r.status, r.output).toBe(0);
    expect(r.output).toContain('SUCCESS');
  });

  it('promtool notices a wrong expectation (the check above can fail): a silent kiosk said to fire', async () => {
    const file = join(dir, 'wrong.test.yml');
    await writeFile(
      file,
      unitTest(RULES, all, (c) => (c.kiosk.instance === 'qr-only' ? [['KioskCannotVerify', 'nfc_reader']] : c.firing)),
    );
    const r = promtool(['test', 'rules', file]);
    expect(r.status).not.toBe(0);
    expect(r.output).toContain('qr-only');
  });

  it("the guide's old rule fired only when Bluetooth was gone: never for a config error or a dead reader", async () => {
    const old = join(dir, 'old-guide.rules.yml');
    await writeFile(old, OLD_GUIDE_RULES);
    const bluetoothGone = new Set(['no-bluetooth', 'stuck-starting']);
    const file = join(dir, 'old.test.yml');
    await writeFile(
      file,
      unitTest(old, all, (c) => [
        ...(bluetoothGone.has(c.kiosk.instance) ? [['KioskCannotVerify'] as const] : []),
        ...(c.kiosk.instance === 'crashed' ? [['KioskStale'] as const] : []),
      ]),
    );
    const r = promtool(['test', 'rules', file]);
    expect(r.status, r.output).toBe(0);
    // …where the shipped rules fire for these kiosks (the test above).
    const shipped = all.filter((c) => c.firing.some(([name]) => name === 'KioskCannotVerify')).map((c) => c.kiosk.instance);
    expect(shipped).toEqual(expect.arrayContaining(['config-error', 'dead-reader', 'no-way-in', 'credentials-refused', 'gateway-404']));
  });

  it('promtool check metrics: the writer output of every kiosk above passes the linter', () => {
    for (const c of all) {
      const text = c.kiosk.texts().at(-1);
      if (text === undefined) continue;
      const r = promtool(['check', 'metrics'], text);
      expect(r.status, `${c.kiosk.instance}: ${r.output}`).toBe(0);
      expect(r.output.trim(), c.kiosk.instance).toBe('');
    }
  });
});
