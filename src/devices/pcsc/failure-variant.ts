/**
 * The canonical variant name (the `pcsc` crate's `Error`, `scard-errors.ts`) of a failure the adapter logs or
 * reports: what the binding, a time bound or the adapter itself threw.
 */
import { NfcTransmitError } from '../ports.js';
import { NativeCallTimeout } from './native-call.js';
import { parseScardCode, scardVariant, UNKNOWN_VARIANT, type ScardPlatform } from './scard-errors.js';

/** The variant of an SCARD code read from an error (`parseScardCode`); none: `UnknownError`, as the crate masks it. */
export function codeVariant(code: number | undefined, platform: ScardPlatform): string {
  return code === undefined ? UNKNOWN_VARIANT : scardVariant(code, platform);
}

/** The variant of anything a connect or disconnect threw: the adapter's own error, its time bound, or a binding error's code. */
export function failureVariant(e: unknown, platform: ScardPlatform): string {
  if (e instanceof NfcTransmitError) return e.reason;
  if (e instanceof NativeCallTimeout) return 'Timeout';
  return codeVariant(parseScardCode(e), platform);
}
