/**
 * The staff screens' decisions as plain data and markup: the self-test's camera probe (fake media
 * devices), the diagnostics' event order and words for status keys and count names in every language, the
 * PIN change (current PIN asked, the host's field errors placed), and the settings form without the
 * request profile (which applies at once through `setProfile`).
 */
import { createElement, Fragment } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { I18nextProvider } from 'react-i18next';
import { describe, expect, it, vi } from 'vitest';
import { BACKEND_FAILURE_KINDS, FailureStage, NEEDS_STAFF_CODE_LIST } from '../../../src/common/backend-failure-kinds.js';
import type { DiagnosticEvent, KioskApi, Language, Settings } from '../../../src/common/kiosk-api.js';
import { LANGUAGES } from '../../../src/common/kiosk-api.js';
import { runSelfTest } from '../../../src/service/self-test.js';
import { createI18n } from '../../../src/renderer/i18n/index.js';
import { probeCamera, type CameraReport, type ProbeDevices } from '../../../src/renderer/staff/camera-probe.js';
import { countLabel, failureKindText, failureStageText, selfTestStatusText } from '../../../src/renderer/staff/diagnostic-texts.js';
import { breakAfterUnderscores, eventsForDisplay, MAX_EVENTS_SHOWN } from '../../../src/renderer/staff/DiagnosticsScreen.js';
import { PinChange, pinChangeErrors, pinHostErrors } from '../../../src/renderer/staff/PinChange.js';
import { buildUpdate, valuesFrom } from '../../../src/renderer/staff/settings-form.js';
import { fixtureSettings } from '../../support/screen-fixtures.js';

type T = (key: string, options?: Record<string, unknown>) => string;
const tFor = (language: Language): T => {
  const i18n = createI18n(language);
  return i18n.t.bind(i18n);
};
const t = tFor('en');

// ---------------------------------------------------------------- camera probe

interface FakeTrack {
  stopped: boolean;
  stop(): void;
}

function fakeMedia(options: { devices?: Partial<MediaDeviceInfo>[]; open?: 'ok' | Error | 'hang'; enumerate?: Error }): {
  media: ProbeDevices;
  tracks: FakeTrack[];
  constraints: MediaStreamConstraints[];
} {
  const tracks: FakeTrack[] = [];
  const constraints: MediaStreamConstraints[] = [];
  const media = {
    enumerateDevices: () =>
      options.enumerate ? Promise.reject(options.enumerate) : Promise.resolve((options.devices ?? []) as MediaDeviceInfo[]),
    getUserMedia: (c?: MediaStreamConstraints) => {
      constraints.push(c ?? {});
      const open = options.open ?? 'ok';
      if (open === 'hang') return new Promise<MediaStream>(() => undefined);
      if (open instanceof Error) return Promise.reject(open);
      const made = [0, 1].map((): FakeTrack => {
        const track: FakeTrack = {
          stopped: false,
          stop: () => {
            track.stopped = true;
          },
        };
        return track;
      });
      tracks.push(...made);
      return Promise.resolve({ getTracks: () => made } as unknown as MediaStream);
    },
  } satisfies ProbeDevices;
  return { media, tracks, constraints };
}

const named = (name: string): Error => Object.assign(new Error(name), { name });
const CAMERA = { kind: 'videoinput' as const, deviceId: 'cam-1', label: '' };

async function probe(media: ProbeDevices | undefined, deviceId: string | null = null, timeoutMs?: number): Promise<CameraReport[]> {
  const reports: CameraReport[] = [];
  await probeCamera(
    media,
    deviceId,
    (r) => {
      reports.push(r);
      return Promise.resolve();
    },
    timeoutMs,
  );
  return reports;
}

describe('self-test camera probe', () => {
  it('opens the chosen camera (exact), stops every track at once, reports active then off', async () => {
    const fake = fakeMedia({ devices: [{ kind: 'audioinput' }, CAMERA] });
    expect(await probe(fake.media, 'cam-1')).toEqual([{ state: 'active' }, { state: 'off' }]);
    expect(fake.constraints).toEqual([{ video: { deviceId: { exact: 'cam-1' } }, audio: false }]);
    expect(fake.tracks.length).toBe(2);
    expect(fake.tracks.every((track) => track.stopped)).toBe(true);
    // No camera chosen: the system default.
    const fallback = fakeMedia({ devices: [CAMERA] });
    await probe(fallback.media, null);
    expect(fallback.constraints).toEqual([{ video: true, audio: false }]);
  });

  it('no video input, or no media devices at all: missing, without opening anything', async () => {
    const fake = fakeMedia({ devices: [{ kind: 'audioinput' }, { kind: 'audiooutput' }] });
    expect(await probe(fake.media)).toEqual([{ state: 'missing', detail: 'no video input' }]);
    expect(fake.constraints).toEqual([]);
    expect((await probe(undefined)).map((r) => r.state)).toEqual(['missing']);
  });

  it('NotAllowedError → denied; NotFound / Overconstrained → missing; anything else → error with its name', async () => {
    const cases: [string, CameraReport['state']][] = [
      ['NotAllowedError', 'denied'],
      ['NotFoundError', 'missing'],
      ['OverconstrainedError', 'missing'],
      ['NotReadableError', 'error'],
      ['AbortError', 'error'],
    ];
    for (const [name, state] of cases) {
      const reports = await probe(fakeMedia({ devices: [CAMERA], open: named(name) }).media, 'cam-1');
      expect(reports, name).toEqual([{ state, detail: name }]);
    }
    expect(await probe(fakeMedia({ enumerate: named('SecurityError') }).media)).toEqual([{ state: 'denied', detail: 'SecurityError' }]);
  });

  it('a camera that neither opens nor fails is an error after the time limit', async () => {
    vi.useFakeTimers();
    try {
      const pending = probe(fakeMedia({ devices: [CAMERA], open: 'hang' }).media, null, 5_000);
      await vi.advanceTimersByTimeAsync(5_000);
      expect(await pending).toEqual([{ state: 'error', detail: 'the camera did not open within 5 s' }]);
    } finally {
      vi.useRealTimers();
    }
  });

  it('reports in order and awaits each report before the next (the host hears active before off)', async () => {
    const order: string[] = [];
    await probeCamera(fakeMedia({ devices: [CAMERA] }).media, null, async (r) => {
      await new Promise((done) => setTimeout(done, r.state === 'active' ? 20 : 0));
      order.push(r.state);
    });
    expect(order).toEqual(['active', 'off']);
  });
});

// ---------------------------------------------------------------- diagnostics

describe('diagnostics', () => {
  it('lists events newest first, as the service sends them, and sorts a host that sends them oldest first', () => {
    // DiagnosticsLog.snapshot (src/service/diagnostics.ts) sends the newest first.
    const fromService: DiagnosticEvent[] = [
      { at: 3_000, level: 'info', event: 'third' },
      { at: 2_000, level: 'warn', event: 'second' },
      { at: 1_000, level: 'info', event: 'first' },
    ];
    expect(eventsForDisplay(fromService).map((e) => e.event)).toEqual(['third', 'second', 'first']);
    expect(eventsForDisplay([...fromService].reverse()).map((e) => e.event)).toEqual(['third', 'second', 'first']);
    // Same time: the host's order stays.
    const tied: DiagnosticEvent[] = [
      { at: 5, level: 'info', event: 'b' },
      { at: 5, level: 'info', event: 'a' },
    ];
    expect(eventsForDisplay(tied).map((e) => e.event)).toEqual(['b', 'a']);
    const many = Array.from({ length: 500 }, (_, i): DiagnosticEvent => ({ at: i, level: 'info', event: `e${i}` }));
    const shown = eventsForDisplay(many);
    expect(shown.length).toBe(MAX_EVENTS_SHOWN);
    expect(shown[0]?.event).toBe('e499');
  });

  it('lets an event name wrap after its underscores only, so the detail column keeps room for its words', () => {
    const markup = (name: string): string => renderToStaticMarkup(createElement(Fragment, null, ...breakAfterUnderscores(name)));
    expect(markup('backend_unavailable')).toBe('backend_<wbr/>unavailable');
    expect(markup('verification_outcome_x')).toBe('verification_<wbr/>outcome_<wbr/>x');
    expect(markup('staff')).toBe('staff');
  });

  it('says every self-test status the service and the device adapters produce in words, in every language', () => {
    const statuses = [
      // src/service/self-test.ts
      'armed',
      'in_use',
      'unreachable',
      'config_error',
      'last_attempt_failed',
      'connecting',
      'stopped',
      'not_configured',
      'usable',
      'unusable',
      'adapter_error',
      ...NEEDS_STAFF_CODE_LIST,
      'not_reported',
      'active',
      'starting',
      'idle',
      'denied',
      'missing',
      'unplugged',
      'error',
      // availability reasons of src/devices/** (PC/SC and BLE adapters)
      'no_reader',
      'service_down',
      'not_installed',
      'closed',
      'powered_off',
      'unauthorized',
      'unsupported_platform',
      'no_adapter',
      'no_radio',
      // named in the review
      'offline',
      'unsupported',
    ];
    for (const language of LANGUAGES) {
      const i18n = createI18n(language);
      for (const status of statuses) {
        expect(i18n.exists(`diagnostics.status.${status}`, { lng: language, fallbackLng: false }), `${language}: ${status}`).toBe(true);
        expect(selfTestStatusText(status, i18n.t.bind(i18n)), `${language}: ${status}`).toBe(i18n.t(`diagnostics.status.${status}`));
      }
    }
    expect(selfTestStatusText('no_reader', t)).toBe('no reader');
    expect(selfTestStatusText('no_reader', tFor('es'))).toBe('sin lector');
    // Unknown: the key as it came.
    expect(selfTestStatusText('flux_capacitor_low', t)).toBe('flux_capacitor_low');
    expect(selfTestStatusText('toString', t)).toBe('toString');
  });

  it('says every backend failure kind and stage in words, in every language, each kind its own', () => {
    for (const language of LANGUAGES) {
      const i18n = createI18n(language);
      const tl = i18n.t.bind(i18n);
      for (const kind of BACKEND_FAILURE_KINDS)
        expect(i18n.exists(`diagnostics.backend.kind.${kind}`, { lng: language, fallbackLng: false }), `${language}: ${kind}`).toBe(true);
      for (const stage of FailureStage.options)
        expect(i18n.exists(`diagnostics.backend.stageName.${stage}`, { lng: language, fallbackLng: false }), `${language}: ${stage}`).toBe(
          true,
        );
      expect(new Set(BACKEND_FAILURE_KINDS.map((kind) => failureKindText(kind, tl))).size, language).toBe(BACKEND_FAILURE_KINDS.length);
      // Every code of a probed configuration failure has words as an error count too.
      for (const code of NEEDS_STAFF_CODE_LIST) expect(countLabel(`error.${code}`, tl), `${language}: ${code}`).not.toContain(code);
    }
    expect(failureKindText('socket_refused', t)).toBe('The backend refuses the session connection');
    expect(failureKindText('socket_refused', tFor('es'))).toBe('El servidor rechaza la conexión de sesión');
    expect(failureKindText('brand_new_kind', t)).toBe('brand_new_kind');
    expect(failureStageText('handshake', tFor('fr'))).toBe('ouverture de la connexion de session (WebSocket)');
  });

  it('the self-test of a real service produces no status without words', () => {
    const view = { phase: 'offline' } as Parameters<typeof runSelfTest>[0]['view'];
    const checks = runSelfTest({ view, ports: {}, camera: { state: 'off', worked: true } });
    expect(checks.map((c) => selfTestStatusText(c.status, t))).toEqual([
      'unreachable',
      'not set up',
      'not set up',
      'not set up',
      'off between customers, worked before',
    ]);
    expect(checks.map((c) => selfTestStatusText(c.status, tFor('fr')))).toEqual([
      'injoignable',
      'non configuré',
      'non configuré',
      'non configuré',
      'éteinte entre deux clients, a déjà fonctionné',
    ]);
  });

  it('a silent backend: the self-test says "not answering", whatever the screen shows (the error of a tap nobody answered, Offline)', () => {
    for (const phase of ['error', 'offline', 'engaging'] as const) {
      const view = {
        phase,
        backend: 'not_answering',
        error: { code: 'backend_not_answering', detail: 'no pong', retryable: true },
      } as Parameters<typeof runSelfTest>[0]['view'];
      const [backend] = runSelfTest({ view, ports: {}, camera: undefined });
      expect(backend, phase).toMatchObject({ name: 'backend', ok: false, status: 'not_answering', detail: 'no pong' });
      expect(selfTestStatusText(backend?.status ?? '', t)).toBe('not answering');
      expect(selfTestStatusText(backend?.status ?? '', tFor('es'))).toBe('no responde');
    }
  });

  it('names the counts the service keeps in words, and unknown ones as they are', () => {
    // The keys DiagnosticsLog.countVerification and KioskService.qrScanned count (src/service/).
    const names = [
      'verifications',
      'result.complete',
      'transport.nfc',
      'verdict.rejected',
      'reason.issuer_authentication_invalid',
      'reason.mystery_reason',
      'result.timeout',
      'transport.qr',
      'error.timeout',
      'scan.camera.accepted',
      'scan.paste.not_mdoc',
    ];
    const labels = Object.fromEntries(names.map((n) => [n, countLabel(n, t)]));
    expect(labels).toEqual({
      verifications: 'Verifications',
      'result.complete': 'Result: complete',
      'transport.nfc': 'Transport: NFC',
      'verdict.rejected': 'Verdict: not accepted',
      'reason.issuer_authentication_invalid': 'Reason: The issuer signature is not valid',
      'reason.mystery_reason': 'reason.mystery_reason',
      'result.timeout': 'Result: timed out',
      'transport.qr': 'Transport: QR code',
      'error.timeout': 'Error: timed out',
      'scan.camera.accepted': 'Scans (camera): accepted',
      'scan.paste.not_mdoc': 'Scans (pasted): not an mDL',
    });
    expect(countLabel('verdict.verified', tFor('fr'))).toBe('Verdict : vérifié');
    expect(countLabel('scan.scanner.not_waiting', tFor('es'))).toBe('Lecturas (escáner): el quiosco no esperaba');
    for (const unknown of [
      'qr_scans',
      'result.',
      'scan.camera',
      'scan.camera.accepted.x',
      'verdict.constructor',
      'reason.other',
      'nope.verified',
    ]) {
      expect(countLabel(unknown, t), unknown).toBe(unknown);
    }
  });
});

// ---------------------------------------------------------------- PIN change and settings

describe('PIN change', () => {
  it('asks for the current PIN, a well-formed new one, typed twice', () => {
    expect(pinChangeErrors({ current: '', next: '12345', again: '12345' }, t)).toEqual({
      current: { kind: 'host', message: 'Enter the current PIN.' },
    });
    expect(pinChangeErrors({ current: '1234', next: '12', again: '12' }, t)).toEqual({
      next: { kind: 'host', message: 'A PIN is 4 to 12 digits.' },
    });
    expect(pinChangeErrors({ current: '1234', next: '12345', again: '12346' }, t)).toEqual({
      again: { kind: 'host', message: 'The two PINs differ.' },
    });
    expect(pinChangeErrors({ current: '1234', next: '12345', again: '12345' }, t)).toEqual({});
  });

  it('puts the host refusing the current PIN under the current PIN field', () => {
    expect(
      pinHostErrors([
        { key: 'current', message: 'wrong PIN (3 attempts left)' },
        { key: 'next', message: 'set by the environment' },
        { key: '', message: 'odd' },
      ]),
    ).toEqual({
      byField: {
        current: { kind: 'host', message: 'wrong PIN (3 attempts left)' },
        next: { kind: 'host', message: 'set by the environment' },
      },
      other: ['odd'],
    });
  });

  it('renders a current-PIN field before the new PIN fields, all password fields', () => {
    const html = renderToStaticMarkup(
      createElement(I18nextProvider, { i18n: createI18n('en') }, createElement(PinChange, { api: {} as KioskApi })),
    );
    const labels = [...html.matchAll(/<label[^>]*>([^<]+)<\/label>/g)].map((m) => m[1]);
    expect(labels).toEqual(['Current PIN', 'New PIN', 'New PIN again']);
    expect([...html.matchAll(/<input[^>]*type="password"/g)].length).toBe(3);
    expect(html).toContain('autoComplete="current-password"');
  });
});

describe('settings form', () => {
  it('never sends the request profile through saveSettings (it applies at once through setProfile)', () => {
    const settings: Settings = { ...fixtureSettings(), locked: [] };
    const values = valuesFrom(settings);
    expect(Object.keys(values)).not.toContain('profile');
    const built = buildUpdate({ ...values, bleRoles: 'central' }, { ...settings, profile: 'identity' });
    expect(built.update).toEqual({ bleRoles: 'central' });
    expect(buildUpdate(values, { ...settings, profile: 'full' }).update).toEqual({});
  });
});
