/**
 * The slice of `@stoprocent/bleno` 0.12.x the peripheral adapter uses, typed locally: the package's
 * `index.d.ts` types only the index (whose import constructs the platform binding) and clashes with
 * noble's typings (docs/ble-libraries.md §5); the deep `lib/bleno` entry point has none. Callbacks carry the
 * connection handle first, as stoprocent's do (docs/ble-libraries.md §4); on macOS the handle may be a string.
 */
import type { EventEmitter } from 'node:events';

export type BlenoState = 'unknown' | 'resetting' | 'unsupported' | 'unauthorized' | 'poweredOff' | 'poweredOn';
export type BlenoProperty = 'read' | 'write' | 'writeWithoutResponse' | 'notify' | 'indicate';
export type BlenoConnection = number | string;

/**
 * `result` is an ATT error code (0 = success). `data` always, an empty Buffer with an error: the mac binding
 * converts it with `As<Napi::Buffer>` (lib/mac/src/callbacks.mm:81-83, napi_objc.mm:35-37), which throws
 * for `undefined` or `null`, and the request is then never answered.
 */
export type BlenoReadCallback = (result: number, data: Buffer) => void;
export type BlenoWriteCallback = (result: number) => void;
export type BlenoUpdateValueCallback = (data: Buffer) => void;

export interface BlenoCharacteristicOptions {
  readonly uuid: string;
  readonly properties: readonly BlenoProperty[];
  readonly secure?: readonly BlenoProperty[];
  readonly descriptors?: readonly unknown[];
  readonly onReadRequest?: (connection: BlenoConnection, offset: number, callback: BlenoReadCallback) => void;
  readonly onWriteRequest?: (
    connection: BlenoConnection,
    data: Buffer,
    offset: number,
    withoutResponse: boolean,
    callback: BlenoWriteCallback,
  ) => void;
  readonly onSubscribe?: (connection: BlenoConnection, maxValueSize: number, updateValueCallback: BlenoUpdateValueCallback) => void;
  readonly onUnsubscribe?: (connection: BlenoConnection) => void;
}

export interface BlenoCharacteristic extends EventEmitter {
  readonly uuid: string;
  readonly properties: readonly BlenoProperty[];
}

export interface BlenoPrimaryService {
  readonly uuid: string;
  readonly characteristics: readonly BlenoCharacteristic[];
}

/** A bleno instance (`new (require('@stoprocent/bleno/lib/bleno'))(bindings)`, docs/ble-libraries.md §2). */
export interface Bleno extends EventEmitter {
  readonly state: BlenoState;
  readonly platform: string;
  readonly mtu: number;
  readonly Characteristic: new (options: BlenoCharacteristicOptions) => BlenoCharacteristic;
  readonly PrimaryService: new (options: {
    readonly uuid: string;
    readonly characteristics: readonly BlenoCharacteristic[];
  }) => BlenoPrimaryService;
  startAdvertising(name: string, serviceUuids: readonly string[]): void;
  stopAdvertising(): void;
  setServices(services: readonly BlenoPrimaryService[]): void;
  /** One connection, or every connection when `handle` is absent. */
  disconnect(handle?: BlenoConnection | null): void;
  /** Stops the binding; the next `stateChange` listener added starts it again (bleno.js `stop`, `newListener`). */
  stop(): void;
}

/** What bleno calls down on its bindings and listens to on them (docs/ble-libraries.md §2). */
export interface BlenoBindings extends EventEmitter {
  init(): void;
  startAdvertising(name: string, serviceUuids: readonly string[]): void;
  stopAdvertising(): void;
  setServices(services: readonly BlenoPrimaryService[]): void;
  disconnect(handle?: BlenoConnection | null): void;
  updateRssi(): void;
  stop(): void;
}

export type BlenoConstructor = new (bindings: BlenoBindings) => Bleno;
