/**
 * BLE part of a verification (docs/protocol.md, from `ble_exchange` to `complete`), common to both roles: pick the first mode whose role
 * is usable now, report a setup failure with `ble_connected` (error), then the socket side of the
 * transfer — `ble_write`s delivered strictly in order, `complete` after the writes queued before it —
 * with the idle watchdog and the handling of a lost link. The role-specific setup and the phone-side
 * events are in `ble-central.ts` and `ble-peripheral.ts`.
 */
import { decodeCheckedBase64 } from '../../common/protocol/base64.js';
import type { BleMode, BleRole, ClientMessage, Outcome } from '../../common/protocol/messages.js';
import { uuidKey } from '../../common/protocol/uuid.js';
import { ATT_MAX_VALUE_BYTES, BleValueTooLargeError } from '../../devices/ports.js';
import { TimeoutError } from '../async-tools.js';
import { ChannelTimeoutError, type Arrival } from '../relay-channel.js';
import { RunStop, outOfSequence, type Attempt } from './attempt.js';
import {
  MAX_OUTBOUND_BUFFERED_BYTES,
  MAX_PHONE_ATT_MTU,
  MAX_PHONE_VALUE_BYTES,
  type Deliver,
  type Flush,
  type KnownCharacteristic,
  type PendingRead,
} from './ble-common.js';
import type { RunResult } from './results.js';

const STATE_END = 0x02;
/** The end byte as strict base64 (the only spelling the message schema lets through). */
const STATE_END_BASE64 = 'Ag==';

/** The characteristic an arriving `ble_write` of the end byte is for, if the arrival is one. */
function endByteTarget(arrival: Arrival): string | undefined {
  if (arrival.kind !== 'message') return undefined;
  const { message } = arrival;
  const endByte = message.type === 'step_request' && message.op === 'ble_write' && message.params.data === STATE_END_BASE64;
  return endByte ? message.params.char : undefined;
}

/**
 * How long a verification waits for an offered role whose adapter is still coming up (`starting`) before it
 * picks a mode. The adapters settle within 3 s (ADAPTER_SETTLE_MS: an adapter still off then is
 * `powered_off`); this bound is above that, and also bounded by `bleSetupMs`.
 */
export const ADAPTER_STARTING_WAIT_MS = 4_000;

/** The setup and transfer of one role (ble-central.ts, ble-peripheral.ts), given by the caller. */
export type RoleTransfer = (transfer: BleTransfer, mode: BleMode) => Promise<RunResult>;

export class BleTransfer {
  private mode: BleMode | undefined;
  /** Characteristics of the chosen mode by UUID spelling, filled as UUIDs are seen. */
  private readonly charIndex = new Map<string, KnownCharacteristic | null>();
  private linkLost: string | undefined;
  /** `ble_connected` (ok) was sent: from then on a lost link ends the transfer. */
  private isConnected = false;
  /** A `ble_write` (the request) has reached the phone. */
  private writesDelivered = false;
  private answerSeen = false;
  private completion: Outcome | undefined;
  private lastActivity = 0;
  private warnedAboveMaximum = false;
  readonly pendingRead: PendingRead = { current: undefined };

  constructor(readonly attempt: Attempt) {}

  /** Picks the mode and runs its role; the roles are given so that they may build on this class. */
  async run(modes: BleMode[], roles: Readonly<Record<BleRole, RoleTransfer>>): Promise<RunResult> {
    const { attempt } = this;
    attempt.progress('ble_connecting', 'connecting_phone', 2);
    attempt.quiet('ble_connected not sent yet');
    // Checked first: with nothing starting the setup begins in this very turn, as it always did.
    if (this.anyStarting(modes)) await this.whileStarting(modes);
    const chosen = modes.find((mode) => this.usable(mode.role).usable);
    if (!chosen) {
      const first = modes[0] as BleMode; // the schema requires at least one mode
      const why = (['central', 'peripheral'] as const).map((role) => `${role} ${this.usable(role).reason}`).join(', ');
      return this.reportSetupFailure(first.role, `no offered BLE role is usable (${why})`, true);
    }
    this.mode = chosen;
    attempt.role = chosen.role;
    attempt.ctx.log.info({ event: 'ble_mode_chosen', role: chosen.role, offered: modes.length }, 'BLE mode chosen');
    return roles[chosen.role](this, chosen);
  }

  /**
   * An adapter that is coming up is neither usable nor unusable yet: wait (bounded) until no offered role
   * is `starting`, so that a scan landing while the adapter starts is not refused as `powered_off` or
   * passed to a later mode.
   */
  private anyStarting(modes: readonly BleMode[]): boolean {
    return modes.some((m) => this.usable(m.role).reason === 'starting');
  }

  private async whileStarting(modes: readonly BleMode[]): Promise<void> {
    const { attempt } = this;
    const { timeouts } = attempt.ctx;
    const starting = (): boolean => this.anyStarting(modes);
    const waitMs = Math.min(ADAPTER_STARTING_WAIT_MS, timeouts.bleSetupMs);
    attempt.ctx.log.info({ event: 'ble_adapter_starting', waitMs }, 'a Bluetooth adapter is coming up: waiting for it');
    let poll: NodeJS.Timeout | undefined;
    try {
      // Polled, not only listened to: change notifications are optional on the ports.
      await attempt.device(
        () =>
          new Promise<void>((resolve) => {
            const check = (): void => {
              if (starting()) return;
              clearInterval(poll);
              resolve();
            };
            poll = setInterval(check, 10);
          }),
        waitMs,
        'BLE adapter start',
      );
    } catch (e) {
      if (!(e instanceof TimeoutError)) throw e; // still starting at the bound: the choice below says so
    } finally {
      clearInterval(poll);
    }
  }

  private usable(role: BleRole): { usable: boolean; reason: string } {
    const { devices } = this.attempt.ctx;
    const port = role === 'central' ? devices.bleCentral : devices.blePeripheral;
    if (!port) return { usable: false, reason: 'not_configured' };
    try {
      const availability = port.availability();
      return { usable: availability.usable, reason: availability.reason ?? 'unavailable' };
    } catch {
      return { usable: false, reason: 'adapter_error' }; // an adapter that cannot even say is not usable
    }
  }

  /**
   * `ble_connected` with `status: error`. The backend contract does not say what the backend does next
   * (docs/protocol.md), so the kiosk waits a reply's time for its `error` (or `complete`) and then gives up
   * on the attempt.
   */
  async reportSetupFailure(role: BleRole, reason: string, unavailable = false): Promise<RunResult> {
    const { attempt } = this;
    attempt.endQuiet();
    attempt.ctx.log.warn({ event: 'ble_setup_failed', role, reason }, 'BLE setup failed');
    attempt.send({ type: 'step_result', op: 'ble_connected', status: 'error', role, reason });
    let arrival: Arrival;
    try {
      arrival = await attempt.ctx.channel.next(attempt.ctx.timeouts.backendReplyMs, attempt.signal);
    } catch (e) {
      if (e instanceof ChannelTimeoutError) return { kind: 'ble_failed', role, reason, unavailable };
      throw e;
    }
    // The backend's `error` (or its close) answers the kiosk's own failure: the cause the report and the
    // screen give is the Bluetooth setup, not the backend.
    if (arrival.kind === 'message' && arrival.message.type === 'error') {
      attempt.ctx.log.info(
        { event: 'backend_error_after_ble_failure', messageLength: arrival.message.message.length },
        'the backend ended the session after the BLE setup failure',
      );
      return { kind: 'ble_failed', role, reason, unavailable };
    }
    if (arrival.kind === 'closed') return { kind: 'ble_failed', role, reason, unavailable };
    const message = attempt.unwrap(arrival);
    if (message.type === 'complete') return { kind: 'complete', outcome: message.outcome };
    return attempt.fail({ kind: 'violation', violation: outOfSequence(message, 'unexpected after ble_connected error') });
  }

  specFor(uuid: string): KnownCharacteristic | undefined {
    const cached = this.charIndex.get(uuid);
    if (cached !== undefined) return cached ?? undefined;
    const chars = this.mode?.characteristics;
    if (!chars) return undefined;
    const key = uuidKey(uuid);
    let found: KnownCharacteristic | null = null;
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
  backendUuid(uuid: string): string {
    return this.specFor(uuid)?.spec.uuid ?? uuid;
  }

  touch(): void {
    this.lastActivity = this.attempt.now();
  }

  sendBle(message: ClientMessage): void {
    this.attempt.send(message);
    this.attempt.bleMessages++;
    this.touch();
    this.noticeAnswer(message);
    const buffered = this.attempt.ctx.channel.outboundBuffered;
    if (buffered > MAX_OUTBOUND_BUFFERED_BYTES) {
      this.failPhone(
        'phone_flood',
        `the phone sent faster than the backend takes it: ${buffered} bytes wait to be sent, above the bound of ${MAX_OUTBOUND_BUFFERED_BYTES}`,
      );
    }
  }

  /** Ends the transfer for something the phone did (a value no ATT PDU carries, a flood): at once, no grace. */
  failPhone(cause: 'phone_value_too_large' | 'phone_flood', reason: string): void {
    this.attempt.stopWith({ kind: 'ble_transfer_failed', cause, reason });
  }

  /**
   * Why a value from the phone is not relayed, if it is not: more than one ATT PDU of any phone's link
   * carries ({@link MAX_PHONE_VALUE_BYTES}). A value above the 512-byte attribute maximum (Core 5.x Vol 3
   * Part F §3.2.9) that fits is relayed with a warning, once per transfer. The caller ends the transfer (or
   * the setup) with the problem.
   */
  phoneValueProblem(what: 'notified' | 'wrote', uuid: string, data: Uint8Array): string | undefined {
    if (data.length <= ATT_MAX_VALUE_BYTES) return undefined;
    const name = this.specFor(uuid)?.name ?? 'a characteristic';
    if (data.length > MAX_PHONE_VALUE_BYTES) {
      return `the phone ${what} ${data.length} bytes on ${name}; one ATT PDU carries at most ${MAX_PHONE_VALUE_BYTES} bytes (ATT_MTU ${MAX_PHONE_ATT_MTU} − 3)`;
    }
    if (!this.warnedAboveMaximum) {
      this.warnedAboveMaximum = true;
      this.attempt.ctx.log.warn(
        { event: 'ble_value_above_att_maximum', bytes: data.length, characteristic: name, op: what },
        `the phone ${what} ${data.length} bytes, above the ${ATT_MAX_VALUE_BYTES}-byte attribute maximum; relayed (older Android stacks send ATT_MTU − 3)`,
      );
    }
    return undefined;
  }

  /**
   * The phone's data on c2s/s2c after the kiosk delivered the request means the holder approved and the
   * answer is flowing: the screen moves from "approve on your phone" to "keep your phone near". The
   * phone's writes to the state characteristic (its 0x01 start signal) do not count.
   */
  private noticeAnswer(message: ClientMessage): void {
    if (this.answerSeen || !this.writesDelivered) return;
    if (message.op !== 'ble_notified' && message.op !== 'ble_written') return;
    if (this.specFor(message.char)?.name === 'state') return;
    this.answerSeen = true;
    this.attempt.progress('transferring', 'receiving', 3);
  }

  /**
   * `ble_connected` (ok) has just been sent: from now on `ble_write`s may arrive (the backend sends none
   * before it, docs/protocol.md). The
   * transfer interceptor goes in before any further socket input can be read.
   */
  connected(role: BleRole): void {
    this.isConnected = true;
    const pendingRead = role === 'peripheral' ? this.pendingRead : undefined;
    this.attempt.ctx.channel.setInterceptor((arrival) => this.interceptTransfer(arrival, pendingRead));
    this.attempt.progress('transferring', 'approve_on_phone', 3);
    this.startIdleWatchdog();
  }

  /** Ends the attempt after `bleIdleMs` without traffic in either direction. */
  private startIdleWatchdog(): void {
    const { attempt } = this;
    const { bleIdleMs } = attempt.ctx.timeouts;
    this.touch();
    const check = (): void => {
      const idle = attempt.now() - this.lastActivity;
      if (idle >= bleIdleMs) attempt.stopWith({ kind: 'timeout', phase: 'ble_transfer', detail: `no BLE traffic for ${bleIdleMs} ms` });
      else attempt.after(bleIdleMs - idle, check);
    };
    attempt.after(bleIdleMs, check);
  }

  /**
   * The link to the phone dropped. Before `ble_connected` the setup decides (a phone may reconnect while
   * the kiosk advertises). After the end byte a drop is expected. Otherwise `complete` may still arrive
   * within the grace period; one that arrived already stands.
   */
  onLinkLost(reason: string): void {
    const { attempt } = this;
    if (!this.isConnected) {
      attempt.ctx.log.info({ event: 'ble_link_lost_during_setup', reason }, 'phone link dropped before ble_connected');
      return;
    }
    if (this.linkLost !== undefined || attempt.stopResult) return;
    this.linkLost = reason;
    attempt.ctx.log.info({ event: 'ble_link_lost', reason, transferFinished: attempt.transferFinished }, 'BLE link to the phone ended');
    if (attempt.transferFinished) return;
    attempt.after(attempt.ctx.timeouts.bleLinkLossGraceMs, () => {
      const outcome = this.completion;
      attempt.stopWith(outcome ? { kind: 'complete', outcome } : { kind: 'ble_link_lost', reason });
    });
  }

  /**
   * The socket side of the transfer. `ble_write`s are delivered strictly in arrival order, each one
   * finished before the next. Terminal arrivals (`error`, a close) act at once (see the interceptor);
   * `complete` waits for the writes queued before it (the 0x02 end byte) to be delivered and flushed out of
   * the Bluetooth stack, for at most `completionFlushMs`.
   */
  async transferLoop(role: BleRole, deliver: Deliver, flush?: Flush): Promise<RunResult> {
    const { attempt } = this;
    for (;;) {
      const message = await attempt.nextMessage('ble_transfer', Number.POSITIVE_INFINITY);
      this.touch();
      if (message.type === 'complete') {
        await this.flushBeforeTeardown(flush);
        return { kind: 'complete', outcome: message.outcome };
      }
      if (message.op !== 'ble_write') {
        const detail = message.op === 'ble_read_response' ? 'ble_read_response without a pending ble_read_request' : 'not valid during the BLE transfer';
        return attempt.fail({ kind: 'violation', violation: outOfSequence(message, detail) });
      }
      const target = this.specFor(message.params.char);
      if (!target) {
        return attempt.fail({ kind: 'violation', violation: outOfSequence(message, 'ble_write to a characteristic that is not in the chosen mode') });
      }
      const needed = role === 'central' ? 'write_without_response' : 'notify';
      if (!target.spec.operations.includes(needed)) {
        return attempt.fail({ kind: 'violation', violation: outOfSequence(message, `ble_write to ${target.name}, whose operations lack ${needed}`) });
      }
      const data = decodeCheckedBase64(message.params.data);
      await this.deliverWrite(deliver, target.spec.uuid, data);
      if (target.name === 'state' && data.length === 1 && data[0] === STATE_END) {
        attempt.transferFinished = true;
        attempt.step = 4;
        attempt.publish();
      }
    }
  }

  /**
   * A delivered `ble_write` is one the stack *took*: bleno and noble on hci queue it behind the
   * controller's buffers, and the teardown's disconnect would overtake that queue (the phone then misses
   * the end byte while the kiosk says verified). Bounded by `completionFlushMs`; past it the teardown goes on.
   */
  private async flushBeforeTeardown(flush: Flush | undefined): Promise<void> {
    const { attempt } = this;
    if (!flush || this.linkLost !== undefined) return;
    const { completionFlushMs } = attempt.ctx.timeouts;
    const started = attempt.now();
    try {
      await attempt.device((signal) => flush(signal), completionFlushMs, 'BLE flush');
      attempt.ctx.log.debug({ event: 'ble_flushed', ms: attempt.now() - started }, 'BLE data delivered before teardown');
    } catch (e) {
      if (e instanceof RunStop) throw e;
      const timedOut = e instanceof TimeoutError;
      attempt.ctx.log.warn(
        { event: 'ble_flush_incomplete', reason: timedOut ? `not flushed within ${completionFlushMs} ms` : 'flush failed' },
        'BLE data may not all have reached the phone before teardown',
      );
    }
  }

  /** Sees each socket arrival first during the transfer (see RelayChannel). */
  private interceptTransfer(arrival: Arrival, pendingRead: PendingRead | undefined): boolean {
    const { attempt } = this;
    const respond = pendingRead?.current;
    if (arrival.kind === 'message' && arrival.message.type === 'step_request' && arrival.message.op === 'ble_read_response') {
      if (!pendingRead || !respond) return false; // unsolicited: the loop reports it in order
      pendingRead.current = undefined; // answered: a second response is unsolicited
      respond(decodeCheckedBase64(arrival.message.params.data));
      return true;
    }
    if (respond && !(arrival.kind === 'closed' && this.completion)) {
      // A read is pending: this arrival should have been its response (docs/protocol.md, `ble_read_request`).
      const message = attempt.unwrapQuietly(arrival);
      if (message) attempt.stopWith({ kind: 'violation', violation: outOfSequence(message, 'expected ble_read_response right after ble_read_request') });
      return true;
    }
    // Noted on arrival, not on delivery: a close while the end byte is stuck in the stack (or queued behind
    // a stuck write) still leaves a result the backend may be writing (see `Attempt.endByteReceived`).
    const endByteTo = endByteTarget(arrival);
    if (endByteTo !== undefined && this.specFor(endByteTo)?.name === 'state') attempt.endByteReceived = true;
    if (arrival.kind === 'message' && arrival.message.type === 'complete') {
      this.completion = arrival.message.outcome;
      const outcome = arrival.message.outcome;
      attempt.after(attempt.ctx.timeouts.completionFlushMs, () => attempt.stopWith({ kind: 'complete', outcome }));
      return false;
    }
    if (arrival.kind === 'closed' && this.completion) return false; // complete is queued ahead of it
    const flooded = arrival.kind === 'violation' && arrival.violation.kind === 'message_flood';
    if (arrival.kind === 'closed' || flooded || (arrival.kind === 'message' && arrival.message.type === 'error')) {
      attempt.unwrapQuietly(arrival);
      return true;
    }
    return false;
  }

  private async deliverWrite(deliver: Deliver, uuid: string, data: Uint8Array): Promise<void> {
    const { attempt } = this;
    if (this.linkLost !== undefined) {
      attempt.ctx.log.debug({ event: 'ble_write_skipped', reason: 'link lost' }, 'ble_write not delivered');
      return;
    }
    try {
      await attempt.device((signal) => deliver(uuid, data, signal), attempt.ctx.timeouts.bleWriteMs, 'ble_write');
      this.writesDelivered = true;
      attempt.bleMessages++;
      this.touch();
    } catch (e) {
      if (e instanceof RunStop) throw e;
      if (e instanceof TimeoutError) {
        attempt.fail({ kind: 'timeout', phase: 'ble_write', detail: `a ble_write took longer than ${attempt.ctx.timeouts.bleWriteMs} ms` });
      }
      // The link is fine, the value is not: said at once, with the size and the limit, rather than a
      // lost link after the grace period (the backend cannot learn the MTU, docs/ble-limits.md).
      if (e instanceof BleValueTooLargeError) attempt.fail({ kind: 'ble_transfer_failed', cause: 'write_too_large', reason: e.message });
      this.onLinkLost(`write failed: ${e instanceof Error ? e.message : 'unknown'}`);
    }
  }
}
