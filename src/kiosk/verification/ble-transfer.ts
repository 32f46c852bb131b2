/**
 * BLE part of a verification (docs/protocol.md, from `ble_exchange` to `complete`), common to both roles: pick the first mode whose role
 * is usable now, report a setup failure with `ble_connected` (error), then the socket side of the
 * transfer — `ble_write`s delivered strictly in order, `complete` after the writes queued before it —
 * with the idle watchdog and the handling of a lost link. The role-specific setup and the phone-side
 * events are in `ble-central.ts` and `ble-peripheral.ts`.
 *
 * A facade over its parts in `ble-transfer/`, one job each: which mode (`mode-choice.ts`), a failed setup
 * (`setup-failure.ts`), the chosen mode's characteristics (`characteristics.ts`), what the phone sends
 * (`phone-side.ts`), what the backend sends (`socket-side.ts`), and how the transfer ends
 * (`transfer-ending.ts`).
 */
import type { BleMode, BleRole, ClientMessage } from '../../common/protocol/messages.js';
import type { Attempt } from './attempt.js';
import type { Deliver, Flush, KnownCharacteristic, PendingRead } from './ble-common.js';
import { CharacteristicIndex } from './ble-transfer/characteristics.js';
import { anyStarting, chooseMode, whileStarting } from './ble-transfer/mode-choice.js';
import { PhoneSide, type PhoneFault } from './ble-transfer/phone-side.js';
import { reportSetupFailure } from './ble-transfer/setup-failure.js';
import { SocketSide } from './ble-transfer/socket-side.js';
import { TransferEnding } from './ble-transfer/transfer-ending.js';
import type { RunResult } from './results.js';

/** The setup and transfer of one role (ble-central.ts, ble-peripheral.ts), given by the caller. */
export type RoleTransfer = (transfer: BleTransfer, mode: BleMode) => Promise<RunResult>;

export class BleTransfer {
  readonly pendingRead: PendingRead = { current: undefined };
  private readonly characteristics = new CharacteristicIndex();
  private readonly ending: TransferEnding;
  private readonly socket: SocketSide;
  private readonly phone: PhoneSide;

  constructor(readonly attempt: Attempt) {
    this.ending = new TransferEnding(attempt);
    this.socket = new SocketSide(attempt, this.characteristics, this.ending);
    this.phone = new PhoneSide(
      attempt,
      this.characteristics,
      () => this.ending.touch(),
      () => this.socket.writesDelivered,
    );
  }

  /** Picks the mode and runs its role; the roles are given so that they may build on this class. */
  async run(modes: BleMode[], roles: Readonly<Record<BleRole, RoleTransfer>>): Promise<RunResult> {
    const { attempt } = this;
    attempt.progress('ble_connecting', 'connecting_phone', 2);
    attempt.quiet('ble_connected not sent yet');
    // Checked first: with nothing starting the setup begins in this very turn, as it always did.
    if (anyStarting(attempt, modes)) await whileStarting(attempt, modes);
    const choice = chooseMode(attempt, modes);
    if ('unusable' in choice) {
      const first = modes[0] as BleMode; // the schema requires at least one mode
      return this.reportSetupFailure(first.role, choice.unusable, true);
    }
    const { chosen } = choice;
    this.characteristics.use(chosen);
    attempt.role = chosen.role;
    attempt.ctx.log.info({ event: 'ble_mode_chosen', role: chosen.role, offered: modes.length }, 'BLE mode chosen');
    return roles[chosen.role](this, chosen);
  }

  /** `ble_connected` with `status: error`, then the backend's answer to it (see setup-failure.ts). */
  reportSetupFailure(role: BleRole, reason: string, unavailable = false): Promise<RunResult> {
    return reportSetupFailure(this.attempt, role, reason, unavailable);
  }

  specFor(uuid: string): KnownCharacteristic | undefined {
    return this.characteristics.specFor(uuid);
  }

  /** The UUID spelled as the backend spelled it in `ble_exchange`, for messages back to it. */
  backendUuid(uuid: string): string {
    return this.characteristics.backendUuid(uuid);
  }

  touch(): void {
    this.ending.touch();
  }

  sendBle(message: ClientMessage): void {
    this.phone.send(message);
  }

  /** Ends the transfer for something the phone did (a value no ATT PDU carries, a flood): at once, no grace. */
  failPhone(cause: PhoneFault, reason: string): void {
    this.phone.fail(cause, reason);
  }

  /** Why a value from the phone is not relayed, if it is not (see phone-side.ts). */
  phoneValueProblem(what: 'notified' | 'wrote', uuid: string, data: Uint8Array): string | undefined {
    return this.phone.valueProblem(what, uuid, data);
  }

  /**
   * `ble_connected` (ok) has just been sent: from now on `ble_write`s may arrive (the backend sends none
   * before it, docs/protocol.md). The
   * transfer interceptor goes in before any further socket input can be read.
   */
  connected(role: BleRole): void {
    this.ending.connected();
    const pendingRead = role === 'peripheral' ? this.pendingRead : undefined;
    this.attempt.ctx.channel.setInterceptor((arrival) => this.socket.intercept(arrival, pendingRead));
    this.attempt.progress('transferring', 'approve_on_phone', 3);
    this.ending.startIdleWatchdog();
  }

  /** The link to the phone dropped (see transfer-ending.ts for what follows). */
  onLinkLost(reason: string): void {
    this.ending.onLinkLost(reason);
  }

  /** The socket side of the transfer until `complete` (see socket-side.ts). */
  transferLoop(role: BleRole, deliver: Deliver, flush?: Flush): Promise<RunResult> {
    return this.socket.loop(role, deliver, flush);
  }
}
