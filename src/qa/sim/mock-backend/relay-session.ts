/**
 * One WebSocket connection of a session: the service side of the relay protocol (spec §3, §4.3–4.4,
 * §7), strictly sequenced. The reader engine supplies the ISO content of each step.
 *
 *   socket_open ─engage─► engaged ─qr_scanned─────────────────────────────► ble_exchange
 *                                 └nfc_card_present─► nfc_handover ⇄ awaiting_card ─► ble_exchange
 *   ble_exchange ─ble_connected ok─► ble_transfer ─(engine outcome)─► complete
 *
 * Any rule broken → `error` with the text of its cause (wire.ts `faults`), after which the session is
 * back in its initial state: the kiosk closes the socket and may reconnect with the same credentials.
 */
import type { WebSocket } from 'ws';
import type { BleActions, NfcStep, ReaderEngine, ReaderEngineFactory } from './engine.js';
import type { FaultController, Phase } from './faults.js';
import type { ProtocolLog } from './protocol-log.js';
import type { StoredSession } from './session-store.js';
import {
  RECOVERABLE_PCSC,
  backend,
  faults,
  parseClientFrame,
  sameUuid,
  type BackendMessage,
  type BleModeWire,
  type ClientMessage,
  type OutcomeWire,
  type ProtocolFault,
} from './wire.js';

/** Longer than an ISO/IEC 7816-4 extended-length command can be (65,544 bytes): a hostile-backend fault the kiosk must refuse. */
const OVERSIZE_APDU_BYTES = 70_000;
/** The longest delay `setTimeout` honours (2^31 − 1 ms); longer ones fire at once. */
const MAX_TIMER_MS = 0x7fffffff;

export interface RelaySessionOptions {
  readonly engineFactory: ReaderEngineFactory;
  /** Recoverable PC/SC failures allowed per verification before "NFC retries exhausted" (spec §8: not shown). */
  readonly nfcRetryLimit: number;
  readonly faults: FaultController;
  readonly log: ProtocolLog;
  /** How long to wait for the kiosk to close the socket after `error` or `complete` before closing it. */
  readonly closeGraceMs: number;
}

type State = Phase | 'failed' | 'closed';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export class RelaySession {
  private state: State = 'socket_open';
  private engine: ReaderEngine | undefined;
  private modes: BleModeWire[] = [];
  private role: 'central' | 'peripheral' | undefined;
  private lastApdu: Uint8Array | undefined;
  private nfcRetries = 0;
  private apdusAnswered = 0;
  private apdusSent = 0;
  /** Messages are handled one at a time, in arrival order. */
  private chain: Promise<void> = Promise.resolve();
  private closeTimer: NodeJS.Timeout | undefined;
  private expiryTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly ws: WebSocket,
    private readonly session: StoredSession,
    private readonly options: RelaySessionOptions,
  ) {
    ws.on('message', (data: Buffer, isBinary: boolean) => this.onFrame(data, isBinary));
    ws.on('close', () => this.onClose());
    ws.on('error', () => undefined); // followed by 'close'
    this.watchExpiry();
    this.enter('socket_open');
  }

  /** With the `closeAtExpiry` fault, the socket is closed when the session's lifetime ends. */
  private watchExpiry(): void {
    const left = this.session.expiresAt - Date.now();
    // Beyond Node's timer range (about 24.8 days) the timer would fire at once.
    if (left > MAX_TIMER_MS) return;
    this.expiryTimer = setTimeout(
      () => {
        if (!this.options.faults.current.closeAtExpiry || this.ws.readyState !== this.ws.OPEN) return;
        this.options.log.event('expiry_close', { session: this.session.id });
        this.ws.close(1001, 'session expired');
      },
      Math.max(0, left),
    );
  }

  get phase(): State {
    return this.state;
  }

  // ------------------------------------------------------------ inbound

  /**
   * Every frame, valid or not, is handled in arrival order: a bad frame must not overtake the messages
   * before it. A read request is answered as soon as its turn comes (spec §4.3); the engine's writes are
   * sent without pause, so nothing it produced can land between the request and its response.
   */
  private onFrame(data: Buffer, isBinary: boolean): void {
    if (this.state === 'failed' || this.state === 'closed') return;
    let step: () => Promise<void> | void;
    if (isBinary) {
      this.options.log.message(this.session.id, 'in', { binaryFrame: data.length });
      step = () => this.fail(faults.malformedJson());
    } else {
      const text = data.toString('utf8');
      const parsed = parseClientFrame(text);
      this.options.log.message(this.session.id, 'in', parsed.ok ? safeJson(text) : { unparsable: text.length, cause: parsed.fault.cause });
      if (!parsed.ok) step = () => this.fail(parsed.fault);
      else if (this.options.faults.current.errorOnOp === parsed.message.op)
        step = () => this.fail(faults.injected(`error on ${parsed.message.op}`));
      else step = () => this.handle(parsed.message);
    }
    this.chain = this.chain.then(step).catch((e: unknown) => {
      this.fail(faults.reader(e instanceof Error ? e.message : 'internal failure'));
    });
  }

  private async handle(message: ClientMessage): Promise<void> {
    if (this.state === 'failed' || this.state === 'closed') return;
    switch (message.op) {
      case 'engage':
        this.onEngage(message.namespaces);
        return;
      case 'qr_scanned':
        return this.onQr(message.data);
      case 'nfc_card_present':
        return this.onCardPresent();
      case 'nfc_rapdu':
        return message.ok ? this.onRapdu(message.data) : this.onRapduError(message.reason);
      case 'ble_connected':
        if (message.ok) return this.onBleConnected(message.role);
        this.fail(faults.bleSetupFailed(message.reason));
        return;
      case 'ble_notified':
        return this.onBleNotified(message.char, message.data);
      case 'ble_written':
        return this.onBleWritten(message.char, message.data);
      case 'ble_read_request':
        this.answerRead(message.char);
        return;
    }
  }

  private expect(op: string, ...phases: State[]): boolean {
    if (phases.includes(this.state)) return true;
    this.fail(faults.outOfSequence(op, this.state));
    return false;
  }

  private onEngage(namespaces: Record<string, string[]>): void {
    if (!this.expect('engage', 'socket_open')) return;
    this.engine = this.options.engineFactory({ sessionId: this.session.id, namespaces });
    this.enter('engaged');
  }

  private async onQr(text: string): Promise<void> {
    if (!this.expect('qr_scanned', 'engaged') || !this.engine) return;
    this.enter('ble_exchange'); // the transport is fixed (spec §3 rule 1)
    const engagement = await this.engine.qrScanned(text);
    if (engagement.kind === 'failed') {
      this.fail(faults.reader(engagement.reason));
      return;
    }
    await this.offer(engagement.modes);
  }

  private async onCardPresent(): Promise<void> {
    if (!this.expect('nfc_card_present', 'engaged', 'awaiting_card') || !this.engine) return;
    if (this.state === 'awaiting_card') {
      // Re-tapped and reconnected: the APDU that failed is sent again (spec §3).
      this.enter('nfc_handover');
      if (this.lastApdu) await this.send(backend.nfcApdu(this.lastApdu));
      return;
    }
    this.enter('nfc_handover');
    await this.nfcStep(this.engine.nfcStart());
  }

  private async onRapdu(response: Uint8Array): Promise<void> {
    if (!this.expect('nfc_rapdu', 'nfc_handover') || !this.engine) return;
    this.apdusAnswered++;
    const fatalAfter = this.options.faults.current.fatalAfterApdu;
    if (fatalAfter !== undefined && this.apdusAnswered >= fatalAfter) {
      this.fail(faults.injected(`fatal error after APDU ${this.apdusAnswered}`));
      return;
    }
    await this.nfcStep(await this.engine.nfcResponse(response));
  }

  private async onRapduError(reason: string): Promise<void> {
    if (!this.expect('nfc_rapdu', 'nfc_handover')) return;
    // Spec §7.3: the backend classifies; recoverable variants wait for a re-tap, others are fatal.
    if (!RECOVERABLE_PCSC.has(reason)) {
      this.fail(faults.fatalPcsc(reason));
      return;
    }
    this.nfcRetries++;
    if (this.nfcRetries > this.options.nfcRetryLimit) {
      this.fail(faults.nfcRetriesExhausted(this.options.nfcRetryLimit));
      return;
    }
    this.enter('awaiting_card');
    await this.send(backend.nfcAwaitCard());
  }

  private async nfcStep(step: NfcStep): Promise<void> {
    switch (step.kind) {
      case 'apdu': {
        this.lastApdu = step.apdu;
        this.apdusSent++;
        const oversize = this.options.faults.current.oversizeApduAt === this.apdusSent;
        await this.send(backend.nfcApdu(oversize ? new Uint8Array(OVERSIZE_APDU_BYTES) : step.apdu));
        return;
      }
      case 'done':
        this.enter('ble_exchange');
        await this.offer(step.modes);
        return;
      case 'failed':
        this.fail(faults.reader(step.reason));
        return;
    }
  }

  private async offer(modes: BleModeWire[]): Promise<void> {
    if (modes.length === 0) {
      this.fail(faults.reader('the engagement offers no BLE mode'));
      return;
    }
    this.modes = modes;
    await this.send(backend.bleExchange(modes));
  }

  private async onBleConnected(role: 'central' | 'peripheral'): Promise<void> {
    if (!this.expect('ble_connected', 'ble_exchange') || !this.engine) return;
    if (this.modes.length === 0) {
      this.fail(faults.outOfSequence('ble_connected', 'ble_exchange not sent yet'));
      return;
    }
    if (!this.modes.some((m) => m.role === role)) {
      this.fail(faults.invalidField('ble_connected', 'role', `${role} was not offered`));
      return;
    }
    this.role = role;
    this.enter('ble_transfer');
    await this.act(await this.engine.bleConnected(role));
  }

  private mode(): BleModeWire | undefined {
    return this.modes.find((m) => m.role === this.role);
  }

  private knownChar(char: string): boolean {
    const chars = this.mode()?.characteristics;
    if (!chars) return false;
    return [chars.state, chars.c2s, chars.s2c, chars.ident].some((c) => c !== undefined && sameUuid(c.uuid, char));
  }

  private async onBleNotified(char: string, data: Uint8Array): Promise<void> {
    // Spec §3 rule 3 and §4.3: central role only, after ble_connected.
    if (!this.expect('ble_notified', 'ble_transfer') || !this.engine) return;
    if (this.role !== 'central') {
      this.fail(faults.outOfSequence('ble_notified', `ble_transfer (role ${this.role ?? 'none'})`));
      return;
    }
    if (!this.knownChar(char)) {
      this.fail(faults.invalidField('ble_notified', 'char', 'not a characteristic of the chosen mode'));
      return;
    }
    await this.act(await this.engine.bleNotified(char, data));
  }

  private async onBleWritten(char: string, data: Uint8Array): Promise<void> {
    if (!this.expect('ble_written', 'ble_transfer') || !this.engine) return;
    if (this.role !== 'peripheral') {
      this.fail(faults.outOfSequence('ble_written', `ble_transfer (role ${this.role ?? 'none'})`));
      return;
    }
    if (!this.knownChar(char)) {
      this.fail(faults.invalidField('ble_written', 'char', 'not a characteristic of the chosen mode'));
      return;
    }
    await this.act(await this.engine.bleWritten(char, data));
  }

  private answerRead(char: string): void {
    if (this.state !== 'ble_transfer' || this.role !== 'peripheral' || !this.engine) {
      this.fail(
        faults.outOfSequence('ble_read_request', this.state === 'ble_transfer' ? `ble_transfer (role ${this.role ?? 'none'})` : this.state),
      );
      return;
    }
    if (!this.knownChar(char)) {
      this.fail(faults.invalidField('ble_read_request', 'char', 'not a characteristic of the chosen mode'));
      return;
    }
    this.sendNow(backend.bleReadResponse(this.engine.bleReadRequest(char)));
  }

  private async act(actions: BleActions): Promise<void> {
    if (actions.failure !== undefined) {
      this.fail(faults.reader(actions.failure));
      return;
    }
    for (const write of actions.writes) {
      if (this.state !== 'ble_transfer') return;
      await this.send(backend.bleWrite(write.char, write.data));
    }
    if (actions.outcome) await this.complete(actions.outcome);
  }

  private async complete(outcome: OutcomeWire): Promise<void> {
    this.session.result = outcome;
    this.enter('complete');
    await this.send(backend.complete(outcome));
    this.disposeEngine();
    this.closeSoon();
  }

  // ------------------------------------------------------------ outbound

  private async send(message: BackendMessage): Promise<void> {
    const delay = this.options.faults.current.delayMs[message.type === 'step_request' ? message.op : message.type];
    if (delay) await sleep(delay);
    if (this.state === 'closed' || (this.state === 'failed' && message.type !== 'error')) return;
    this.sendNow(message);
  }

  private sendNow(message: BackendMessage): void {
    if (this.ws.readyState !== this.ws.OPEN) return;
    if (this.options.faults.takeMalformed()) {
      this.options.log.message(this.session.id, 'out', { injected: 'malformed JSON' });
      this.ws.send('{"type": "step_request", "op": ');
      return;
    }
    this.options.log.message(this.session.id, 'out', message);
    this.ws.send(JSON.stringify(message));
  }

  /** Sends `error` and resets the session to its initial state (spec §3 "Any phase", §7.2). */
  private fail(fault: ProtocolFault): void {
    if (this.state === 'failed' || this.state === 'closed') return;
    this.options.log.event('protocol_error', { session: this.session.id, phase: this.state, cause: fault.cause, text: fault.text });
    this.state = 'failed';
    this.disposeEngine();
    this.sendNow(backend.error(fault));
    this.closeSoon();
  }

  private enter(phase: Phase): void {
    this.state = phase;
    const plan = this.options.faults.current;
    if (plan.terminateAtPhase === phase) {
      this.options.log.event('fault_terminate', { session: this.session.id, phase });
      this.ws.terminate();
      return;
    }
    if (plan.closeAtPhase === phase) {
      this.options.log.event('fault_close', { session: this.session.id, phase });
      this.ws.close(1011, `injected fault: close at ${phase}`);
    }
  }

  /** After `complete` or `error` the kiosk closes; if it does not, the backend does. */
  private closeSoon(): void {
    clearTimeout(this.closeTimer);
    this.closeTimer = setTimeout(() => {
      if (this.ws.readyState === this.ws.OPEN) this.ws.close(1000, 'session step finished');
    }, this.options.closeGraceMs);
  }

  private onClose(): void {
    clearTimeout(this.closeTimer);
    clearTimeout(this.expiryTimer);
    this.state = 'closed';
    this.session.connected = false;
    this.disposeEngine();
    this.options.log.event('ws_closed', { session: this.session.id });
  }

  private disposeEngine(): void {
    this.engine?.dispose();
    this.engine = undefined;
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return { unparsable: text.length };
  }
}
