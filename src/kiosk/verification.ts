/**
 * One verification attempt on an engaged session: the relay state machine of spec §3 and §4.3–4.5, from
 * the event that fixes the transport (a QR scan or a card) to `complete`, `error` or a failure.
 *
 *   QR:   qr_scanned ─────────────────────────────────────────► ble_exchange
 *   NFC:  nfc_card_present ─► (nfc_apdu ⇄ nfc_rapdu | nfc_await_card → re-tap → nfc_card_present)* ─► ble_exchange
 *   BLE:  pick the first mode whose role is usable now → set up → ble_connected
 *         central:    ble_write → write (in order, one at a time); notification → ble_notified
 *         peripheral: first GATT event → ble_connected; write → ble_written; read → ble_read_request,
 *                     answered by exactly the next socket message (ble_read_response);
 *                     ble_write → notification (in order)
 *         → complete
 *
 * Every wait has a timeout from `Timeouts`, and the whole attempt is capped by `verificationMs`.
 * The first failure wins; it aborts every other wait and the attempt returns a {@link RunResult}. The
 * caller closes the socket with {@link closeCodeFor} and decides what happens next.
 */
import { decodeCheckedBase64, encodeBase64 } from '../common/protocol/base64.js';
import type {
  BackendMessage,
  BleMode,
  BleRole,
  CharacteristicSpec,
  ClientMessage,
  ErrorMessage,
  Outcome,
} from '../common/protocol/messages.js';
import type { ProtocolViolation, ViolationKind } from '../common/protocol/parse.js';
import { uuidKey } from '../common/protocol/uuid.js';
import type { KioskPhase, PromptKey, Transport } from '../common/kiosk-view.js';
import {
  BleSetupError,
  NfcTransmitError,
  type BleCentralLink,
  type BlePeripheralSession,
  type DevicePorts,
  type GattProfile,
  type NfcCard,
  type PeripheralEvent,
} from '../devices/ports.js';
import { AbortedError, AsyncQueue, ReusableTimer, TimeoutError, childSignal, deferred, withTimeout } from './async-tools.js';
import type { Timeouts } from './config.js';
import type { Logger } from './log.js';
import { ChannelAbortedError, ChannelTimeoutError, LinkDroppedError, type Arrival, type RelayChannel } from './relay-channel.js';
import { CloseCode, type LinkClosed } from './relay-link.js';

export type Trigger = { readonly kind: 'qr'; readonly text: string } | { readonly kind: 'nfc'; readonly card: NfcCard };

export type RunResult =
  | { readonly kind: 'complete'; readonly outcome: Outcome }
  | { readonly kind: 'backend_error'; readonly message: string }
  | { readonly kind: 'violation'; readonly violation: ProtocolViolation }
  | { readonly kind: 'dropped'; readonly closed: LinkClosed | undefined; readonly transferFinished: boolean }
  | { readonly kind: 'timeout'; readonly phase: string; readonly detail: string }
  | { readonly kind: 'ble_failed'; readonly role: BleRole; readonly reason: string }
  | { readonly kind: 'ble_link_lost'; readonly reason: string }
  | { readonly kind: 'cancelled' }
  | { readonly kind: 'internal_error'; readonly detail: string };

export interface RunProgress {
  readonly phase: KioskPhase;
  readonly prompt: PromptKey;
  readonly transport: Transport;
  readonly role: BleRole | null;
  readonly step: number;
  readonly apdus: number;
  readonly bleMessages: number;
}

export interface RunContext {
  readonly channel: RelayChannel;
  readonly devices: DevicePorts;
  readonly timeouts: Timeouts;
  readonly log: Logger;
  /** Cancels the attempt (kiosk stopping, staff cancel). */
  readonly signal: AbortSignal;
  onProgress(progress: RunProgress): void;
  /** Clock for the idle watchdog; `performance.now` by default. */
  readonly now?: () => number;
}

/** The WebSocket close code and reason that fit a result (the backend sees them). */
export function closeCodeFor(result: RunResult): { code: number; reason: string } {
  switch (result.kind) {
    case 'complete':
      return { code: CloseCode.normal, reason: 'verification complete' };
    case 'backend_error':
      return { code: CloseCode.normal, reason: 'backend reported an error' };
    case 'violation':
      return { code: closeCodeForViolation(result.violation.kind), reason: `protocol violation: ${result.violation.kind}` };
    case 'timeout':
      return { code: CloseCode.timeout, reason: `kiosk timeout: ${result.phase}` };
    case 'ble_failed':
      return { code: CloseCode.normal, reason: 'BLE setup failed' };
    case 'ble_link_lost':
      return { code: CloseCode.normal, reason: 'BLE link lost' };
    case 'cancelled':
      return { code: CloseCode.goingAway, reason: 'cancelled' };
    case 'internal_error':
      return { code: CloseCode.internalError, reason: 'kiosk internal error' };
    case 'dropped':
      return { code: CloseCode.normal, reason: 'socket dropped' };
  }
}

export function closeCodeForViolation(kind: ViolationKind): number {
  switch (kind) {
    case 'binary_frame':
      return CloseCode.unsupportedData;
    case 'malformed_json':
    case 'invalid_base64':
      return CloseCode.invalidPayload;
    case 'message_too_large':
      return CloseCode.messageTooBig;
    default:
      return CloseCode.protocolError;
  }
}

/**
 * What the logs and the screen say of a backend `error`. Its text is not shown by the spec (§7.2) and may
 * quote request data, so by default only its length is kept (`privacy.backendErrorText` shows it).
 */
export function backendErrorFields(message: string, showText: boolean): { message?: string; messageLength: number } {
  return showText ? { message: message.slice(0, 200), messageLength: message.length } : { messageLength: message.length };
}

/** Thrown inside the attempt to unwind to its end; the result is in `VerificationRun.stopResult`. */
class RunStop extends Error {
  override readonly name = 'RunStop';
}

const STATE_END = 0x02;

function describe(message: BackendMessage): { type: string; op?: string } {
  return message.type === 'step_request' ? { type: message.type, op: message.op } : { type: message.type };
}

function outOfSequence(message: BackendMessage, detail: string): ProtocolViolation {
  return { kind: 'out_of_sequence', detail, ...describe(message) };
}

function profileOf(mode: BleMode): GattProfile {
  return { serviceUuid: mode.service_uuid, characteristics: mode.characteristics };
}

export interface RunReport {
  readonly result: RunResult;
  /** The card of an NFC attempt (released), for the "remove your phone" step; the latest one after a re-tap. */
  readonly card: NfcCard | undefined;
}

export async function runVerification(ctx: RunContext, trigger: Trigger): Promise<RunReport> {
  const run = new VerificationRun(ctx, trigger);
  const result = await run.execute();
  return { result, card: run.lastCard };
}

class VerificationRun {
  private readonly controller = new AbortController();
  private stopResult: RunResult | undefined;
  private readonly timers = new Set<NodeJS.Timeout>();
  /** The kiosk's own bound on each APDU, in case a port ignores its timeout (one timer for all APDUs). */
  private readonly apduGuard = new ReusableTimer();
  private abortTransmit: (() => void) | undefined;
  /** Characteristics of the chosen mode by UUID spelling, filled as UUIDs are seen. */
  private readonly charIndex = new Map<string, { name: 'state' | 'c2s' | 's2c' | 'ident'; spec: CharacteristicSpec } | null>();
  private readonly now: () => number;

  private transport: Transport;
  private role: BleRole | null = null;
  private phase: KioskPhase = 'engaging';
  private prompt: PromptKey = 'hold_still';
  private step = 1;
  private apdus = 0;
  private bleMessages = 0;

  private card: NfcCard | undefined;
  private releasedCard: NfcCard | undefined;
  private central: BleCentralLink | undefined;
  private peripheral: BlePeripheralSession | undefined;
  private mode: BleMode | undefined;
  /** The state characteristic's end byte (0x02) went to the phone: the transfer itself is over. */
  private transferFinished = false;
  private linkLost: string | undefined;
  private completion: Outcome | undefined;
  private lastActivity = 0;
  /** Answers the phone's pending read; set from `ble_read_request` until its response arrives. */
  private readonly pendingRead: { current: ((value: Uint8Array) => void) | undefined } = { current: undefined };

  constructor(
    private readonly ctx: RunContext,
    private readonly trigger: Trigger,
  ) {
    this.transport = trigger.kind;
    this.now = ctx.now ?? (() => performance.now());
  }

  private get signal(): AbortSignal {
    return this.controller.signal;
  }

  async execute(): Promise<RunResult> {
    const onCancel = (): void => this.stopWith({ kind: 'cancelled' });
    this.ctx.signal.addEventListener('abort', onCancel, { once: true });
    if (this.ctx.signal.aborted) this.stopWith({ kind: 'cancelled' });
    this.after(this.ctx.timeouts.verificationMs, () =>
      this.stopWith({ kind: 'timeout', phase: 'verification', detail: `verification took longer than ${this.ctx.timeouts.verificationMs} ms` }),
    );
    let result: RunResult;
    try {
      const modes = this.trigger.kind === 'qr' ? await this.qrEngagement(this.trigger.text) : await this.nfcHandover(this.trigger.card);
      result = await this.bleTransfer(modes);
    } catch (e) {
      result = this.stopResult ?? this.unexpected(e);
    } finally {
      this.ctx.signal.removeEventListener('abort', onCancel);
    }
    // A failure recorded first (e.g. by a background pipeline) wins over what the main flow saw later.
    result = this.stopResult ?? result;
    this.stopResult ??= result;
    await this.teardown();
    return result;
  }

  // ------------------------------------------------------------ plumbing

  private stopWith(result: RunResult): void {
    if (this.stopResult) return;
    this.stopResult = result;
    this.controller.abort();
    this.abortTransmit?.();
  }

  private fail(result: RunResult): never {
    this.stopWith(result);
    throw new RunStop();
  }

  private unexpected(e: unknown): RunResult {
    if (e instanceof LinkDroppedError) {
      return { kind: 'dropped', closed: this.ctx.channel.closed, transferFinished: this.transferFinished };
    }
    if (e instanceof AbortedError || e instanceof ChannelAbortedError) return { kind: 'cancelled' };
    const detail = e instanceof Error ? `${e.name}: ${e.message}` : 'unknown failure';
    this.ctx.log.error({ event: 'relay_internal_error', detail }, 'unexpected failure in the relay');
    return { kind: 'internal_error', detail };
  }

  private after(ms: number, fn: () => void): NodeJS.Timeout {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      fn();
    }, ms);
    this.timers.add(timer);
    return timer;
  }

  private cancelTimer(timer: NodeJS.Timeout | undefined): void {
    if (!timer) return;
    clearTimeout(timer);
    this.timers.delete(timer);
  }

  private progress(phase: KioskPhase, prompt: PromptKey, step: number): void {
    this.phase = phase;
    this.prompt = prompt;
    this.step = step;
    this.publish();
  }

  private publish(): void {
    this.ctx.onProgress({
      phase: this.phase,
      prompt: this.prompt,
      transport: this.transport,
      role: this.role,
      step: this.step,
      apdus: this.apdus,
      bleMessages: this.bleMessages,
    });
  }

  private send(message: ClientMessage): void {
    try {
      this.ctx.channel.send(message);
    } catch (e) {
      if (e instanceof LinkDroppedError) {
        this.fail({ kind: 'dropped', closed: this.ctx.channel.closed, transferFinished: this.transferFinished });
      }
      throw e;
    }
  }

  /** Turns an arrival into a message, or stops the attempt on a close, a violation or `error`. */
  private unwrap(arrival: Arrival): Exclude<BackendMessage, ErrorMessage> {
    switch (arrival.kind) {
      case 'closed':
        return this.fail({ kind: 'dropped', closed: arrival.closed, transferFinished: this.transferFinished });
      case 'violation':
        return this.fail({ kind: 'violation', violation: arrival.violation });
      case 'message':
        if (arrival.message.type === 'error') return this.fail({ kind: 'backend_error', message: arrival.message.message });
        return arrival.message;
    }
  }

  private async nextMessage(phase: string, timeoutMs: number): Promise<Exclude<BackendMessage, ErrorMessage>> {
    try {
      return this.unwrap(await this.ctx.channel.next(timeoutMs, this.signal));
    } catch (e) {
      if (e instanceof ChannelTimeoutError) {
        return this.fail({ kind: 'timeout', phase, detail: `no message from the backend within ${timeoutMs} ms (${phase})` });
      }
      throw e;
    }
  }

  /**
   * Sends a message the backend answers with exactly one message. Anything already queued arrived before
   * this message was sent, so it answered nothing: out of sequence (or a backend `error`/close).
   */
  private sendExpectingReply(message: ClientMessage): void {
    const early = this.ctx.channel.pending[0];
    if (early) {
      const unsolicited = this.unwrap(early);
      this.fail({ kind: 'violation', violation: outOfSequence(unsolicited, `unsolicited message before ${message.op}`) });
    }
    this.send(message);
  }

  /** While no backend message is expected (re-tap, BLE setup), any arrival ends the attempt at once. */
  private quiet(reason: string): void {
    this.ctx.channel.setInterceptor((arrival) => {
      try {
        const message = this.unwrap(arrival);
        this.fail({ kind: 'violation', violation: outOfSequence(message, reason) });
      } catch {
        // fail() recorded the result and aborted the attempt.
      }
      return true;
    });
  }

  private endQuiet(): void {
    this.ctx.channel.setInterceptor(undefined);
  }

  /**
   * Runs a device operation under a timeout. The operation gets its own signal, aborted when the attempt
   * ends or the timeout passes, so an adapter that is still scanning or connecting stops at once.
   */
  private async device<T>(operation: (signal: AbortSignal) => Promise<T>, ms: number, what: string): Promise<T> {
    const op = new AbortController();
    const onRunAbort = (): void => op.abort();
    this.signal.addEventListener('abort', onRunAbort, { once: true });
    try {
      return await withTimeout(operation(op.signal), ms, this.signal, what);
    } catch (e) {
      op.abort();
      if (e instanceof AbortedError) throw new RunStop();
      throw e;
    } finally {
      // On success the operation's result (a link, a session) lives on; teardown closes it.
      if (!op.signal.aborted) this.signal.removeEventListener('abort', onRunAbort);
    }
  }

  // ------------------------------------------------------------ QR

  private async qrEngagement(text: string): Promise<BleMode[]> {
    this.progress('engaging', 'hold_still', 1);
    this.sendExpectingReply({ type: 'step_result', op: 'qr_scanned', status: 'ok', data: text });
    this.ctx.log.info({ event: 'qr_scanned_sent' }, 'QR engagement sent');
    const message = await this.nextMessage('qr_engaged', this.ctx.timeouts.backendReplyMs);
    if (message.type === 'complete') this.fail({ kind: 'complete', outcome: message.outcome });
    if (message.op !== 'ble_exchange') {
      this.fail({ kind: 'violation', violation: outOfSequence(message, 'expected ble_exchange after qr_scanned') });
    }
    return message.params.modes;
  }

  // ------------------------------------------------------------ NFC

  private async nfcHandover(card: NfcCard): Promise<BleMode[]> {
    this.card = card;
    this.progress('engaging', 'hold_still', 1);
    this.sendExpectingReply({ type: 'step_result', op: 'nfc_card_present', status: 'ok' });
    for (;;) {
      const message = await this.nextMessage('nfc_handover', this.ctx.timeouts.backendReplyMs);
      if (message.type === 'complete') return this.fail({ kind: 'complete', outcome: message.outcome });
      switch (message.op) {
        case 'nfc_apdu':
          await this.relayApdu(decodeCheckedBase64(message.params.data));
          break;
        case 'nfc_await_card':
          await this.awaitCard();
          break;
        case 'ble_exchange':
          this.ctx.log.info({ event: 'nfc_handover_done', apdus: this.apdus }, 'NFC handover finished');
          return message.params.modes;
        default:
          return this.fail({ kind: 'violation', violation: outOfSequence(message, 'not valid during NFC handover') });
      }
    }
  }

  private async relayApdu(command: Uint8Array): Promise<void> {
    const card = this.card;
    if (!card) return this.fail({ kind: 'internal_error', detail: 'nfc_apdu without a card' });
    let reply: ClientMessage;
    try {
      const response = await this.transmit(card, command);
      reply = { type: 'step_result', op: 'nfc_rapdu', status: 'ok', data: encodeBase64(response) };
    } catch (e) {
      if (e instanceof RunStop || this.stopResult) throw new RunStop();
      const reason = e instanceof NfcTransmitError ? e.reason : 'UnknownError';
      this.ctx.log.warn({ event: 'apdu_failed', reason, apdu: this.apdus + 1 }, 'APDU exchange failed; reported to the backend');
      reply = { type: 'step_result', op: 'nfc_rapdu', status: 'error', reason };
    }
    this.apdus++;
    this.sendExpectingReply(reply);
    this.publish();
  }

  /**
   * The card's transmit with the kiosk's own guard: the port must time out by itself, but a port that
   * never answers must not hold the attempt. A response without a status word is a failure.
   */
  private async transmit(card: NfcCard, command: Uint8Array): Promise<Uint8Array> {
    const { apduMs } = this.ctx.timeouts;
    const response = await new Promise<Uint8Array>((resolve, reject) => {
      // The attempt's end (stopWith) rejects it too, without an abort listener per APDU.
      this.abortTransmit = () => reject(new RunStop());
      this.apduGuard.start(apduMs + 500, () => reject(new NfcTransmitError('Timeout', 'the card did not answer in time')));
      card.transmit(command, { timeoutMs: apduMs, signal: this.signal }).then(
        (value) => {
          this.apduGuard.stop();
          resolve(value);
        },
        (error: unknown) => {
          this.apduGuard.stop();
          reject(error instanceof Error ? error : new Error(String(error)));
        },
      );
    }).finally(() => {
      this.abortTransmit = undefined;
    });
    if (this.stopResult) throw new RunStop();
    // Spec of the NfcReader port: at least SW1 SW2. "UnresponsiveCard" takes the backend's recoverable path.
    if (response.length < 2) throw new NfcTransmitError('UnresponsiveCard', 'response without a status word');
    return response;
  }

  private async awaitCard(): Promise<void> {
    const nfc = this.ctx.devices.nfc;
    const old = this.card;
    if (!nfc || !old) return this.fail({ kind: 'internal_error', detail: 'nfc_await_card without an NFC reader' });
    this.progress('awaiting_card', 'tap_again', 1);
    this.ctx.log.info({ event: 'nfc_await_card' }, 'backend asked for a re-tap');
    this.quiet('no message expected while waiting for the card');
    const { signal, dispose } = childSignal(this.signal, this.ctx.timeouts.awaitCardMs);
    try {
      await old.release();
      this.card = undefined;
      this.releasedCard = old;
      await old.waitForRemoval(signal);
      this.card = await nfc.nextCard(signal);
    } catch (e) {
      if (this.stopResult) throw new RunStop();
      if (signal.aborted) {
        this.fail({ kind: 'timeout', phase: 'awaiting_card', detail: `no re-tap within ${this.ctx.timeouts.awaitCardMs} ms` });
      }
      throw e;
    } finally {
      dispose();
      this.endQuiet();
    }
    this.progress('engaging', 'hold_still', 1);
    this.sendExpectingReply({ type: 'step_result', op: 'nfc_card_present', status: 'ok' });
  }

  // ------------------------------------------------------------ BLE

  private usable(role: BleRole): { usable: boolean; reason: string } {
    const port = role === 'central' ? this.ctx.devices.bleCentral : this.ctx.devices.blePeripheral;
    if (!port) return { usable: false, reason: 'not_configured' };
    const availability = port.availability();
    return { usable: availability.usable, reason: availability.reason ?? 'unavailable' };
  }

  private async bleTransfer(modes: BleMode[]): Promise<RunResult> {
    this.step = 2;
    this.progress('ble_connecting', 'connecting_phone', 2);
    const chosen = modes.find((mode) => this.usable(mode.role).usable);
    this.quiet('ble_connected not sent yet');
    if (!chosen) {
      const first = modes[0] as BleMode;
      const why = (['central', 'peripheral'] as const).map((role) => `${role} ${this.usable(role).reason}`).join(', ');
      return this.reportSetupFailure(first.role, `no offered BLE role is usable (${why})`);
    }
    this.mode = chosen;
    this.role = chosen.role;
    this.ctx.log.info({ event: 'ble_mode_chosen', role: chosen.role, offered: modes.length }, 'BLE mode chosen');
    return chosen.role === 'central' ? this.centralTransfer(chosen) : this.peripheralTransfer(chosen);
  }

  /**
   * `ble_connected` with `status: error`. What the backend does next is not shown (spec §3), so the
   * kiosk waits a reply's time for its `error` (or anything else) and then gives up on the attempt.
   */
  private async reportSetupFailure(role: BleRole, reason: string): Promise<RunResult> {
    this.endQuiet();
    this.ctx.log.warn({ event: 'ble_setup_failed', role, reason }, 'BLE setup failed');
    this.send({ type: 'step_result', op: 'ble_connected', status: 'error', role, reason });
    let arrival: Arrival;
    try {
      arrival = await this.ctx.channel.next(this.ctx.timeouts.backendReplyMs, this.signal);
    } catch (e) {
      if (e instanceof ChannelTimeoutError) return { kind: 'ble_failed', role, reason };
      throw e;
    }
    const message = this.unwrap(arrival);
    if (message.type === 'complete') return { kind: 'complete', outcome: message.outcome };
    return this.fail({ kind: 'violation', violation: outOfSequence(message, 'unexpected after ble_connected error') });
  }

  private specFor(uuid: string): { name: 'state' | 'c2s' | 's2c' | 'ident'; spec: CharacteristicSpec } | undefined {
    const cached = this.charIndex.get(uuid);
    if (cached !== undefined) return cached ?? undefined;
    const chars = this.mode?.characteristics;
    if (!chars) return undefined;
    const key = uuidKey(uuid);
    let found: { name: 'state' | 'c2s' | 's2c' | 'ident'; spec: CharacteristicSpec } | null = null;
    for (const name of ['state', 'c2s', 's2c', 'ident'] as const) {
      const spec = chars[name];
      if (spec && uuidKey(spec.uuid) === key) {
        found = { name, spec };
        break;
      }
    }
    // Bounded: a misbehaving peer must not grow it without limit.
    if (this.charIndex.size < 64) this.charIndex.set(uuid, found);
    return found ?? undefined;
  }

  /** The UUID spelled as the backend spelled it in `ble_exchange`, for messages back to it. */
  private backendUuid(uuid: string): string {
    return this.specFor(uuid)?.spec.uuid ?? uuid;
  }

  private touch(): void {
    this.lastActivity = this.now();
  }

  /** Ends the attempt after `bleIdleMs` without traffic in either direction. */
  private startIdleWatchdog(): void {
    const { bleIdleMs } = this.ctx.timeouts;
    this.touch();
    const check = (): void => {
      const idle = this.now() - this.lastActivity;
      if (idle >= bleIdleMs) {
        this.stopWith({ kind: 'timeout', phase: 'ble_transfer', detail: `no BLE traffic for ${bleIdleMs} ms` });
      } else {
        this.after(bleIdleMs - idle, check);
      }
    };
    this.after(bleIdleMs, check);
  }

  private sendBle(message: ClientMessage): void {
    this.send(message);
    this.bleMessages++;
    this.touch();
  }

  /**
   * `ble_connected` (ok) has just been sent: from now on `ble_write`s may arrive (spec §3 rule 3). The
   * transfer interceptor goes in before any further socket input can be read.
   */
  private connected(role: BleRole): void {
    this.ctx.channel.setInterceptor((arrival) => this.interceptTransfer(arrival, role === 'peripheral' ? this.pendingRead : undefined));
    this.progress('transferring', 'approve_on_phone', 3);
    this.startIdleWatchdog();
  }

  /** The link to the phone dropped. After the end byte that is expected; before it, `complete` gets a grace period. */
  private onLinkLost(reason: string): void {
    if (this.linkLost !== undefined || this.stopResult) return;
    this.linkLost = reason;
    this.ctx.log.info({ event: 'ble_link_lost', reason, transferFinished: this.transferFinished }, 'BLE link to the phone ended');
    if (this.transferFinished) return;
    this.after(this.ctx.timeouts.bleLinkLossGraceMs, () => this.stopWith({ kind: 'ble_link_lost', reason }));
  }

  private async centralTransfer(mode: BleMode): Promise<RunResult> {
    const port = this.ctx.devices.bleCentral;
    if (!port) return this.fail({ kind: 'internal_error', detail: 'central mode without a central port' });
    let connectedSent = false;
    const early: ClientMessage[] = [];
    const handlers = {
      onNotification: (characteristicUuid: string, data: Uint8Array): void => {
        if (this.stopResult) return;
        const message: ClientMessage = {
          type: 'step_result',
          op: 'ble_notified',
          char: this.backendUuid(characteristicUuid),
          data: encodeBase64(data),
        };
        if (!connectedSent) {
          early.push(message);
          return;
        }
        try {
          this.sendBle(message);
        } catch {
          // send() recorded the dropped socket and aborted the attempt.
        }
      },
      onDisconnect: (reason: string): void => this.onLinkLost(reason),
    };
    let link: BleCentralLink;
    try {
      link = await this.device((signal) => port.connect(profileOf(mode), handlers, signal), this.ctx.timeouts.bleSetupMs, 'BLE central setup');
    } catch (e) {
      if (e instanceof RunStop) throw e;
      return this.reportSetupFailure('central', setupReason(e, 'scan and connect', this.ctx.timeouts.bleSetupMs));
    }
    this.central = link;
    this.send({ type: 'step_result', op: 'ble_connected', status: 'ok', role: 'central' });
    connectedSent = true;
    this.connected('central');
    this.ctx.log.info({ event: 'ble_connected', role: 'central', mtu: link.mtu ?? null }, 'BLE connected');
    for (const message of early.splice(0)) this.sendBle(message);
    return this.transferLoop('central', (uuid, data) => link.write(uuid, data));
  }

  private async peripheralTransfer(mode: BleMode): Promise<RunResult> {
    const port = this.ctx.devices.blePeripheral;
    if (!port) return this.fail({ kind: 'internal_error', detail: 'peripheral mode without a peripheral port' });
    const events = new AsyncQueue<PeripheralEvent>();
    try {
      this.peripheral = await this.device(
        (signal) => port.advertise(profileOf(mode), (event) => events.push(event), signal),
        this.ctx.timeouts.bleSetupMs,
        'BLE advertising',
      );
    } catch (e) {
      if (e instanceof RunStop) throw e;
      return this.reportSetupFailure('peripheral', setupReason(e, 'advertising', this.ctx.timeouts.bleSetupMs));
    }
    this.ctx.log.info({ event: 'ble_advertising' }, 'advertising, waiting for the phone');
    const firstEvent = deferred<'connected' | 'failed'>();
    const setup = { over: false };
    const setupTimer = this.after(this.ctx.timeouts.bleSetupMs, () => {
      setup.over = true; // from now on a late phone must not trigger a second ble_connected
      firstEvent.resolve('failed');
    });
    // The BLE side runs concurrently with the socket side; a failure in either ends both.
    void this.peripheralEventLoop(events, setup, () => {
      this.cancelTimer(setupTimer);
      firstEvent.resolve('connected');
    }).catch((e: unknown) => {
      if (!(e instanceof RunStop) && !this.stopResult) this.stopWith(this.unexpected(e));
    });
    const aborted = new Promise<'aborted'>((resolve) => this.signal.addEventListener('abort', () => resolve('aborted'), { once: true }));
    const first = await Promise.race([firstEvent.promise, aborted]);
    if (first === 'aborted') throw new RunStop();
    if (first === 'failed') {
      // Stop advertising before reporting: the attempt is over for this phone.
      const session = this.peripheral;
      this.peripheral = undefined;
      await withTimeout(session.close(), 2_000, new AbortController().signal, 'peripheral close').catch(() => undefined);
      return this.reportSetupFailure('peripheral', `no phone connected within ${this.ctx.timeouts.bleSetupMs} ms`);
    }
    const session = this.peripheral;
    return this.transferLoop('peripheral', (uuid, data) => session.notify(uuid, data));
  }

  private async peripheralEventLoop(
    events: AsyncQueue<PeripheralEvent>,
    setup: { readonly over: boolean },
    onFirstGattEvent: () => void,
  ): Promise<void> {
    let connectedSent = false;
    for (;;) {
      const event = await events.shift(this.signal).catch(() => {
        throw new RunStop();
      });
      if (event.kind === 'connect') {
        this.ctx.log.info({ event: 'ble_phone_connected' }, 'phone connected to the kiosk service');
        continue;
      }
      if (event.kind === 'disconnect') {
        this.onLinkLost(event.reason);
        continue;
      }
      if (!connectedSent) {
        if (setup.over) return; // ble_connected (error) was sent already: the phone came too late
        // The phone's first GATT event means it is connected (spec §4.5): ble_connected goes first.
        this.send({ type: 'step_result', op: 'ble_connected', status: 'ok', role: 'peripheral' });
        connectedSent = true;
        this.connected('peripheral');
        this.ctx.log.info({ event: 'ble_connected', role: 'peripheral' }, 'BLE connected');
        onFirstGattEvent();
      }
      this.touch();
      switch (event.kind) {
        case 'subscribe':
        case 'unsubscribe':
          break;
        case 'write':
          this.sendBle({
            type: 'step_result',
            op: 'ble_written',
            char: this.backendUuid(event.characteristicUuid),
            data: encodeBase64(event.data),
          });
          break;
        case 'read':
          await this.relayRead(event);
          break;
      }
    }
  }

  /** `ble_read_request`, then the very next socket message must be the `ble_read_response` (spec §4.3). */
  private async relayRead(event: Extract<PeripheralEvent, { kind: 'read' }>): Promise<void> {
    const answered = deferred<Uint8Array>();
    this.pendingRead.current = answered.resolve;
    this.sendBle({ type: 'step_result', op: 'ble_read_request', char: this.backendUuid(event.characteristicUuid) });
    try {
      const value = await this.device(() => answered.promise, this.ctx.timeouts.bleReadResponseMs, 'ble_read_response');
      event.respond(value);
      this.touch();
    } catch (e) {
      event.fail();
      if (e instanceof TimeoutError) {
        this.fail({ kind: 'timeout', phase: 'ble_read_response', detail: `no ble_read_response within ${this.ctx.timeouts.bleReadResponseMs} ms` });
      }
      throw e;
    } finally {
      this.pendingRead.current = undefined;
    }
  }

  /**
   * The socket side of the BLE transfer. `ble_write`s are delivered strictly in arrival order, each one
   * finished before the next. Terminal arrivals (`error`, a close) act at once; `complete` waits for the
   * writes queued before it (the 0x02 end byte) for at most `completionFlushMs`.
   */
  private async transferLoop(role: BleRole, deliver: (uuid: string, data: Uint8Array) => Promise<void>): Promise<RunResult> {
    for (;;) {
      const message = await this.nextMessage('ble_transfer', Number.POSITIVE_INFINITY);
      this.touch();
      if (message.type === 'complete') return { kind: 'complete', outcome: message.outcome };
      if (message.op !== 'ble_write') {
        const detail = message.op === 'ble_read_response' ? 'ble_read_response without a pending ble_read_request' : 'not valid during the BLE transfer';
        return this.fail({ kind: 'violation', violation: outOfSequence(message, detail) });
      }
      const target = this.specFor(message.params.char);
      if (!target) {
        return this.fail({
          kind: 'violation',
          violation: outOfSequence(message, 'ble_write to a characteristic that is not in the chosen mode'),
        });
      }
      const needed = role === 'central' ? 'write_without_response' : 'notify';
      if (!target.spec.operations.includes(needed)) {
        return this.fail({
          kind: 'violation',
          violation: outOfSequence(message, `ble_write to ${target.name}, whose operations lack ${needed}`),
        });
      }
      const data = decodeCheckedBase64(message.params.data);
      await this.deliverWrite(deliver, target.spec.uuid, data);
      if (target.name === 'state' && data.length === 1 && data[0] === STATE_END) {
        this.transferFinished = true;
        this.step = 4;
        this.publish();
      }
    }
  }

  private interceptTransfer(arrival: Arrival, pendingRead?: { current: undefined | ((value: Uint8Array) => void) }): boolean {
    const respond = pendingRead?.current;
    if (arrival.kind === 'message' && arrival.message.type === 'step_request' && arrival.message.op === 'ble_read_response') {
      if (!pendingRead || !respond) return false; // unsolicited: the loop reports it in order
      pendingRead.current = undefined; // answered: a second response is unsolicited
      respond(decodeCheckedBase64(arrival.message.params.data));
      return true;
    }
    if (respond && !(arrival.kind === 'closed' && this.completion)) {
      // A read is pending: this arrival should have been its response.
      try {
        const message = this.unwrap(arrival);
        this.fail({
          kind: 'violation',
          violation: outOfSequence(message, 'expected ble_read_response right after ble_read_request'),
        });
      } catch {
        // fail() or unwrap() recorded the result.
      }
      return true;
    }
    if (arrival.kind === 'message' && arrival.message.type === 'complete') {
      this.completion = arrival.message.outcome;
      const outcome = arrival.message.outcome;
      this.after(this.ctx.timeouts.completionFlushMs, () => this.stopWith({ kind: 'complete', outcome }));
      return false;
    }
    if (arrival.kind === 'closed' && this.completion) return false; // complete is queued ahead of it
    if (arrival.kind === 'closed' || (arrival.kind === 'message' && arrival.message.type === 'error')) {
      try {
        this.unwrap(arrival);
      } catch {
        // unwrap() recorded the result.
      }
      return true;
    }
    return false;
  }

  private async deliverWrite(deliver: (uuid: string, data: Uint8Array) => Promise<void>, uuid: string, data: Uint8Array): Promise<void> {
    if (this.linkLost !== undefined) {
      this.ctx.log.debug({ event: 'ble_write_skipped', reason: 'link lost' }, 'ble_write not delivered');
      return;
    }
    try {
      await this.device(() => deliver(uuid, data), this.ctx.timeouts.bleWriteMs, 'ble_write');
      this.bleMessages++;
      this.touch();
    } catch (e) {
      if (e instanceof RunStop) throw e;
      if (e instanceof TimeoutError) {
        this.fail({ kind: 'timeout', phase: 'ble_write', detail: `a ble_write took longer than ${this.ctx.timeouts.bleWriteMs} ms` });
      }
      this.onLinkLost(`write failed: ${e instanceof Error ? e.message : 'unknown'}`);
    }
  }

  // ------------------------------------------------------------ teardown

  private async teardown(): Promise<void> {
    this.controller.abort();
    this.apduGuard.dispose();
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    this.ctx.channel.setInterceptor(undefined);
    const closing: Promise<void>[] = [];
    if (this.central) closing.push(this.central.close());
    if (this.peripheral) closing.push(this.peripheral.close());
    if (this.card) closing.push(this.card.release());
    // close()/release() never reject by contract; bound them anyway so teardown cannot hang.
    const guard = new AbortController();
    await withTimeout(Promise.allSettled(closing), 2_000, guard.signal, 'device teardown').catch(() => {
      this.ctx.log.warn({ event: 'teardown_slow' }, 'device teardown did not finish in time');
    });
  }

  /** The latest card of an NFC attempt. */
  get lastCard(): NfcCard | undefined {
    return this.card ?? this.releasedCard;
  }
}

function setupReason(e: unknown, what: string, ms: number): string {
  if (e instanceof BleSetupError) return e.reason;
  if (e instanceof TimeoutError) return `${what} timed out after ${ms} ms`;
  return `${what} failed: ${e instanceof Error ? e.message : 'unknown error'}`;
}
