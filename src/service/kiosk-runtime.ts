/**
 * The Kiosk runtime: the devices and the Kiosk built from the effective configuration, and rebuilt when
 * saved settings need it — never in the middle of a verification (a rebuild waits, bounded, for the view
 * to leave the busy phases). A configuration that cannot build a kiosk does not crash anything: the screen
 * shows `config_error` with the reason and staff can fix it in the settings.
 */
import { isDeepStrictEqual } from 'node:util';
import { QrScanQueue } from '../devices/qr/qr-scan-queue.js';
import { createKiosk } from '../kiosk/compose.js';
import type { KioskConfig } from '../platform/config.js';
import type { Kiosk, VerificationReport } from '../kiosk/kiosk.js';
import { RetryPolicy, retrySettingsOf, type RetryReport } from '../kiosk/retry-policy.js';
import type { Logger } from '../platform/log.js';
import type { DiagnosticsLog } from './diagnostics.js';
import { BUSY_PHASES, EMPTY_DEVICES, deviceStatus, serviceView, type ScreenStateStream } from './screen-state.js';
import type { ServiceConfig } from './service-config.js';
import { errorText } from '../common/error-text.js';
import type { DeviceFactory, DeviceSet } from './service-options.js';

export interface KioskRuntimeOptions {
  readonly devices: DeviceFactory;
  readonly config: Pick<ServiceConfig, 'effective' | 'kioskProblem'>;
  readonly screen: Pick<ScreenStateStream, 'view' | 'setView'>;
  readonly diagnostics: Pick<DiagnosticsLog, 'countVerification' | 'sessionCreated'>;
  /** Every finished verification (it holds disclosed data). */
  readonly onReport: (report: VerificationReport) => void;
  readonly env: NodeJS.ProcessEnv;
  readonly now: () => number;
  readonly log: () => Logger;
  /** Longest wait for a verification to end before a rebuild goes ahead (default verificationMs + 10 s). */
  readonly rebuildWaitMs?: number;
}

/** The part of a configuration a running Kiosk depends on (the screen's and staff's keys are live). */
function kioskPart(config: KioskConfig): Record<string, unknown> {
  const { backend, session, timeouts, profiles, qr, pcsc, ble, privacy } = config;
  return { backend, session, timeouts, profiles, qr, pcsc, ble, privacy };
}

export class KioskRuntime {
  private phase: 'new' | 'starting' | 'running' | 'stopped' = 'new';
  private deviceSet: DeviceSet | undefined;
  private current: Kiosk | undefined;
  private unsubscribers: (() => void)[] = [];
  /** The configuration the running Kiosk was built with (its profile follows changes). */
  private runningConfig: KioskConfig | undefined;
  /** The devices being built at start (a stop waits for them, to close them). */
  private starting: Promise<void> = Promise.resolve();
  private chain: Promise<void> = Promise.resolve();
  private pendingRebuild: 'kiosk' | 'devices' | undefined;
  private idleWaiters: (() => void)[] = [];

  /**
   * One retry policy per backend, kept across rebuilds: saving settings must not reset the backoff or the
   * request budget (a kiosk rebuilt again and again would otherwise start each time from the fastest retry).
   */
  private retry: { readonly backend: string | undefined; readonly policy: RetryPolicy } | undefined;

  constructor(private readonly options: KioskRuntimeOptions) {}

  private retryPolicyFor(config: KioskConfig): RetryPolicy {
    const backend = config.backend.baseUrl;
    if (this.retry === undefined || this.retry.backend !== backend) {
      // Read at each decision, so a saved backoff or budget applies without a new policy.
      this.retry = { backend, policy: new RetryPolicy(() => retrySettingsOf(this.runningConfig ?? config)) };
    }
    return this.retry.policy;
  }

  get kiosk(): Kiosk | undefined {
    return this.current;
  }

  /**
   * The running kiosk's backend failures (its retry policy's, which outlives rebuilds for the same backend);
   * undefined while no kiosk runs — a policy of a backend no longer configured would speak of another one.
   */
  backendFailures(): RetryReport | undefined {
    return this.current?.backendFailures;
  }

  get devices(): DeviceSet | undefined {
    return this.deviceSet;
  }

  /** Started and not stopped. */
  get running(): boolean {
    return this.phase === 'running';
  }

  /** The timeouts of the kiosk that runs (saved settings reach it with the next rebuild). */
  kioskTimeouts(): KioskConfig['timeouts'] {
    return this.runningConfig?.timeouts ?? this.options.config.effective.timeouts;
  }

  /** The service starts (once). */
  claimStart(): void {
    if (this.phase !== 'new') throw new Error('KioskService.start() may be called once');
    this.phase = 'starting';
  }

  /** Runs without devices or a kiosk (a support bundle made while another copy owns them). */
  startIdle(): void {
    this.phase = 'running';
    this.options.screen.setView(
      serviceView('stopped', this.options.config.effective.profile, deviceStatus(EMPTY_DEVICES), this.options.now()),
    );
  }

  /** Builds the devices and the kiosk; false when the service was stopped meanwhile. */
  start(): Promise<boolean> {
    const started = this.buildDevices().then((devices) => {
      // Kept even when stopped meanwhile: close() waits for this and closes them.
      this.deviceSet = devices;
      if (this.phase === 'stopped') return false;
      this.phase = 'running';
      this.buildKiosk();
      return true;
    });
    this.starting = started.then(
      () => undefined,
      () => undefined,
    );
    return started;
  }

  /** Resolves when every rebuild asked for so far has run. */
  settled(): Promise<void> {
    return this.chain;
  }

  /** Saved settings reach the runtime: a rebuild when the Kiosk depends on what changed, else the profile. */
  applySaved(config: KioskConfig): void {
    const before = this.runningConfig;
    const devicesChanged = !before || !isDeepStrictEqual(before.pcsc, config.pcsc) || before.ble.roles !== config.ble.roles;
    if (!this.current || !before || !isDeepStrictEqual(kioskPart(before), kioskPart(config))) {
      this.requestRebuild(devicesChanged ? 'devices' : 'kiosk');
    } else if (before.profile !== config.profile) {
      this.current.setProfile(config.profile);
      this.runningConfig = { ...before, profile: config.profile };
    }
  }

  /** The request profile changed: the running Kiosk takes it at once. */
  setProfile(name: string): void {
    if (this.runningConfig) this.runningConfig = { ...this.runningConfig, profile: name };
    this.current?.setProfile(name);
  }

  requestRebuild(kind: 'kiosk' | 'devices'): void {
    const queued = this.pendingRebuild !== undefined;
    this.pendingRebuild = this.pendingRebuild === 'devices' || kind === 'devices' ? 'devices' : 'kiosk';
    if (queued) return;
    const run = this.chain.then(async () => {
      await this.waitUntilIdle();
      const what = this.pendingRebuild;
      this.pendingRebuild = undefined;
      if (this.phase !== 'running' || what === undefined) return;
      await this.rebuild(what === 'devices');
    });
    this.chain = run.catch((e: unknown) => {
      this.options.log().error({ event: 'rebuild_failed' }, `rebuild failed: ${errorText(e)}`);
    });
  }

  /** The view left the busy phases: a rebuild waiting for that goes ahead. */
  releaseIdleWaiters(): void {
    for (const done of this.idleWaiters.splice(0)) done();
  }

  /** No more rebuilds: one waiting for the verification to end goes ahead now (and finds it stopped). */
  halt(): void {
    this.phase = 'stopped';
    this.releaseIdleWaiters();
  }

  /** After a start or a rebuild in flight: stops the kiosk and closes the devices. */
  async close(): Promise<void> {
    await this.starting;
    await this.chain;
    const kiosk = this.detachKiosk();
    await kiosk?.stop();
    await this.deviceSet?.close().catch((e: unknown) => this.options.log().warn({ event: 'devices_close_failed' }, errorText(e)));
  }

  private async buildDevices(): Promise<DeviceSet> {
    const { effective } = this.options.config;
    try {
      // The factory names its parts itself (component ble, pcsc, devices): a child here would repeat the key.
      return await this.options.devices(effective, this.options.log());
    } catch (e) {
      // The screen and the staff still work; the kiosk runs with what it has (the screen's QR queue).
      this.options.log().error({ event: 'devices_failed' }, `devices could not be set up: ${errorText(e)}`);
      const qr = new QrScanQueue({ freshMs: effective.qr.scanFreshMs });
      return { ports: { qr }, qr, close: () => Promise.resolve() };
    }
  }

  private buildKiosk(): void {
    const { config, screen, diagnostics, now } = this.options;
    const ports = this.deviceSet?.ports ?? EMPTY_DEVICES;
    const problem = config.kioskProblem();
    if (problem !== undefined) {
      this.showConfigError(problem);
      return;
    }
    const effective = config.effective;
    let kiosk: Kiosk;
    try {
      // The counter never invites a customer its devices cannot serve (Needs staff instead of Ready).
      kiosk = createKiosk(effective, ports, this.options.log().child({ component: 'kiosk' }), {
        now,
        env: this.options.env,
        readinessGate: true,
        retryPolicy: this.retryPolicyFor(effective),
      });
    } catch (e) {
      this.showConfigError(errorText(e));
      return;
    }
    this.current = kiosk;
    this.runningConfig = effective;
    this.unsubscribers = [
      kiosk.onView((view) => screen.setView(view)),
      kiosk.onVerification((report) => {
        diagnostics.countVerification(report);
        this.options.onReport(report);
      }),
      kiosk.onSessionCreated(() => diagnostics.sessionCreated(now())),
    ];
    kiosk.start();
    screen.setView(kiosk.currentView);
  }

  private showConfigError(detail: string): void {
    const { config, screen, now } = this.options;
    this.runningConfig = undefined;
    this.options
      .log()
      .warn({ event: 'kiosk_config_error' }, 'the kiosk cannot run with this configuration; staff must fix it in the settings');
    screen.setView(
      serviceView(
        'config_error',
        config.effective.profile,
        deviceStatus(this.deviceSet?.ports ?? EMPTY_DEVICES),
        now(),
        detail.slice(0, 1_000),
      ),
    );
  }

  private detachKiosk(): Kiosk | undefined {
    const kiosk = this.current;
    this.current = undefined;
    for (const unsubscribe of this.unsubscribers.splice(0)) unsubscribe();
    return kiosk;
  }

  private waitUntilIdle(): Promise<void> {
    if (!BUSY_PHASES.has(this.options.screen.view.phase) || this.phase !== 'running') return Promise.resolve();
    const bound = this.options.rebuildWaitMs ?? this.options.config.effective.timeouts.verificationMs + 10_000;
    return new Promise((resolve) => {
      const timer = setTimeout(done, bound);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.idleWaiters.push(done);
    });
  }

  private async rebuild(devicesToo: boolean): Promise<void> {
    const { config, screen, now } = this.options;
    const log = this.options.log();
    log.info({ event: 'kiosk_rebuild', rebuild: devicesToo ? 'devices' : 'kiosk' }, 'applying saved settings');
    const old = this.detachKiosk();
    screen.setView(serviceView('starting', config.effective.profile, screen.view.devices, now()));
    await old?.stop();
    if (devicesToo) {
      await this.deviceSet?.close().catch((e: unknown) => log.warn({ event: 'devices_close_failed' }, errorText(e)));
      this.deviceSet = undefined;
      this.deviceSet = await this.buildDevices();
    }
    if (this.phase !== 'running') return;
    this.buildKiosk();
  }
}
