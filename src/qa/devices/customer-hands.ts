/**
 * The virtual customer's hands at a counter, whichever radio the phone is on: show the phone's QR code to
 * the camera, lay it on the reader, lift it, lay it down again in the same presentation. Shared by the
 * in-memory rig (virtual-rig.ts) and the one on BlueZ's emulated controllers (src/qa/hci/hci-rig.ts).
 */
import type { QrScanQueue } from '../../devices/qr/qr-scan-queue.js';
import type { VirtualNfcTag } from '../sim/virtual-wallet/nfc-tag.js';
import type { VirtualNfcReader } from './virtual-nfc-reader.js';

export interface RigHands {
  /** The phone shows a fresh QR engagement to the camera; returns its text. */
  readonly showQr: () => string;
  /** The phone is laid on the reader (a fresh NFC engagement). */
  readonly tap: () => void;
  /** The phone is lifted and laid on the reader again, continuing the same presentation. */
  readonly retap: () => void;
  /** The phone is taken off the reader. */
  readonly lift: () => void;
  /** Another phone comes to the counter: off the reader, and its predecessor's tag forgotten. */
  readonly newPhone: () => void;
}

export function customerHands(
  phone: () => { presentQr(): string; tag(): VirtualNfcTag },
  nfc: VirtualNfcReader,
  qr: QrScanQueue,
): RigHands {
  let lastTag: VirtualNfcTag | undefined;
  return {
    showQr: () => {
      const text = phone().presentQr();
      qr.push(text);
      return text;
    },
    tap: () => {
      lastTag = phone().tag();
      nfc.tap(lastTag);
    },
    retap: () => {
      nfc.lift();
      nfc.tap(lastTag ?? phone().tag());
    },
    lift: () => nfc.lift(),
    newPhone: () => {
      nfc.lift();
      lastTag = undefined;
    },
  };
}
