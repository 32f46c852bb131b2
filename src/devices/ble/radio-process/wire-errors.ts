/** Errors across the radio-process channel: the port's error classes survive the hop (protocol.ts). */
import { BleSetupError, BleValueTooLargeError } from '../../ports.js';
import { DeviceAbortError, errorMessage } from '../../shared/abort.js';
import type { RadioError } from './protocol.js';

const clip = (text: string): string => text.slice(0, 2_000);

export function toWire(e: unknown): RadioError {
  if (e instanceof BleSetupError) return { name: 'BleSetupError', message: clip(e.message), reason: clip(e.reason) };
  if (e instanceof BleValueTooLargeError) {
    return {
      name: 'BleValueTooLargeError',
      message: clip(e.message),
      operation: e.operation,
      bytes: e.bytes,
      limit: e.limit,
      ...(e.attMtu === undefined ? {} : { attMtu: e.attMtu }),
    };
  }
  if (e instanceof Error && e.name === 'AbortError') return { name: 'AbortError', message: clip(e.message) };
  return { name: 'Error', message: clip(errorMessage(e)) };
}

export function fromWire(error: RadioError): Error {
  switch (error.name) {
    case 'BleSetupError':
      return new BleSetupError(error.reason ?? error.message);
    case 'BleValueTooLargeError':
      return new BleValueTooLargeError(error.operation ?? 'notification', error.bytes ?? 0, error.limit ?? 0, error.attMtu);
    case 'AbortError':
      return new DeviceAbortError(error.message);
    default:
      return new Error(error.message);
  }
}
