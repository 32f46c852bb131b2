/**
 * The kiosk's `BleCentral` port on noble (`@stoprocent/noble`, docs/ble-libraries.md): scan for the mode's service,
 * connect (bounded, retried), discover by value, subscribe to every `notify` characteristic, then hand
 * out a link with ordered writes and per-notification forwarding. The noble instance is injected, so this
 * module never loads the library's index (which would construct the platform binding, docs/ble-libraries.md §2).
 *
 * Behaviour at the port is the virtual central's (src/qa/devices/virtual-ble-central.ts):
 * - availability follows noble's adapter state (`availabilityOf`), with change notifications;
 * - setup failures are `BleSetupError`s whose `reason` starts with a stable key (`scan_timeout:`,
 *   `connect_timeout:`, `connect_failed:`, `service_not_found:`, `characteristic_missing:`,
 *   `characteristic_unusable:`, `gatt_timeout:`, `subscribe_refused:`, `disconnected:`, …); an aborted signal rejects with an
 *   abort error; either way nothing stays connected, scanning or listening;
 * - the ATT MTU is requested large (517, hci only) and reported as ATT_MTU on every binding;
 * - Windows (docs/ble-libraries.md §7): an "unreachable" service discovery is a failed connect (retried), the scan
 *   finds a wallet whose UUID is only in its scan response, and each subscription's CCCD is read back.
 */
import type { Noble, Peripheral } from '@stoprocent/noble';
import {
  BleSetupError,
  type Availability,
  type BleCentral,
  type BleCentralHandlers,
  type BleCentralLink,
  type GattProfile,
} from '../ports.js';
import { DeviceAbortError, abortedError, errorMessage } from '../shared/abort.js';
import { dropEventsForForgottenPeripherals, forgetPeripheral } from './noble-cache.js';
import { NobleCentralLink } from './noble-link.js';
import { scanFor } from './noble-scan.js';
import { ADAPTER_SETTLE_MS, AdapterAvailability, macPermissionWait } from './adapter-state.js';
import { availabilityOf, defaultBindingKind, stoppedBindingAvailability, type NobleBindingKind } from './noble-support.js';
import { nobleUuid } from './uuid.js';
import { bounded, delay } from './wait.js';

export interface NobleCentralOptions {
  /** The binding noble runs on (default: the OS's, as stoprocent picks it); decides what `peripheral.mtu` means. */
  readonly platform?: NobleBindingKind;
  /**
   * Bound on one scan (default 20 s). Below the kiosk's default bleSetupMs (30 s) on purpose: a scan that
   * finds nothing ends here, so the backend gets the specific `scan_timeout: no phone advertising …`
   * reason rather than the kiosk's generic setup timeout.
   */
  readonly scanTimeoutMs?: number;
  /** Bound on one connection attempt (default 10 s). */
  readonly connectTimeoutMs?: number;
  /** Scan-and-connect attempts when connecting fails (default 3; spurious failures are common; Multipaz retries too, `BleCentralManagerAndroid.kt`). */
  readonly connectAttempts?: number;
  /** Pause between attempts (default 500 ms). */
  readonly retryDelayMs?: number;
  /** Bound on each GATT request of the setup (default 10 s). */
  readonly gattTimeoutMs?: number;
  /** Bound on a link's close() (default 2 s). */
  readonly closeTimeoutMs?: number;
  /** ATT MTU to request (default 517, the ATT maximum); honoured by the hci binding only (docs/ble-libraries.md §3). */
  readonly mtu?: number;
  /**
   * macOS only: pause between two Write Commands (default 30 ms; 0 turns it off). noble's mac binding has
   * no flow control and CoreBluetooth drops what it has no room for (write-spacing.ts).
   */
  readonly writeSpacingMs?: number;
  /**
   * After each subscription, read the phone's CCCD (0x2902) back and fail with `subscribe_refused:` unless
   * notifications are on. Default: on the win binding only, whose `OnNotify` reports a CCCD write the phone
   * refused as success (ble_manager.cc ignores the result's `GattCommunicationStatus`): without it the kiosk
   * would wait for notifications that never come. Costs two GATT round trips per subscribed characteristic
   * (descriptor discovery, read); the other bindings report a refused CCCD write as an error already.
   */
  readonly confirmSubscriptions?: boolean;
}

const DEFAULTS = {
  scanTimeoutMs: 20_000,
  connectTimeoutMs: 10_000,
  connectAttempts: 3,
  retryDelayMs: 500,
  gattTimeoutMs: 10_000,
  closeTimeoutMs: 2_000,
  mtu: 517,
  writeSpacingMs: 30,
};

/** stoprocent ≥ 2.4 takes `{ mtu }` on connect (hci); its typings lack the parameter (docs/ble-libraries.md §3, §5). */
interface ConnectWithMtu {
  connectAsync(options: { readonly mtu: number }): Promise<void>;
}

class ConnectTimeout extends Error {}

export class NobleCentral implements BleCentral {
  private readonly binding: NobleBindingKind;
  private readonly settings: typeof DEFAULTS & { readonly confirmSubscriptions: boolean };
  private readonly notifier: AdapterAvailability;
  private readonly onStateChange = (): void => this.notifier.update();
  /** Set once a binding call threw that its manager is gone: noble's state still reads as before, the central is dead (fail closed). */
  private stopped: Availability | undefined;

  constructor(
    private readonly noble: Noble,
    options: NobleCentralOptions = {},
  ) {
    this.binding = options.platform ?? defaultBindingKind();
    const pick = (key: keyof typeof DEFAULTS): number => options[key] ?? DEFAULTS[key];
    this.settings = {
      scanTimeoutMs: pick('scanTimeoutMs'),
      connectTimeoutMs: pick('connectTimeoutMs'),
      connectAttempts: Math.max(1, Math.floor(pick('connectAttempts'))),
      retryDelayMs: pick('retryDelayMs'),
      gattTimeoutMs: pick('gattTimeoutMs'),
      closeTimeoutMs: pick('closeTimeoutMs'),
      mtu: pick('mtu'),
      writeSpacingMs: pick('writeSpacingMs'),
      confirmSubscriptions: options.confirmSubscriptions ?? this.binding === 'win',
    };
    // Forgetting peripherals (noble-cache.ts) must not turn a late GATT result into a crash.
    dropEventsForForgottenPeripherals(noble);
    // The first stateChange listener starts noble's bindings (on the next tick); state is 'unknown' till then.
    const read = (): Availability => this.stopped ?? availabilityOf(this.noble.state, this.binding);
    this.notifier = new AdapterAvailability(
      read,
      ADAPTER_SETTLE_MS,
      Date.now,
      macPermissionWait(this.binding, () => this.noble.state === 'unknown'),
    );
    noble.on('stateChange', this.onStateChange);
  }

  availability(): Availability {
    return this.notifier.current;
  }

  onAvailabilityChange(listener: (availability: Availability) => void): () => void {
    return this.notifier.onChange(listener);
  }

  /** Stops following noble's state (the only listener the adapter keeps between connects). */
  dispose(): void {
    this.noble.removeListener('stateChange', this.onStateChange);
    this.notifier.dispose();
  }

  async connect(profile: GattProfile, handlers: BleCentralHandlers, signal: AbortSignal): Promise<BleCentralLink> {
    const availability = this.availability();
    if (!availability.usable) throw new BleSetupError(availability.reason ?? 'unavailable');
    if (signal.aborted) throw abortedError('BLE central connect');
    let serviceUuid: string;
    try {
      serviceUuid = nobleUuid(profile.serviceUuid);
    } catch (e) {
      throw new BleSetupError(`invalid_service_uuid: ${errorMessage(e)}`);
    }
    const { binding } = this;
    const { gattTimeoutMs, closeTimeoutMs, connectAttempts, retryDelayMs } = this.settings;
    const writeSpacingMs = binding === 'mac' ? this.settings.writeSpacingMs : 0;
    const confirmSubscriptions = this.settings.confirmSubscriptions;
    for (let next = 1; ; next++) {
      const { peripheral, attempt } = await this.scanAndConnect(serviceUuid, profile.serviceUuid, signal, next);
      next = attempt;
      const forget = (): void => forgetPeripheral(this.noble, peripheral.id);
      const link = new NobleCentralLink(peripheral, profile, handlers, {
        binding,
        gattTimeoutMs,
        closeTimeoutMs,
        forget,
        noble: this.noble,
        writeSpacingMs,
        confirmSubscriptions,
      });
      try {
        await link.setUp(signal);
        return link;
      } catch (e) {
        // Windows makes the link with the first GATT call (see `linkFailed`): that failure is a failed connect.
        const error = this.linkFailed(e, link.stage, signal) ? undefined : this.setupError(e, signal, link.stage, link.droppedDuringSetup);
        await link.release(false);
        if (error) throw error;
        if (!this.availability().usable || attempt >= connectAttempts) throw this.connectError(e, peripheral, attempt);
      }
      await delay(retryDelayMs, signal, 'BLE central connect');
    }
  }

  /**
   * Windows: `connect` opens no link (ble_manager.cc `Connect` → `FromBluetoothAddressAsync` → `OnConnected`
   * reports it at once, in reach or not); the first GATT call makes it, so a phone out of reach fails service
   * discovery with "Device is unreachable while discovering services" (`OnServicesDiscovered`,
   * `gattStatusToString`). Other bindings report that as a connect failure, which is retried.
   */
  private linkFailed(e: unknown, stage: string, signal: AbortSignal): boolean {
    if (this.binding !== 'win' || signal.aborted || e instanceof DeviceAbortError || e instanceof BleSetupError) return false;
    return stage === 'service discovery' && /\bunreachable\b/i.test(errorMessage(e));
  }

  /** Scans and connects, retrying failed connects within `connectAttempts` (counted from `firstAttempt`); says which attempt connected. */
  private async scanAndConnect(
    serviceUuid: string,
    label: string,
    signal: AbortSignal,
    firstAttempt: number,
  ): Promise<{ readonly peripheral: Peripheral; readonly attempt: number }> {
    const { connectAttempts, scanTimeoutMs, retryDelayMs } = this.settings;
    for (let attempt = firstAttempt; ; attempt++) {
      let peripheral: Peripheral;
      try {
        peripheral = await scanFor(this.noble, serviceUuid, { signal, timeoutMs: scanTimeoutMs, label, binding: this.binding });
      } catch (e) {
        throw this.setupError(e, signal, 'scan');
      }
      try {
        await this.connectOnce(peripheral, signal);
        return { peripheral, attempt };
      } catch (e) {
        // Not ours to keep: a later attempt scans afresh (noble's cache must not grow per phone, noble-cache.ts).
        forgetPeripheral(this.noble, peripheral.id);
        this.noteStopped(e);
        if (signal.aborted) throw abortedError('BLE central connect');
        if (!this.availability().usable || attempt >= connectAttempts) throw this.connectError(e, peripheral, attempt);
      }
      await delay(retryDelayMs, signal, 'BLE central connect');
    }
  }

  /** One connection attempt; on abort or timeout noble's cancelConnect settles it and stops the binding. */
  private async connectOnce(peripheral: Peripheral, signal: AbortSignal): Promise<void> {
    const { mtu, connectTimeoutMs } = this.settings;
    const connecting = (peripheral as Peripheral & ConnectWithMtu).connectAsync({ mtu });
    try {
      await bounded(connecting, { signal, ms: connectTimeoutMs, what: 'BLE central connect', onTimeout: () => new ConnectTimeout() });
    } catch (e) {
      if (peripheral.state === 'connecting') peripheral.cancelConnect();
      else if (peripheral.state === 'connected') peripheral.disconnect();
      throw e;
    }
  }

  /** A binding that says its manager is gone stays unusable (noble-support.ts `stoppedBindingAvailability`). */
  private noteStopped(e: unknown): void {
    if (this.stopped) return;
    this.stopped = stoppedBindingAvailability(e);
    if (this.stopped) this.notifier.update();
  }

  private connectError(e: unknown, peripheral: Peripheral, attempts: number): BleSetupError {
    this.noteStopped(e);
    const availability = this.availability();
    if (!availability.usable) return new BleSetupError(availability.reason ?? 'unavailable');
    const tries = attempts === 1 ? '1 attempt' : `${attempts} attempts`;
    if (e instanceof ConnectTimeout) {
      return new BleSetupError(
        `connect_timeout: ${peripheral.address} did not connect within ${this.settings.connectTimeoutMs} ms (${tries})`,
      );
    }
    return new BleSetupError(`connect_failed: ${peripheral.address} after ${tries}: ${errorMessage(e)}`);
  }

  /** Aborts stay aborts (the core stops anyway); everything else becomes a setup failure with a reason. */
  private setupError(e: unknown, signal: AbortSignal, stage: string, dropped?: string): Error {
    if (signal.aborted || e instanceof DeviceAbortError) return abortedError(`BLE central ${stage}`);
    this.noteStopped(e);
    const availability = this.availability();
    if (!availability.usable) return new BleSetupError(availability.reason ?? 'unavailable');
    if (dropped !== undefined) return new BleSetupError(`disconnected: the phone disconnected during ${stage} (${dropped})`);
    if (e instanceof BleSetupError) return e;
    const key = stage === 'scan' ? 'scan_failed' : stage.startsWith('subscribe') ? 'subscribe_failed' : 'discovery_failed';
    return new BleSetupError(`${key}: ${stage}: ${errorMessage(e)}`);
  }
}
