/**
 * The Kiosk service: owns the state machine and publishes the `KioskView` (DESIGN §2, "main owns the
 * truth"). Its loop: keep a session pre-warmed → wait for a tap and a QR scan at once (spec §3 rule 2)
 * → run the verification on the pre-warmed session → show the outcome or the error → clear the screen
 * after its timeout (privacy) → ready again. Nothing it waits on is unbounded.
 */
import type { ErrorView, KioskView, OutcomeView, PromptKey, Transport } from '../common/kiosk-view.js';
import type { Availability, DevicePorts, NfcCard } from '../devices/ports.js';
import { AbortedError, ReusableTimer, deferred, sleep } from './async-tools.js';
import type { KioskConfig } from './config.js';
import type { Logger } from './log.js';
import { outcomeFromComplete, outcomeFromResult } from './outcome.js';
import { resolveProfile, type RequestProfile } from './profiles.js';
import type { RelayConnector } from './relay-link.js';
import { SessionApiError, type Session } from './session-client.js';
import type { SessionResult } from '../common/protocol/messages.js';
import { ArmTimeoutError, SessionKeeper, type ArmedSession, type KeeperStatus, type SessionFactory } from './session-keeper.js';
import { runVerification } from './verification/run.js';
import { backendErrorFields, closeCodeFor, type RunResult, type Trigger } from './verification/results.js';

export interface SessionService extends SessionFactory {
  getResult(sessionId: string, signal?: AbortSignal): Promise<SessionResult>;
}

export interface KioskDeps {
  readonly config: KioskConfig;
  readonly devices: DevicePorts;
  readonly sessions: SessionService;
  readonly connector: RelayConnector;
  readonly log: Logger;
  readonly now?: () => number;
}

/** One finished attempt, for the CLI, diagnostics and tests. Holds the disclosed data only in `outcome`. */
export interface VerificationReport {
  readonly transport: Transport;
  readonly sessionId: string | null;
  /** `complete`, `recovered` (result fetched after a dropped socket) or the failure kind. */
  readonly result: RunResult['kind'] | 'recovered' | 'not_ready';
  readonly outcome: OutcomeView | null;
  readonly error: ErrorView | null;
  readonly durationMs: number;
  readonly apdus: number;
  readonly bleMessages: number;
}

type Screen =
  | { readonly kind: 'none' }
  | { readonly kind: 'timed'; readonly until: number; readonly card: NfcCard | undefined }
  | { readonly kind: 'remove_phone'; readonly until: number; readonly card: NfcCard };

type Next = { kind: 'trigger'; trigger: Trigger } | { kind: 'screen_done' } | { kind: 'screen_changed' };

const MDOC_PREFIX = /^mdoc:/i;
const USED_QR_MEMORY = 16;
const PROGRESS_INTERVAL_MS = 100;

/** A scanner terminates its text with CR, LF or CR LF; that and nothing else is removed (spec §4.3). */
export function stripScannerTerminator(text: string): string {
  return text.replace(/(?:\r\n|\r|\n)$/, '');
}

export class Kiosk {
  private readonly keeper: SessionKeeper;
  private profile: RequestProfile;
  private view: KioskView;
  private screen: Screen = { kind: 'none' };
  private busy = false;
  private running = false;
  private loop: Promise<void> | undefined;
  private readonly stopController = new AbortController();
  private screenKick = new AbortController();
  private screenChanged = deferred<undefined>();
  private currentRun: AbortController | undefined;
  private readonly viewListeners = new Set<(view: KioskView) => void>();
  private readonly reportListeners = new Set<(report: VerificationReport) => void>();
  private readonly unsubscribers: (() => void)[] = [];
  private readonly now: () => number;
  /**
   * QR engagements already used. A device engagement carries a fresh ephemeral key and is single-use, and a
   * camera keeps decoding the code as long as the phone is held up, so a repeat is never a new verification.
   */
  private readonly usedQr: string[] = [];
  private devices: KioskView['devices'];
  /** Counter-only progress (APDUs, BLE messages) is published at most every PROGRESS_INTERVAL_MS. */
  private readonly progressFlush = new ReusableTimer();
  private pendingProgress: KioskView['progress'] | undefined;

  constructor(private readonly deps: KioskDeps) {
    this.now = deps.now ?? Date.now;
    this.profile = resolveProfile(deps.config, deps.config.profile);
    this.keeper = new SessionKeeper({
      sessions: deps.sessions,
      connector: deps.connector,
      config: deps.config,
      namespaces: () => this.profile.namespaces,
      log: deps.log,
      now: this.now,
      showBackendErrorText: deps.config.privacy.backendErrorText,
    });
    this.view = {
      phase: 'starting',
      prompt: 'starting',
      transport: null,
      role: null,
      progress: { step: 0, apdus: 0, bleMessages: 0 },
      outcome: null,
      error: null,
      profile: this.profile.name,
      devices: this.deviceStatus(),
      at: this.now(),
    };
    this.devices = this.view.devices;
  }

  // ------------------------------------------------------------ public API

  get currentView(): KioskView {
    return this.view;
  }

  onView(listener: (view: KioskView) => void): () => void {
    this.viewListeners.add(listener);
    return () => this.viewListeners.delete(listener);
  }

  onVerification(listener: (report: VerificationReport) => void): () => void {
    this.reportListeners.add(listener);
    return () => this.reportListeners.delete(listener);
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.unsubscribers.push(this.keeper.onStatus((status) => this.onKeeperStatus(status)));
    this.unsubscribers.push(
      this.keeper.onIdleFailure((failure) => {
        // Shown while nothing else is on screen; the keeper is re-arming meanwhile.
        if (!this.busy && this.screen.kind === 'none') this.showError({ ...failure, retryable: true }, undefined);
      }),
    );
    for (const port of [this.deps.devices.nfc, this.deps.devices.qr, this.deps.devices.bleCentral, this.deps.devices.blePeripheral]) {
      const unsubscribe = port?.onAvailabilityChange?.(() => {
        this.devices = this.deviceStatus();
        this.update({});
      });
      if (unsubscribe) this.unsubscribers.push(unsubscribe);
    }
    this.keeper.start();
    this.showIdle();
    this.loop = this.mainLoop().catch((e: unknown) => {
      this.deps.log.fatal({ event: 'kiosk_loop_failed', detail: e instanceof Error ? e.message : 'unknown' }, 'kiosk loop ended');
    });
  }

  /** Stops waiting, cancels a running verification (socket closed with 1001) and closes the idle session. */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    this.stopController.abort();
    this.currentRun?.abort();
    await this.loop;
    await this.keeper.stop();
    this.progressFlush.dispose();
    for (const unsubscribe of this.unsubscribers.splice(0)) unsubscribe();
    this.update({ phase: 'stopped', prompt: 'stopped', outcome: null });
  }

  /** Switches the request profile; the idle session is re-engaged with the new namespaces. */
  setProfile(name: string): void {
    this.profile = resolveProfile(this.deps.config, name);
    this.keeper.namespacesChanged();
    this.update({ profile: this.profile.name });
  }

  /** "Next customer": clears the outcome or error from the screen now. */
  dismiss(): void {
    this.screenKick.abort();
  }

  /** Staff: try the backend again now (after a configuration error or during an offline backoff). */
  retry(): void {
    this.keeper.retryNow();
  }

  /** Staff: abandon the running verification. */
  cancel(): void {
    this.currentRun?.abort();
  }

  // ------------------------------------------------------------ view

  private deviceStatus(): KioskView['devices'] {
    const status = (port: { availability(): Availability } | undefined): { usable: boolean; reason?: string } => {
      if (!port) return { usable: false, reason: 'not_configured' };
      const a = port.availability();
      return a.reason === undefined ? { usable: a.usable } : { usable: a.usable, reason: a.reason };
    };
    const { nfc, qr, bleCentral, blePeripheral } = this.deps.devices;
    return { nfc: status(nfc), qr: status(qr), bleCentral: status(bleCentral), blePeripheral: status(blePeripheral) };
  }

  private update(patch: Partial<KioskView>): void {
    const pending = this.pendingProgress;
    this.pendingProgress = undefined;
    this.progressFlush.stop();
    if (pending && !patch.progress) patch = { ...patch, progress: pending };
    // Device availability is re-read on every change of phase and on the ports' own change events.
    const devices = patch.phase !== undefined && patch.phase !== this.view.phase ? this.deviceStatus() : this.devices;
    this.devices = devices;
    this.view = { ...this.view, ...patch, devices, at: this.now() };
    for (const listener of this.viewListeners) {
      try {
        listener(this.view);
      } catch (e) {
        this.deps.log.error({ event: 'view_listener_failed', detail: e instanceof Error ? e.message : 'unknown' }, 'view listener threw');
      }
    }
  }

  /** Counters change per APDU and per BLE message; the screen needs them a few times a second at most. */
  private publishProgressSoon(progress: KioskView['progress']): void {
    const scheduled = this.pendingProgress !== undefined;
    this.pendingProgress = progress;
    if (scheduled) return;
    this.progressFlush.start(PROGRESS_INTERVAL_MS, () => {
      const pending = this.pendingProgress;
      if (pending) this.update({ progress: pending });
    });
  }

  private onKeeperStatus(status: KeeperStatus): void {
    if (!this.busy && this.screen.kind === 'none') this.showIdle(status);
  }

  private showIdle(status: KeeperStatus = this.keeper.status): void {
    const base = { transport: null, role: null, outcome: null, progress: { step: 0, apdus: 0, bleMessages: 0 } };
    switch (status.state) {
      case 'armed':
        this.update({ ...base, phase: 'ready', prompt: 'tap_or_scan', error: null });
        break;
      case 'arming':
        this.update({ ...base, phase: 'connecting', prompt: 'connecting', error: null });
        break;
      case 'offline':
        this.update({ ...base, phase: 'offline', prompt: 'offline', error: { code: 'backend_unavailable', detail: status.detail, retryable: true } });
        break;
      case 'config_error':
        this.update({ ...base, phase: 'config_error', prompt: 'config_error', error: { code: 'config_error', detail: status.detail, retryable: false } });
        break;
      case 'stopped':
        this.update({ ...base, phase: 'stopped', prompt: 'stopped', error: null });
        break;
    }
  }

  // ------------------------------------------------------------ main loop

  private isStopping(): boolean {
    return this.stopController.signal.aborted;
  }

  private async mainLoop(): Promise<void> {
    const stop = this.stopController.signal;
    while (!this.isStopping()) {
      let next: Next;
      try {
        next = await this.waitForNext(stop);
      } catch (e) {
        if (this.isStopping()) break;
        throw e;
      }
      if (next.kind === 'screen_done') {
        this.afterScreen();
        continue;
      }
      if (next.kind === 'screen_changed') continue;
      this.screen = { kind: 'none' };
      this.busy = true;
      try {
        await this.verify(next.trigger);
      } finally {
        this.busy = false;
      }
    }
  }

  /** The next tap or scan, or the end of what is on screen, whichever comes first. */
  private async waitForNext(stop: AbortSignal): Promise<Next> {
    const local = new AbortController();
    const onStop = (): void => local.abort();
    stop.addEventListener('abort', onStop, { once: true });
    this.screenChanged = deferred<undefined>();
    const contenders: Promise<Next>[] = [
      this.nextTrigger(local.signal).then((trigger) => ({ kind: 'trigger', trigger }) as const),
      this.screenChanged.promise.then(() => ({ kind: 'screen_changed' }) as const),
    ];
    if (this.screen.kind !== 'none') contenders.push(this.screenEnds(this.screen, local.signal).then(() => ({ kind: 'screen_done' }) as const));
    try {
      return await Promise.race(contenders);
    } finally {
      local.abort();
      stop.removeEventListener('abort', onStop);
    }
  }

  private async screenEnds(screen: Exclude<Screen, { kind: 'none' }>, signal: AbortSignal): Promise<void> {
    this.screenKick = new AbortController();
    const kick = this.screenKick.signal;
    const both = AbortSignal.any([signal, kick]);
    const wait = Math.max(0, screen.until - this.now());
    try {
      if (screen.kind === 'remove_phone') {
        await Promise.race([screen.card.waitForRemoval(both), sleep(wait, both)]);
      } else {
        await sleep(wait, both);
      }
    } catch (e) {
      if (!kick.aborted) throw e; // stopped, or a trigger won: not the end of the screen
    }
  }

  private afterScreen(): void {
    const screen = this.screen;
    if (screen.kind === 'timed' && screen.card?.present) {
      this.screen = { kind: 'remove_phone', until: this.now() + this.deps.config.timeouts.removePhoneMs, card: screen.card };
      this.update({ phase: 'remove_phone', prompt: 'remove_phone', outcome: null, error: null });
      return;
    }
    this.screen = { kind: 'none' };
    this.showIdle();
  }

  /** Waits for a card and a QR scan at once; the first wins and the other wait is abandoned. */
  private async nextTrigger(signal: AbortSignal): Promise<Trigger> {
    const { nfc, qr } = this.deps.devices;
    const waits: Promise<Trigger>[] = [];
    if (nfc) waits.push(this.nextCard(signal).then((card) => ({ kind: 'nfc', card }) as const));
    if (qr) waits.push(this.nextQr(signal).then((text) => ({ kind: 'qr', text }) as const));
    if (waits.length === 0) {
      await new Promise((_, reject) => signal.addEventListener('abort', () => reject(new AbortedError('stopped')), { once: true }));
    }
    const winner = await Promise.race(waits);
    for (const wait of waits) {
      // A card connected by a losing wait is released; it counts as handed out and is ignored.
      wait.then(
        (t) => {
          if (t !== winner && t.kind === 'nfc') void t.card.release();
        },
        () => undefined,
      );
    }
    return winner;
  }

  private async nextCard(signal: AbortSignal): Promise<NfcCard> {
    const nfc = this.deps.devices.nfc;
    if (!nfc) throw new AbortedError('no NFC reader');
    for (;;) {
      try {
        return await nfc.nextCard(signal);
      } catch (e) {
        if (signal.aborted) throw e;
        this.deps.log.warn({ event: 'nfc_reader_error', detail: e instanceof Error ? e.message : 'unknown' }, 'NFC reader failed; retrying');
        await sleep(1_000, signal);
      }
    }
  }

  private async nextQr(signal: AbortSignal): Promise<string> {
    const qr = this.deps.devices.qr;
    if (!qr) throw new AbortedError('no QR input');
    for (;;) {
      let raw: string;
      try {
        raw = await qr.nextScan(signal);
      } catch (e) {
        if (signal.aborted) throw e;
        this.deps.log.warn({ event: 'qr_input_error', detail: e instanceof Error ? e.message : 'unknown' }, 'QR input failed; retrying');
        await sleep(1_000, signal);
        continue;
      }
      const text = stripScannerTerminator(raw);
      if (text === '') continue;
      if (this.deps.config.qr.requireMdocPrefix && !MDOC_PREFIX.test(text)) {
        // Not a device engagement (some other barcode): not worth a session. Its content is not logged.
        this.deps.log.info({ event: 'qr_ignored', length: text.length }, 'scanned code is not an mdoc: engagement');
        continue;
      }
      if (this.usedQr.includes(text)) {
        this.deps.log.debug({ event: 'qr_repeat_ignored' }, 'QR engagement already used');
        continue;
      }
      this.usedQr.push(text);
      if (this.usedQr.length > USED_QR_MEMORY) this.usedQr.shift();
      return text;
    }
  }

  // ------------------------------------------------------------ one verification

  private async verify(trigger: Trigger): Promise<void> {
    const started = this.now();
    const transport = trigger.kind;
    this.update({ phase: 'engaging', prompt: 'hold_still', transport, role: null, outcome: null, error: null, progress: { step: 1, apdus: 0, bleMessages: 0 } });
    this.deps.log.info({ event: 'verification_start', transport }, 'tap or scan received');

    let armed: ArmedSession;
    try {
      armed = await this.keeper.acquire(this.deps.config.timeouts.armWaitMs, this.stopController.signal);
    } catch (e) {
      if (trigger.kind === 'nfc') await trigger.card.release();
      this.ignoreInputDuringRun();
      if (this.stopController.signal.aborted) return;
      const status = this.keeper.status;
      const error: ErrorView =
        status.state === 'config_error'
          ? { code: 'config_error', detail: status.detail, retryable: false }
          : { code: 'backend_unavailable', detail: e instanceof ArmTimeoutError ? e.message : 'no session available', retryable: true };
      this.deps.log.warn({ event: 'verification_not_ready', code: error.code }, 'no session ready for the tap');
      this.showError(error, trigger.kind === 'nfc' ? trigger.card : undefined);
      this.emit({ transport, sessionId: null, result: 'not_ready', outcome: null, error, durationMs: this.now() - started, apdus: 0, bleMessages: 0 });
      return;
    }

    const log = this.deps.log.child({ sessionId: armed.session.id });
    const run = new AbortController();
    this.currentRun = run;
    if (this.stopController.signal.aborted) run.abort();
    let counters = { apdus: 0, bleMessages: 0 };
    const report = await runVerification(
      {
        channel: armed.channel,
        devices: this.deps.devices,
        timeouts: this.deps.config.timeouts,
        log,
        signal: run.signal,
        onProgress: (p) => {
          counters = { apdus: p.apdus, bleMessages: p.bleMessages };
          const progress = { step: p.step, apdus: p.apdus, bleMessages: p.bleMessages };
          const v = this.view;
          if (v.phase === p.phase && v.prompt === p.prompt && v.role === p.role && v.progress.step === p.step) {
            this.publishProgressSoon(progress);
          } else {
            this.update({ phase: p.phase, prompt: p.prompt, transport: p.transport, role: p.role, progress });
          }
        },
      },
      trigger,
    );
    this.currentRun = undefined;
    this.ignoreInputDuringRun();
    const result = report.result;
    // The closing handshake runs while the outcome goes on screen; the session is given back after it.
    const { code, reason } = closeCodeFor(result);
    const closing = result.kind === 'dropped' ? Promise.resolve() : armed.channel.close(code, reason);
    this.logResult(log, result);

    let outcome: OutcomeView | undefined;
    let kind: VerificationReport['result'] = result.kind;
    if (result.kind === 'complete') {
      outcome = outcomeFromComplete(result.outcome);
    } else if (result.kind === 'dropped' && !this.stopController.signal.aborted) {
      outcome = await this.recover(armed.session, result.transferFinished, log);
      if (outcome) kind = 'recovered';
    }
    const base = { transport, sessionId: armed.session.id, durationMs: this.now() - started, ...counters };
    if (outcome) {
      log.info({ event: 'verification_outcome', verdict: outcome.verdict, reasons: outcome.reasons, source: outcome.source }, 'verification finished');
      this.showResult(outcome, report.card);
      this.emit({ ...base, result: kind, outcome, error: null });
    } else if (result.kind !== 'complete') {
      const error = errorViewFor(result, this.deps.config.privacy.backendErrorText);
      if (result.kind !== 'cancelled' || !this.stopController.signal.aborted) this.showError(error, report.card);
      this.emit({ ...base, result: kind, outcome: null, error });
    }
    await closing;
    this.keeper.release(armed, outcome ? 'spent' : 'retry');
  }

  /** Whatever was shown or tapped while a verification ran is ignored (spec §3 rule 1). */
  private ignoreInputDuringRun(): void {
    this.deps.devices.qr?.discardPending();
    this.deps.devices.nfc?.ignoreCurrentCard();
  }

  /**
   * The socket dropped. If the transfer had finished (the 0x02 end byte went out), the backend may still be
   * verifying: poll `GET /sessions/{id}` for a while. Otherwise one look is enough.
   */
  private async recover(session: Session, transferFinished: boolean, log: Logger): Promise<OutcomeView | undefined> {
    const deadline = this.now() + (transferFinished ? this.deps.config.timeouts.recoverResultMs : 0);
    const signal = this.stopController.signal;
    for (let attempt = 1; ; attempt++) {
      try {
        const outcome = outcomeFromResult(await this.deps.sessions.getResult(session.id, signal));
        if (outcome) {
          log.info({ event: 'result_recovered', attempt }, 'result recovered after the socket dropped');
          return outcome;
        }
      } catch (e) {
        const kind = e instanceof SessionApiError ? e.kind : 'unknown';
        log.warn({ event: 'result_recovery_failed', kind, attempt }, 'could not fetch the session result');
        // Before the transfer ended a 404 settles it; after, the backend may still be writing the result.
        if (kind === 'unauthorized' || kind === 'forbidden' || kind === 'aborted') return undefined;
        if (kind === 'not_found' && !transferFinished) return undefined;
      }
      if (this.now() >= deadline) return undefined;
      try {
        await sleep(500, signal);
      } catch {
        return undefined;
      }
    }
  }

  private logResult(log: Logger, result: RunResult): void {
    switch (result.kind) {
      case 'complete':
        return;
      case 'violation':
        log.warn(
          { event: 'protocol_violation', kind: result.violation.kind, detail: result.violation.detail, type: result.violation.type, op: result.violation.op },
          'backend message rejected; socket closed',
        );
        return;
      case 'backend_error':
        log.warn({ event: 'backend_error', ...backendErrorFields(result.message, this.deps.config.privacy.backendErrorText) }, 'backend reported an error');
        return;
      case 'timeout':
        log.warn({ event: 'watchdog_timeout', phase: result.phase, detail: result.detail }, 'verification timed out');
        return;
      case 'dropped':
        log.warn({ event: 'socket_dropped', code: result.closed?.code ?? null, transferFinished: result.transferFinished }, 'session socket dropped');
        return;
      case 'ble_failed':
        log.warn({ event: 'ble_failed', role: result.role, reason: result.reason }, 'BLE setup failed');
        return;
      case 'ble_link_lost':
        log.warn({ event: 'ble_link_lost', reason: result.reason }, 'BLE link lost before completion');
        return;
      case 'cancelled':
        log.info({ event: 'verification_cancelled' }, 'verification cancelled');
        return;
      case 'internal_error':
        log.error({ event: 'internal_error', detail: result.detail }, 'verification failed inside the kiosk');
        return;
    }
  }

  private showResult(outcome: OutcomeView, card: NfcCard | undefined): void {
    const prompt: PromptKey = outcome.verdict === 'verified' ? 'verified' : 'rejected';
    this.update({ phase: 'result', prompt, outcome, error: null, progress: { ...this.view.progress, step: 4 } });
    this.screen = { kind: 'timed', until: this.now() + this.deps.config.timeouts.resultDisplayMs, card };
    this.screenChanged.resolve(undefined);
  }

  private showError(error: ErrorView, card: NfcCard | undefined): void {
    this.update({ phase: 'error', prompt: 'try_again', outcome: null, error });
    this.screen = { kind: 'timed', until: this.now() + this.deps.config.timeouts.errorDisplayMs, card };
    // The main loop may be waiting with no screen to time out: let it look again.
    this.screenChanged.resolve(undefined);
  }

  private emit(report: VerificationReport): void {
    for (const listener of this.reportListeners) {
      try {
        listener(report);
      } catch (e) {
        this.deps.log.error({ event: 'report_listener_failed', detail: e instanceof Error ? e.message : 'unknown' }, 'report listener threw');
      }
    }
  }
}

export function errorViewFor(result: Exclude<RunResult, { kind: 'complete' }>, showBackendErrorText = false): ErrorView {
  switch (result.kind) {
    case 'backend_error':
      return {
        code: 'backend_error',
        detail: showBackendErrorText ? result.message.slice(0, 200) : 'the verification service reported an error',
        retryable: true,
      };
    case 'violation':
      return { code: 'protocol_violation', detail: `${result.violation.kind}: ${result.violation.detail}`, retryable: true };
    case 'timeout':
      return { code: 'timeout', detail: result.detail, retryable: true };
    case 'ble_failed':
      return {
        code: result.reason.startsWith('no offered BLE role') ? 'ble_unavailable' : 'ble_setup_failed',
        detail: result.reason,
        retryable: true,
      };
    case 'ble_link_lost':
      return { code: 'ble_link_lost', detail: result.reason, retryable: true };
    case 'dropped':
      return { code: 'connection_lost', detail: `session socket closed (${result.closed?.code ?? 'no close frame'})`, retryable: true };
    case 'cancelled':
      return { code: 'cancelled', detail: 'verification cancelled', retryable: true };
    case 'internal_error':
      return { code: 'internal_error', detail: result.detail, retryable: true };
  }
}
