/**
 * Bytes of real wallets' NFC engagement for the profile tests, read from the captures the replay tests use
 * (test/fixtures/captures/*.json: isomdl's device logs, github.com/spruceid/isomdl @
 * fcb49d15ad9d54afa028a12183ee7fab1e46a5dc, `src/definitions/device_engagement/nfc/apdu_handover_reader.rs`).
 * One copy of the data: a step is found by what it is, so a fixture that changes shape fails here loudly.
 */
import { loadCapture, toHex, responseData, type CaptureName } from '../../../replay/capture-fixtures.js';

/** The response data (hex, no status word) of the step whose description is exactly `what`. */
function responseOf(name: CaptureName, what: string): string {
  const step = loadCapture(name).steps.find((s) => s.what === what);
  if (step === undefined) throw new Error(`capture ${name} has no step "${what}"`);
  return toHex(responseData(step));
}

const CC = 'READ BINARY capability container';
const TP = 'READ BINARY Tp';
const HS = 'READ BINARY Handover Select';

/** `APPLE_HS_NDEF` (194 bytes; test `apple_wallet_hs_polls_then_done`), its CC and Tp (`drive_apple_to_hr_ack()`). */
export const APPLE_HS_HEX = responseOf('apple-wallet-negotiated', HS);
export const APPLE_CC_HEX = responseOf('apple-wallet-negotiated', CC);
export const APPLE_TP_HEX = responseOf('apple-wallet-negotiated', TP);

/** Test `google_wallet`: the 204-byte HS, the CC and the Tp. */
export const GOOGLE_HS_HEX = responseOf('google-wallet-negotiated', HS);
export const GOOGLE_CC_HEX = responseOf('google-wallet-negotiated', CC);
export const GOOGLE_TP_HEX = responseOf('google-wallet-negotiated', TP);

/** Test `samsung_wallet`: the 224-byte static HS and the CC. */
export const SAMSUNG_HS_HEX = responseOf('samsung-wallet-static', HS);
export const SAMSUNG_CC_HEX = responseOf('samsung-wallet-static', CC);
