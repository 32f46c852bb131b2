/**
 * The lifecycle the QA bindings keep, as strict as the native ones: a binding works between its start
 * (noble `start`, bleno `init`) and its `stop`, and every other call outside that throws, synchronously,
 * what the mac bindings throw:
 * - noble: `<Fn>: BLEManager has already been cleaned up` (lib/mac/src/noble_mac.mm `CHECK_MANAGER`, `Fn` the
 *   native method's name: `Scan` for `startScanning`, …); `stop()` without a manager throws too (`Stop`);
 * - bleno: `BLEManager has already been cleaned up` (lib/mac/src/bleno_mac.mm `CHECK_MANAGER`, no name).
 * A start after a stop makes a new manager, as the native `Start`/`Init` do. Only `addressToId` works
 * without one (neither binding checks there).
 */

/** The words of the native bindings' `CHECK_MANAGER`. */
export const MANAGER_GONE = 'BLEManager has already been cleaned up';

/** noble's binding methods by the name of the native method behind each (lib/mac/src/noble_mac.mm `Init`). */
export const NOBLE_MAC_METHOD_NAMES: Readonly<Record<string, string>> = {
  stop: 'Stop',
  startScanning: 'Scan',
  stopScanning: 'StopScan',
  connect: 'Connect',
  disconnect: 'Disconnect',
  cancelConnect: 'CancelConnect',
  updateRssi: 'UpdateRSSI',
  discoverServices: 'DiscoverServices',
  discoverIncludedServices: 'DiscoverIncludedServices',
  discoverCharacteristics: 'DiscoverCharacteristics',
  read: 'Read',
  write: 'Write',
  notify: 'Notify',
  broadcast: 'Broadcast',
  discoverDescriptors: 'DiscoverDescriptors',
  readValue: 'ReadValue',
  writeValue: 'WriteValue',
  readHandle: 'ReadHandle',
  writeHandle: 'WriteHandle',
  setScanParameters: 'SetScanParameters',
  reset: 'Reset',
};

/** A binding's manager: there between start and stop, and every call without it throws. */
export class BindingManager {
  private live = false;

  constructor(
    /** The message a call without a manager throws, for the binding method `method`. */
    private readonly gone: (method: string) => string,
    /** Whether `stop()` without a manager throws (mac) or does nothing (win, noble_winrt.cc `Stop`). */
    private readonly stopWithoutManagerThrows = true,
  ) {}

  get running(): boolean {
    return this.live;
  }

  /** Makes a manager; false when one ran already (the native start replaces it, the QA bindings keep theirs). */
  start(): boolean {
    if (this.live) return false;
    this.live = true;
    return true;
  }

  /** Drops the manager; false when there was none (and the mac flavour throws then). */
  stop(): boolean {
    if (!this.live) {
      if (this.stopWithoutManagerThrows) throw new TypeError(this.gone('stop'));
      return false;
    }
    this.live = false;
    return true;
  }

  /** Throws for `method` unless a manager runs. */
  check(method: string): void {
    if (!this.live) throw new TypeError(this.gone(method));
  }
}

/** noble's manager as the mac binding keeps it. */
export const nobleMacManager = (): BindingManager =>
  new BindingManager((method) => `${NOBLE_MAC_METHOD_NAMES[method] ?? method}: ${MANAGER_GONE}`);

/** bleno's manager as the mac binding keeps it. */
export const blenoMacManager = (): BindingManager => new BindingManager(() => MANAGER_GONE);
