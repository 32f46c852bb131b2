/**
 * What a getUserMedia failure means for the customer. Browsers name their errors (DOMException.name);
 * the older Chromium names are kept for embedded engines that still use them.
 */
import type { CameraState } from '../../common/kiosk-api.js';

export type CameraFailure = { readonly state: Extract<CameraState, 'denied' | 'missing' | 'error'>; readonly detail: string };

const DENIED = new Set(['NotAllowedError', 'PermissionDeniedError', 'SecurityError']);
const MISSING = new Set(['NotFoundError', 'DevicesNotFoundError', 'OverconstrainedError', 'ConstraintNotSatisfiedError']);

/** Staff detail: the error's name and the constraint it broke; bounded, never a stack. */
export function classifyCameraError(error: unknown): CameraFailure {
  const name = typeof error === 'object' && error !== null && 'name' in error && typeof error.name === 'string' ? error.name : 'Error';
  const constraint =
    typeof error === 'object' &&
    error !== null &&
    'constraint' in error &&
    typeof error.constraint === 'string' &&
    error.constraint.length > 0
      ? ` (${error.constraint})`
      : '';
  const detail = `${name}${constraint}`.slice(0, 200);
  if (DENIED.has(name)) return { state: 'denied', detail };
  if (MISSING.has(name)) return { state: 'missing', detail };
  return { state: 'error', detail };
}
