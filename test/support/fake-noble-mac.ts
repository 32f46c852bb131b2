/**
 * noble's macOS binding as the kiosk's central meets it, on the virtual radio (RadioNobleBindings carries the
 * GATT traffic to the phone). What differs from the radio bindings is what the binding's sources show
 * (node_modules/@stoprocent/noble/lib/mac/src):
 *
 * - a Write Command is reported done right after `[peripheral writeValue:… type:CBCharacteristicWriteWithoutResponse]`
 *   (ble_manager.mm:331-339), whether CoreBluetooth had room for it or not: nothing in lib/mac reads
 *   `canSendWriteWithoutResponse` or implements `peripheralIsReadyToSendWriteWithoutResponse:`;
 * - the MTU it reports is `maximumWriteValueLengthForType:CBCharacteristicWriteWithoutResponse`, ATT_MTU − 3
 *   (ble_manager.mm:49-56).
 *
 * CoreBluetooth underneath, as Apple documents it (not noble's source): Write Commands wait in a queue of
 * limited room, at least one leaves per connection event, and one written while the queue is full is not
 * sent and no error says so (`writeValue(_:for:type:)`, `canSendWriteWithoutResponse`). Apple documents
 * neither the room nor the interval: the test picks them (`room`, `eventMs`). Queued Write Commands that
 * have not left when the link ends are lost with it.
 */
import { EventEmitter } from 'node:events';
import { RadioNobleBindings } from '../../src/qa/devices/noble-radio-bindings.js';
import type { RadioDevice } from '../../src/qa/sim/radio/virtual-radio.js';

export interface CoreBluetoothQueue {
  /** Write Commands CoreBluetooth holds before it drops one. */
  readonly room: number;
  /** The link's connection interval: one queued Write Command leaves per interval. */
  readonly eventMs: number;
}

export class MacNobleBindings extends RadioNobleBindings {
  /** Write Commands CoreBluetooth dropped (queue full). */
  readonly dropped: Uint8Array[] = [];
  /** When each queued Write Command leaves (oldest first). */
  private readonly leaving: number[] = [];
  private lastLeaves = Number.NEGATIVE_INFINITY;
  /** Completions of Write Commands the radio reports, which the mac binding had reported already. */
  private hiddenRadioWrites = 0;

  constructor(
    device: RadioDevice,
    private readonly queue: CoreBluetoothQueue,
  ) {
    super(device);
  }

  override write(id: string, serviceUuid: string, characteristicUuid: string, data: Uint8Array, withoutResponse: boolean): void {
    this.manager.check('write');
    if (!withoutResponse) {
      super.write(id, serviceUuid, characteristicUuid, data, withoutResponse);
      return;
    }
    const now = performance.now();
    while (this.leaving.length > 0 && (this.leaving[0] ?? 0) <= now) this.leaving.shift();
    if (this.leaving.length >= this.queue.room) {
      this.dropped.push(new Uint8Array(data));
    } else {
      const leaves = Math.max(now, this.lastLeaves + this.queue.eventMs);
      this.lastLeaves = leaves;
      this.leaving.push(leaves);
      const bytes = new Uint8Array(data);
      setTimeout(() => {
        // Queued in CoreBluetooth: gone with the manager.
        if (!this.manager.running) return;
        this.hiddenRadioWrites++;
        super.write(id, serviceUuid, characteristicUuid, bytes, true);
      }, leaves - now);
    }
    // ble_manager.mm:335-337: reported at once, through the binding's thread-safe function (later).
    setImmediate(() => EventEmitter.prototype.emit.call(this, 'write', id, serviceUuid, characteristicUuid));
  }

  override emit(event: string | symbol, ...args: unknown[]): boolean {
    if (event === 'write' && this.hiddenRadioWrites > 0) {
      this.hiddenRadioWrites--;
      return true;
    }
    if (event === 'onMtu' && typeof args[1] === 'number') return super.emit(event, args[0], args[1] - 3);
    return super.emit(event, ...args);
  }
}
