/**
 * The `smartcard` addon (tomkp/smartcard 3.x) rejects with an `Error` whose message is a fixed English text
 * per PC/SC return code (its `src/pcsc_errors.h`, `GetPCSCErrorString`), never the code itself. This table
 * turns those texts back into the codes, so the adapter classifies them like any other binding's
 * (`scard-errors.ts`). A text it does not know — the addon's "Unknown PC/SC error" for every code outside
 * its own list, such as SCARD_W_SECURITY_VIOLATION — has no code and becomes `UnknownError`, which is how
 * the canonical variants mask unknown codes anyway. test/unit/devices/pcsc/smartcard-errors.test.ts
 * compares the table with the installed addon's header, so an addon update that rewords a text fails CI.
 */
import { errorText } from '../../common/error-text.js';
export const SMARTCARD_ERROR_TEXTS: ReadonlyMap<string, number> = new Map([
  ['Operation cancelled', 0x80100002],
  ['Cannot dispose handle', 0x8010000e],
  ['Insufficient buffer', 0x80100008],
  ['Invalid ATR', 0x80100015],
  ['Invalid handle', 0x80100003],
  ['Invalid parameter', 0x80100004],
  ['Invalid target', 0x80100005],
  ['Invalid value', 0x80100011],
  ['Not enough memory', 0x80100006],
  ['PC/SC service not running', 0x8010001d],
  ['No smart card present', 0x8010000c],
  ['Reader not ready', 0x80100010],
  ['Transaction failed', 0x80100016],
  ['PCI struct too small', 0x80100019],
  ['Protocol mismatch', 0x8010000f],
  ['Reader unavailable', 0x80100017],
  ['PC/SC service stopped', 0x8010001e],
  ['Sharing violation', 0x8010000b],
  ['System cancelled operation', 0x80100012],
  ['Operation timed out', 0x8010000a],
  ['Unknown card type', 0x8010000d],
  ['Unknown reader', 0x80100009],
  ['No readers available', 0x8010002e],
  ['Communication error', 0x80100013],
  ['Internal error', 0x80100001],
  ['Card was removed', 0x80100069],
  ['Card was reset', 0x80100068],
  ['Card is unpowered', 0x80100067],
  ['Card is unresponsive', 0x80100066],
  ['Card is not supported', 0x80100065],
]);

/** The SCARD code behind one of the addon's error texts, if it names one. */
export function smartcardErrorCode(error: unknown): number | undefined {
  const text = error instanceof Error ? error.message : typeof error === 'string' ? error : undefined;
  return text === undefined ? undefined : SMARTCARD_ERROR_TEXTS.get(text.trim());
}

/**
 * An error in the adapter's format: what failed, the addon's text, and the code as `(0x8010xxxx)` when the
 * text names one (`parseScardCode` reads only that, never the wording).
 */
export class PcscBindingError extends Error {
  override readonly name = 'PcscBindingError';
  readonly code: number | undefined;

  constructor(operation: string, cause: unknown) {
    const text = errorText(cause);
    const code = smartcardErrorCode(cause);
    super(`${operation} failed: ${text}${code === undefined ? '' : ` (0x${code.toString(16).padStart(8, '0')})`}`);
    this.code = code;
  }
}
