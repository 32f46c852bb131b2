/**
 * The screen's side of the desktop application: its own errors forwarded (window errors, unhandled
 * rejections, the error boundary that restarts the screen), bounded and without an object's contents;
 * the diagnostics' Application card; and locked settings that say which source sets them.
 */
import { createElement } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { I18nextProvider } from 'react-i18next';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { RendererError, type AppStatus, type BackendFailures, type Language, type Settings } from '../../../src/common/kiosk-api.js';
import {
  createErrorReporter,
  forwardWindowErrors,
  MAX_REPORTS_PER_MINUTE,
  rendererError,
} from '../../../src/renderer/api/error-reporting.js';
import { RestartingScreen, RESTART_SCREEN_MS, ScreenErrorBoundary } from '../../../src/renderer/components/ScreenErrorBoundary.js';
import { createI18n } from '../../../src/renderer/i18n/index.js';
import { AppStatusCard } from '../../../src/renderer/staff/AppStatusCard.js';
import { BackendFailuresCard } from '../../../src/renderer/staff/BackendFailuresCard.js';
import { backendItem } from '../../../src/renderer/staff/status-items.js';
import { NeedsStaffScreen } from '../../../src/renderer/screens/NeedsStaffScreen.js';
import { countLabel } from '../../../src/renderer/staff/diagnostic-texts.js';
import { Field } from '../../../src/renderer/staff/Field.js';
import { lockOf } from '../../../src/renderer/staff/settings-form.js';
import { DisconnectedScreen } from '../../../src/renderer/screens/DisconnectedScreen.js';
import { StatusBar } from '../../../src/renderer/staff/StatusBar.js';
import { fixtureSettings, screenState } from '../../support/screen-fixtures.js';

afterEach(() => {
  vi.useRealTimers();
});

const tFor = (language: Language): ((key: string, options?: Record<string, unknown>) => string) => {
  const i18n = createI18n(language);
  return i18n.t.bind(i18n);
};

function html(language: Language, element: ReturnType<typeof createElement>): string {
  return renderToStaticMarkup(createElement(I18nextProvider, { i18n: createI18n(language) }, element));
}

describe('rendererError', () => {
  it("keeps an error's name, message and stack, within the contract's bounds", () => {
    const error = new TypeError('x is undefined');
    const args = rendererError('error', error, '\n    at Screen\n    at App');
    expect(RendererError.parse(args)).toEqual(args);
    expect(args.message).toBe('TypeError: x is undefined');
    expect(args.stack).toContain('TypeError: x is undefined');
    expect(args.stack).toMatch(/component stack:\n {4}at Screen\n {4}at App$/);
    const long = rendererError('render', new Error('m'.repeat(2_000)), 's'.repeat(10_000));
    expect(long.message).toHaveLength(500);
    expect(long.stack).toHaveLength(4_000);
    expect(RendererError.safeParse(long).success).toBe(true);
  });

  it('sends only the kind of a non-error value (it could be a state with personal data)', () => {
    expect(rendererError('unhandledrejection', { view: { outcome: { family_name: 'Doe' } } })).toEqual({
      kind: 'unhandledrejection',
      message: 'non-error value (Object)',
    });
    expect(rendererError('unhandledrejection', Object.create(null))).toEqual({
      kind: 'unhandledrejection',
      message: 'non-error value (object)',
    });
    expect(rendererError('unhandledrejection', 42)).toEqual({ kind: 'unhandledrejection', message: 'non-error value (number)' });
    expect(rendererError('unhandledrejection', undefined)).toEqual({ kind: 'unhandledrejection', message: 'undefined' });
    expect(rendererError('error', 'thrown text')).toEqual({ kind: 'error', message: 'thrown text' });
    expect(rendererError('error', '')).toEqual({ kind: 'error', message: '(no message)' });
  });
});

describe('forwarding window errors', () => {
  it('reports error and unhandledrejection events, and stops on undo', () => {
    const target = new EventTarget();
    const reports: RendererError[] = [];
    const undo = forwardWindowErrors(target, (e) => reports.push(e));
    target.dispatchEvent(
      Object.assign(new Event('error'), { error: new RangeError('bad index'), message: 'Uncaught RangeError: bad index' }),
    );
    target.dispatchEvent(
      Object.assign(new Event('error'), { error: null, message: 'Script error.', filename: 'app://kiosk/assets/index.js', lineno: 12 }),
    );
    target.dispatchEvent(Object.assign(new Event('unhandledrejection'), { reason: new Error('socket closed') }));
    expect(reports.map((r) => [r.kind, r.message])).toEqual([
      ['error', 'RangeError: bad index'],
      ['error', 'Script error. (app://kiosk/assets/index.js:12)'],
      ['unhandledrejection', 'Error: socket closed'],
    ]);
    undo();
    target.dispatchEvent(Object.assign(new Event('error'), { error: new Error('after') }));
    expect(reports).toHaveLength(3);
  });

  it('the reporter sends at most 30 a minute and swallows a failed send (no loop)', async () => {
    let now = 0;
    const sent: RendererError[] = [];
    const report = createErrorReporter(
      (e) => {
        sent.push(e);
        return Promise.reject(new Error('not connected'));
      },
      () => now,
    );
    for (let i = 0; i < 40; i++) report({ kind: 'error', message: `e${i}` });
    expect(sent).toHaveLength(MAX_REPORTS_PER_MINUTE);
    now = 60_000;
    report({ kind: 'error', message: 'next minute' });
    expect(sent.at(-1)?.message).toBe('next minute');
    const throwing = createErrorReporter(() => {
      throw new Error('no api');
    });
    expect(() => throwing({ kind: 'error', message: 'x' })).not.toThrow();
    await new Promise((r) => setTimeout(r, 0)); // a rejected send would surface as an unhandled rejection here
  });
});

describe('the error boundary', () => {
  it('reports a render error with its component stack, shows the restarting screen, then mounts the app afresh', () => {
    vi.useFakeTimers();
    const reports: RendererError[] = [];
    const boundary = new ScreenErrorBoundary({ report: (e) => reports.push(e), children: null });
    boundary.setState = (update) => {
      const patch = typeof update === 'function' ? update(boundary.state, boundary.props) : update;
      boundary.state = { ...boundary.state, ...patch };
    };
    boundary.state = { ...boundary.state, ...ScreenErrorBoundary.getDerivedStateFromError() };
    boundary.componentDidCatch(new Error('cannot read outcome'), { componentStack: '\n    at ResultScreen\n    at App' });
    expect(reports).toEqual([
      {
        kind: 'render',
        message: 'Error: cannot read outcome',
        stack: expect.stringContaining('component stack:\n    at ResultScreen') as string,
      },
    ]);
    expect(boundary.state).toEqual({ failed: true, generation: 0 });
    vi.advanceTimersByTime(RESTART_SCREEN_MS - 1);
    expect(boundary.state.failed).toBe(true);
    vi.advanceTimersByTime(1);
    expect(boundary.state).toEqual({ failed: false, generation: 1 });
    boundary.componentWillUnmount();
    expect(vi.getTimerCount()).toBe(0);
  });

  it('the restarting screen is calm, has one heading and a status line, in every language', () => {
    const en = html('en', createElement(RestartingScreen));
    expect(en).toContain('data-screen="restarting"');
    expect([...en.matchAll(/<h1/g)]).toHaveLength(1);
    expect(en).toContain('One moment, please');
    expect(en).toMatch(/role="status"[^>]*>The screen is restarting\./);
    expect(html('es', createElement(RestartingScreen))).toContain('La pantalla se está reiniciando.');
    expect(html('fr', createElement(RestartingScreen))).toContain('L’écran redémarre.');
  });
});

describe('the Application card', () => {
  const app: AppStatus = {
    flavour: 'production',
    secretsProtection: 'os-encrypted',
    secretsProblem: 'the stored API key cannot be read: <b>cannot be decrypted</b>',
    managedConfigPath: '/etc/mdl-kiosk/config.json',
    managedKeys: ['backend.baseUrl', 'app.updates.channel'],
    logDir: '/home/kiosk/.config/mdl-kiosk/logs',
    healthFile: '/home/kiosk/.config/mdl-kiosk/health.json',
    updates: { state: 'downloaded', version: '1.2.0', checkedAt: Date.UTC(2025, 5, 2, 10, 0), error: 'net::ERR_TIMED_OUT' },
  };
  const dateTime = (at: number): string => new Date(at).toISOString();

  it('shows the build, secret storage and its problem, the managed file and keys, logs, health and updates', () => {
    const out = html('en', createElement(AppStatusCard, { app, dateTime }));
    expect(out).toMatch(/<section[^>]*aria-labelledby="app-status-title"/);
    expect(out).toContain('<h2 id="app-status-title">Application</h2>');
    expect(out).toContain('data-app="flavour">production<');
    expect(out).toContain('data-app="secrets">encrypted by the operating system<');
    // React escapes what the host sent.
    expect(out).toContain('data-app="secrets-problem">the stored API key cannot be read: &lt;b&gt;cannot be decrypted&lt;/b&gt;<');
    expect(out).toContain('data-app="managed-file">/etc/mdl-kiosk/config.json<');
    expect(out).toContain('data-app="managed-keys">backend.baseUrl, app.updates.channel<');
    expect(out).toContain('data-app="log-dir">/home/kiosk/.config/mdl-kiosk/logs<');
    expect(out).toContain('data-app="health-file">/home/kiosk/.config/mdl-kiosk/health.json<');
    expect(out).toMatch(
      /data-app="updates" data-state="downloaded">downloaded, installs when the kiosk is idle.*Version 1\.2\.0.*Last checked 2025-06-02T10:00:00\.000Z/,
    );
    expect(out).toContain('data-app="update-error">net::ERR_TIMED_OUT<');
  });

  it('leaves out what is not there, and speaks every language', () => {
    const bare: AppStatus = { flavour: 'qa', secretsProtection: 'file-permissions', managedKeys: [] };
    const out = html('en', createElement(AppStatusCard, { app: bare, dateTime }));
    expect(out).toContain('data-app="managed-file">none<');
    for (const absent of ['secrets-problem', 'managed-keys', 'log-dir', 'health-file', 'updates', 'update-error'])
      expect(out).not.toContain(`data-app="${absent}"`);
    expect(out).toContain('QA (test build)');
    expect(html('es', createElement(AppStatusCard, { app, dateTime }))).toContain('cifrada por el sistema operativo');
    expect(html('fr', createElement(AppStatusCard, { app: { ...bare, secretsProtection: 'memory' }, dateTime }))).toContain(
      'en mémoire seulement',
    );
  });

  it('says plainly when the key is only obfuscated (basic_text) and which private files others could read', () => {
    const exposed: AppStatus = {
      flavour: 'production',
      secretsProtection: 'basic-text',
      managedKeys: ['app.allowBasicTextSecrets'],
      permissionProblems: [
        '/home/kiosk/.config/mDL Kiosk/settings.json was readable by other users (mode 0644); set to 0600 — the staff PIN hash may have been read: change the PIN',
      ],
    };
    const out = html('en', createElement(AppStatusCard, { app: exposed, dateTime }));
    expect(out).toMatch(/fact-row--problem"><dt>API key storage<\/dt><dd data-app="secrets">NOT protected: obfuscated with a fixed key/);
    expect(out).not.toContain('encrypted by the operating system');
    expect(out).toContain(
      'data-app="permission-problems"><p>/home/kiosk/.config/mDL Kiosk/settings.json was readable by other users (mode 0644)',
    );
    expect(html('es', createElement(AppStatusCard, { app: exposed, dateTime }))).toContain('SIN protección');
    expect(out).not.toContain('data-app="camera-access"');
    const camera = html('en', createElement(AppStatusCard, { app: { ...exposed, cameraAccess: 'restricted' }, dateTime }));
    expect(camera).toMatch(
      /fact-row--problem"><dt>Camera permission \(operating system\)<\/dt><dd data-app="camera-access">restricted by a device-management profile</,
    );
    expect(html('en', createElement(AppStatusCard, { app: { ...exposed, cameraAccess: 'granted' }, dateTime }))).toContain(
      'data-app="camera-access">allowed<',
    );
    expect(html('en', createElement(AppStatusCard, { app: { ...exposed, cameraAccess: 'not_applicable' }, dateTime }))).not.toContain(
      'camera-access',
    );
    expect(html('fr', createElement(AppStatusCard, { app: exposed, dateTime }))).toContain('Fichiers lisibles par d’autres utilisateurs');
  });

  it("names the screen's error counts", () => {
    const t = createI18n('en').t.bind(createI18n('en'));
    expect(countLabel('renderer.render', t)).toBe('Screen errors: display failed');
    expect(countLabel('renderer.dropped', t)).toBe('Screen errors: not logged (too many)');
    expect(countLabel('renderer.other', t)).toBe('renderer.other');
  });
});

describe('the Backend connection card and Needs staff for a gateway that refuses the session socket', () => {
  const dateTime = (at: number): string => new Date(at).toISOString();
  const lastFailure = {
    kind: 'socket_refused',
    stage: 'handshake',
    status: 404,
    detail: 'the backend refuses the session connection (HTTP 404) — check the WebSocket route of the gateway <b>',
    at: Date.UTC(2026, 10, 27, 9, 30, 5),
  } as const;
  const refusing: BackendFailures = {
    lastFailure,
    consecutive: 3,
    totals: { socket_refused: 3, unreachable: 1 },
    requestsLastMinute: 6,
    maxRequestsPerMinute: 20,
  };

  it('names the last failure (kind in words, HTTP status, step, when, the detail), how many in a row and the budget in use', () => {
    const out = html('en', createElement(BackendFailuresCard, { backend: refusing, dateTime }));
    expect(out).toContain('<h2 id="backend-failures-title">Backend connection</h2>');
    expect(out).toContain('data-failing="true"');
    expect(out).toContain('data-backend="kind" data-kind="socket_refused">The backend refuses the session connection<');
    expect(out).toContain('data-backend="status">404<');
    expect(out).toContain('data-backend="stage">opening the session connection (WebSocket)<');
    expect(out).toContain('data-backend="at">2026-11-27T09:30:05.000Z<');
    // The detail is the kiosk's English, escaped, marked as English for screen readers.
    expect(out).toContain(
      'data-backend="detail" lang="en">the backend refuses the session connection (HTTP 404) — check the WebSocket route of the gateway &lt;b&gt;<',
    );
    expect(out).toMatch(/Failures in a row<\/dt><dd data-backend="consecutive">3</);
    expect(out).toMatch(/Requests in the last minute<\/dt><dd data-backend="requests" data-spent="false">6 of 20</);
    expect(out).toMatch(/data-total="socket_refused"><dt>The backend refuses the session connection<\/dt><dd>3</);
    expect(out).toMatch(/data-total="unreachable"><dt>Cannot reach the backend<\/dt><dd>1</);
    const es = html('es', createElement(BackendFailuresCard, { backend: refusing, dateTime }));
    expect(es).toContain('El servidor rechaza la conexión de sesión');
    expect(es).toContain('6 de 20');
    expect(html('fr', createElement(BackendFailuresCard, { backend: refusing, dateTime }))).toContain('6 sur 20');
  });

  it('no failure yet: says so; working again: says so and still shows the last one; no HTTP status: says there was none', () => {
    const none = html(
      'en',
      createElement(BackendFailuresCard, {
        backend: { lastFailure: null, consecutive: 0, totals: {}, requestsLastMinute: 2, maxRequestsPerMinute: 20 },
        dateTime,
      }),
    );
    expect(none).toContain('No backend failure since the kiosk started.');
    expect(none).not.toContain('data-backend="kind"');
    expect(none).not.toContain('backend-failure-totals');
    expect(none).toContain('2 of 20');
    expect(none).toContain('data-spent="false"');
    expect(none).not.toContain('the next request waits');
    const spent = html('en', createElement(BackendFailuresCard, { backend: { ...refusing, requestsLastMinute: 20 }, dateTime }));
    expect(spent).toMatch(/data-spent="true">20 of 20.*spent: the next request waits for the oldest to leave the minute/);
    const recovered = html(
      'en',
      createElement(BackendFailuresCard, {
        backend: { ...refusing, consecutive: 0, lastFailure: { ...lastFailure, kind: 'unreachable', status: null } },
        dateTime,
      }),
    );
    expect(recovered).toContain('Working again since the last failure.');
    expect(recovered).toContain('data-failing="false"');
    expect(recovered).toContain('data-backend="status">none (no HTTP answer)<');
  });

  it('Needs staff names the cause in plain words for the customer; the staff line names it too, and says it retries', () => {
    const state = screenState('config_error');
    const gateway = {
      ...state,
      view: {
        ...state.view,
        error: {
          code: 'backend_refuses_socket',
          detail:
            'the backend refuses the session connection (HTTP 404) — check the WebSocket route of the gateway (checked again every 15–30 s)',
          retryable: false,
        },
      },
    };
    const out = html('en', createElement(NeedsStaffScreen, { state: gateway }));
    expect(out).toContain('data-cause="backend_refuses_socket">This kiosk cannot connect to its verification service.<');
    expect(out).toContain('checked again every 15–30 s');
    expect(backendItem(gateway, tFor('en'))).toMatchObject({ value: 'refuses the session connection, retrying', level: 'problem' });
    expect(backendItem(gateway, tFor('fr')).value).toBe('refuse la connexion de session, nouvelle tentative');
    // Refused credentials: no cause line beyond "ask staff", and the generic words (nothing is retried).
    const credentials = html('en', createElement(NeedsStaffScreen, { state }));
    expect(credentials).not.toContain('needs-staff-cause');
    expect(backendItem(state, tFor('en')).value).toBe('needs staff');
  });
});

describe('locked settings say where they are set', () => {
  const settings: Settings = {
    ...fixtureSettings(),
    locked: ['backendUrl', 'apiKey', 'profile', 'timeouts.errorDisplayMs'],
    lockedBy: { backendUrl: 'managed', apiKey: 'environment', profile: 'command_line', 'timeouts.errorDisplayMs': 'test_setup' },
  };

  it('lockOf gives the source, true when the host did not say, false when editable', () => {
    expect(lockOf('backendUrl', settings)).toBe('managed');
    expect(lockOf('apiKey', settings)).toBe('environment');
    expect(lockOf('timeouts.errorDisplayMs', settings)).toBe('test_setup');
    expect(lockOf('pcscReader', settings)).toBe(false);
    expect(lockOf('backendUrl', { locked: ['backendUrl'] })).toBe(true);
    expect(lockOf('timeouts.resultDisplayMs', { locked: ['timeouts'], lockedBy: { timeouts: 'managed' } })).toBe('managed');
  });

  it('a locked field is disabled and names its source', () => {
    const field = (locked: Parameters<typeof Field>[0]['locked'], language: Language = 'en'): string =>
      html(
        language,
        createElement(Field, {
          name: 'backendUrl',
          label: 'Backend URL',
          locked,
          children: (c) => createElement('input', { ...c, type: 'url' }),
        }),
      );
    expect(field('managed')).toMatch(/<input[^>]*disabled=""/);
    expect(field('managed')).toContain('data-locked-by="managed">Set by the managed configuration file<');
    expect(field('environment')).toContain('>Set by the environment<');
    expect(field('command_line')).toContain('>Set on the command line<');
    expect(field('test_setup')).toContain('>Set by the test setup<');
    expect(field(true)).toContain('>Set outside these settings<');
    expect(field('managed', 'fr')).toContain('Défini par le fichier de configuration géré');
    const open = field(false);
    expect(open).not.toContain('disabled');
    expect(open).not.toContain('field-locked');
  });
});

describe("the error screen's countdown", () => {
  it('counts in words like the outcome screen ("60 seconds", "1 second"), in every language', () => {
    const said = (language: Language, count: number): string => createI18n(language).t('error.clearsIn', { count });
    expect([said('en', 60), said('en', 1)]).toEqual(['This screen clears in 60 seconds.', 'This screen clears in 1 second.']);
    expect([said('es', 60), said('es', 1)]).toEqual(['Esta pantalla se borra en 60 segundos.', 'Esta pantalla se borra en 1 segundo.']);
    expect([said('fr', 60), said('fr', 1)]).toEqual(['Cet écran s’efface dans 60 secondes.', 'Cet écran s’efface dans 1 seconde.']);
  });
});

describe('a page whose address cannot work', () => {
  const connecting = { kind: 'connecting', attempt: 3, lastProblem: null } as const;
  const text = (markup: string): string => markup.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ');

  it('no token at all: "not valid for this kiosk" with how to get the right address, no spinner, never "Connecting…"', () => {
    const markup = html(
      'en',
      createElement(DisconnectedScreen, { connection: { kind: 'stopped', lastProblem: null }, missingToken: true }),
    );
    expect(text(markup)).toContain('This address is not valid for this kiosk');
    expect(text(markup)).toContain('opened without its access token');
    expect(markup).not.toContain('Connecting to the kiosk');
    expect(markup).not.toContain('spinner');
  });

  it('a refused token says the same with its own reason; a host that is only slow still says "Connecting…"', () => {
    const refused = html('en', createElement(DisconnectedScreen, { connection: { ...connecting, refused: true }, missingToken: false }));
    expect(text(refused)).toContain('This address is not valid for this kiosk');
    expect(text(refused)).toContain('refused this page’s access token');
    const slow = html('en', createElement(DisconnectedScreen, { connection: connecting, missingToken: false }));
    expect(text(slow)).toContain('Connecting to the kiosk…');
    expect(text(slow)).toContain('Attempt 3');
  });

  it('the status bar says the kiosk needs staff, not "connecting", when the address cannot work', () => {
    const bar = (addressInvalid: boolean): string =>
      html(
        'en',
        createElement(StatusBar, {
          state: null,
          camera: 'off',
          staffView: false,
          onStaff: () => undefined,
          staffEnabled: false,
          addressInvalid,
        }),
      );
    expect(bar(true)).toContain('data-level="problem"');
    expect(text(bar(true))).toContain('Kiosk: needs staff');
    expect(text(bar(false))).toContain('Kiosk: connecting');
  });
});
