/**
 * The kiosk's `BlePeripheral` port on `@stoprocent/bleno` 0.12.x. The bleno instance is injected
 * (`new (require('@stoprocent/bleno/lib/bleno'))(bindings)`, docs/ble-libraries.md §2): this module never imports the
 * library index, which would construct the platform binding.
 *
 * Behaviour (the same as the virtual port at the `BlePeripheral` boundary):
 * - one primary service per session, built from the characteristic specs: operations → properties
 *   (read → read, write_without_response → writeWithoutResponse, notify → notify; bleno adds the CCCD);
 *   bleno has no attribute permissions (docs/ble-libraries.md §4), so the specs' permissions are enforced in the
 *   callbacks: a read without `readable` is 0x02, a write without `writeable` is 0x03 (a Write Command
 *   gets no answer, as in ATT, but is not reported);
 * - one phone per session: the first central accepted is the phone, advertising stops then (stoprocent
 *   hci restarts advertising after every accept, docs/ble-libraries.md §4); any other central is disconnected, and
 *   requests on other connections are answered 0x0E. If the phone leaves, advertising resumes while the
 *   session is open;
 * - events are reported synchronously from bleno's callbacks, so in the order the phone's packets came;
 *   a disconnect reports the subscriptions bleno drops first (its GATT emits `unsubscribe` before the
 *   binding's `disconnect`);
 * - reads: the offset-0 read is reported; `respond(value)` takes the whole value, which is kept until the
 *   next offset-0 read of that characteristic so the Read Blobs of the same long read are answered from
 *   it without being reported again (the value cannot change halfway). A blob with nothing kept is
 *   reported with its offset. Once the phone is gone a late answer is dropped: bleno's GATT callback
 *   throws for a connection it has forgotten;
 * - notify waits for the subscription, refuses a value above ATT_MTU − 3 with `BleValueTooLargeError`
 *   (hci truncates silently, docs/ble-libraries.md §4; the backend chunks, docs/ble-limits.md), hands the value to
 *   the stack through the subscription's own update callback (`Characteristic.notify(data, 0)` would go
 *   to every connection: handle 0 is falsy) and resolves on the next turn; calls run one at a time, in
 *   call order;
 * - flush: resolves once every notification handed to bleno has left its hci ACL queue and the controller
 *   completed it (hci-acl.ts); the core calls it after `complete`, before teardown, so the end byte is not
 *   overtaken by the disconnect;
 * - teardown: stop advertising, disconnect the phone, `setServices([])`, remove every listener; each
 *   step bounded, so a dead adapter cannot hang `close()`. The next session re-advertises on the same
 *   bleno instance.
 * - on hci bleno's `stop()` is never called: it leaves the 1 s `pollIsDevUp` timer running, which throws
 *   once the socket is gone (docs/ble-libraries.md §1). One bleno lives as long as the process; `close()` here only
 *   tears the session down and drops the adapter's own listener.
 *
 * On macOS (bleno's mac binding, node_modules/@stoprocent/bleno/lib/mac/src) four things differ, each from
 * the binding's source:
 * - `accept` comes only the first time the binding's manager sees a central's identifier
 *   (ble_peripheral_manager.mm:200-272; the set is cleared only in dealloc, :36-43), and it travels on
 *   another thread-safe function than the request it came with (callbacks.mm), so it may even arrive after
 *   it. So the first GATT event (subscribe, read, write) of the open session is the phone;
 * - no `disconnect` ever (BlenoMac::Disconnect does nothing, bleno_mac.mm:129-131); CoreBluetooth's only sign
 *   that a central left is an unsubscribe from each characteristic it had subscribed to. So an unsubscribe
 *   of the phone means it left: the rest of its subscriptions, then `disconnect`, are reported;
 * - the kiosk cannot disconnect a central: the teardown has no disconnect step, and flush() waits for the
 *   phone to leave on its own (after the end byte it does; the core bounds the wait);
 * - `setServices` only adds services (ble_peripheral_manager.mm:137-145) and emits nothing for `[]`; the one
 *   path to `removeAllServices` is `stop()` (bleno_mac.mm:55-62). So the teardown stops bleno and starts it
 *   again (`init()` makes a new manager, bleno_mac.mm:47-53): the service is gone from the GATT database and
 *   the new manager knows no central, so the same phone is accepted in the next session.
 * Read callbacks always get a Buffer, an empty one with an error (bleno-types.ts `BlenoReadCallback`).
 *
 * The parts, one job each: this facade owns the adapter (availability, one session at a time, the macOS
 * restart); `bleno-session.ts` is one advertised service and the phone on it (who the phone is, its coming
 * and going, flush, close); `bleno-service.ts` builds the service from the profile; `bleno-requests.ts`
 * answers the phone's reads and writes; `bleno-notifications.ts` holds its subscriptions and sends the
 * notifications; `bleno-teardown.ts` is the bounded steps that end a session on bleno.
 */
import {
  BleSetupError,
  type Availability,
  type BlePeripheral,
  type BlePeripheralSession,
  type GattProfile,
  type PeripheralEvent,
} from '../ports.js';
import { abortedError, errorMessage, isAborted } from '../shared/abort.js';
import { ADAPTER_SETTLE_MS, AdapterAvailability, macPermissionWait } from './adapter-state.js';
import { awaitEvent, blenoAvailability, blenoBindingKind, type BlenoBindingKind } from './bleno-support.js';
import { BlenoSession } from './bleno-session.js';
import { servedCharacteristics } from './bleno-service.js';
import type { Bleno } from './bleno-types.js';

export interface BlenoPeripheralOptions {
  /** Local name in the advertisement (default `mdl-kiosk`; hci allows 26 bytes with one 128-bit UUID). */
  readonly localName?: string;
  /** Bound for setting the service and starting to advertise (default 10 s; the caller's signal also ends it). */
  readonly setupTimeoutMs?: number;
  /** Bound for each teardown step (default 2 s). */
  readonly teardownStepMs?: number;
  /** The binding bleno runs on (default: the one bleno's index picks on this OS, `blenoBindingKind`). */
  readonly binding?: BlenoBindingKind;
}

export class BlenoPeripheral implements BlePeripheral {
  private readonly state: AdapterAvailability;
  private readonly binding: BlenoBindingKind;
  private session: BlenoSession | undefined;
  private closed = false;
  /** macOS: bleno being stopped and started again to empty the GATT database (see header). */
  private restarting: Promise<void> | undefined;
  private readonly onStateChange = (): void => this.state.update();

  constructor(
    private readonly bleno: Bleno,
    private readonly options: BlenoPeripheralOptions = {},
  ) {
    this.binding = options.binding ?? blenoBindingKind();
    this.state = new AdapterAvailability(
      () => this.current(),
      ADAPTER_SETTLE_MS,
      Date.now,
      macPermissionWait(this.binding, () => bleno.state === 'unknown'),
    );
    // Adding the first `stateChange` listener is what makes bleno call its bindings' init().
    bleno.on('stateChange', this.onStateChange);
  }

  private current(): Availability {
    return blenoAvailability(this.bleno.state, this.binding);
  }

  availability(): Availability {
    return this.state.current;
  }

  onAvailabilityChange(listener: (availability: Availability) => void): () => void {
    return this.state.onChange(listener);
  }

  async advertise(profile: GattProfile, onEvent: (event: PeripheralEvent) => void, signal: AbortSignal): Promise<BlePeripheralSession> {
    await this.restarting;
    if (this.closed) throw new BleSetupError('the BLE peripheral adapter is closed');
    const availability = this.availability();
    if (!availability.usable) throw new BleSetupError(availability.reason ?? 'unavailable');
    // After a restart bleno reads 'unknown' until the new manager reports (bleno.js stop() says nothing).
    if (this.binding === 'mac' && this.bleno.state !== 'poweredOn') throw new BleSetupError(this.current().reason ?? 'starting');
    if (signal.aborted) throw abortedError('BLE advertising');
    const served = servedCharacteristics(profile);
    // A session left open (the core closes each one) is taken over: one service per bleno at a time.
    await this.session?.close();
    if (isAborted(signal)) throw abortedError('BLE advertising');
    const session = new BlenoSession(this.bleno, profile, served, onEvent, {
      localName: this.options.localName ?? 'mdl-kiosk',
      setupTimeoutMs: this.options.setupTimeoutMs ?? 10_000,
      teardownStepMs: this.options.teardownStepMs ?? 2_000,
      mac: this.binding === 'mac',
      removeServices: () => this.restartMac(),
      onClosed: () => {
        if (this.session === session) this.session = undefined;
      },
    });
    this.session = session;
    try {
      await session.start(signal);
    } catch (e) {
      await session.close();
      if (isAborted(signal)) throw abortedError('BLE advertising');
      throw new BleSetupError(e instanceof BleSetupError ? e.reason : `advertising failed: ${errorMessage(e)}`);
    }
    return session;
  }

  /**
   * macOS: `stop()` is the mac binding's only way to `removeAllServices` (bleno_mac.mm:55-62); the next
   * `stateChange` listener makes bleno call `init()`, a new manager (bleno.js `newListener`, bleno_mac.mm:47-53).
   * Resolves once the new manager reports its state, or after the teardown bound. A closed adapter leaves
   * bleno stopped: whoever adds the next listener starts it.
   */
  private restartMac(): Promise<void> {
    const restart = (async (): Promise<void> => {
      this.bleno.removeListener('stateChange', this.onStateChange);
      try {
        this.bleno.stop();
      } catch {
        // no manager (CHECK_MANAGER throws): nothing in the database either
      }
      if (this.closed) return;
      await awaitEvent(this.bleno, 'stateChange', undefined, () => this.bleno.on('stateChange', this.onStateChange), {
        timeoutMs: this.options.teardownStepMs ?? 2_000,
        what: 'BLE restart',
      }).catch(() => undefined); // still starting: advertise() says so
    })();
    const done = restart.finally(() => {
      if (this.restarting === done) this.restarting = undefined;
    });
    this.restarting = done;
    return done;
  }

  /** Closes the open session and drops the adapter's listener; bleno itself keeps running (see header). Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    this.bleno.removeListener('stateChange', this.onStateChange);
    this.state.dispose();
    await this.session?.close();
    await this.restarting;
  }
}
