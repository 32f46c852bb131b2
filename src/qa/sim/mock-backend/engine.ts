/**
 * The reader engine port of the mock backend: everything ISO 18013-5 (engagement, handover, session
 * encryption, request, response verification). The relay session (`relay-session.ts`) owns the protocol
 * of the spec and calls the engine for the content of each step.
 */
import type { BleModeWire, OutcomeWire } from './wire.js';

export type NfcStep =
  | { readonly kind: 'apdu'; readonly apdu: Uint8Array }
  | { readonly kind: 'done'; readonly modes: BleModeWire[] }
  | { readonly kind: 'failed'; readonly reason: string };

export type Engagement = { readonly kind: 'modes'; readonly modes: BleModeWire[] } | { readonly kind: 'failed'; readonly reason: string };

/** What the backend does in response to a BLE event: writes to send (in order), then possibly the end. */
export interface BleActions {
  readonly writes: readonly { readonly char: string; readonly data: Uint8Array }[];
  /** The verification finished: the session sends the writes, then `complete` with this outcome. */
  readonly outcome?: OutcomeWire;
  /** A fatal reader-side failure (the phone broke the ISO protocol): the session sends `error`. */
  readonly failure?: string;
}

export interface ReaderEngine {
  /** QR flow: the scanned text (with its `mdoc:` prefix); the BLE modes to offer, central first. */
  qrScanned(text: string): Promise<Engagement>;
  /** NFC flow: the first command APDU of the handover. */
  nfcStart(): NfcStep;
  /** The response to the previous command APDU. */
  nfcResponse(response: Uint8Array): Promise<NfcStep>;
  /** `ble_connected` with the role the kiosk took. */
  bleConnected(role: 'central' | 'peripheral'): Promise<BleActions>;
  /** A notification the kiosk received from the phone (central role). */
  bleNotified(char: string, data: Uint8Array): Promise<BleActions>;
  /** A write the phone made to the kiosk's service (peripheral role). */
  bleWritten(char: string, data: Uint8Array): Promise<BleActions>;
  /** A read by the phone (peripheral role); answered at once (spec §4.3): Ident, or empty bytes. */
  bleReadRequest(char: string): Uint8Array;
  /** The session reset or ended: forget keys and state. */
  dispose(): void;
}

export interface EngineContext {
  readonly sessionId: string;
  /** Requested namespaces from `engage` (spec §2.3). */
  readonly namespaces: Record<string, string[]>;
}

export type ReaderEngineFactory = (context: EngineContext) => ReaderEngine;
