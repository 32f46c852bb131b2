/**
 * What a VpcdCard reports for QA output. APDU payloads carry personal data (the mDL handover, later the
 * session), so an event holds at most the APDU header (CLA INS P1 P2), lengths and the status word —
 * never data bytes.
 */

/** Why the card left the reader. */
export type VpcdRemovalCause =
  /** `remove()` (or the remove half of `reinsert()`). */
  | 'removed'
  /** The tag threw NfcFieldLostError: the phone left the field while an APDU was in flight. */
  | 'field_lost'
  /** vpcd closed the connection (pcscd stopped, or the slot was taken over). */
  | 'reader_closed'
  /** The connection failed (reset, write error). */
  | 'socket_error';

export type VpcdCardEvent =
  | { readonly type: 'connected'; readonly address: string }
  | {
      readonly type: 'removed';
      readonly cause: VpcdRemovalCause;
      readonly address: string;
      readonly apdus: number;
      readonly detail?: string;
    }
  | { readonly type: 'power'; readonly control: 'power_off' | 'power_on' | 'reset' }
  | { readonly type: 'unknown_control'; readonly byte: number }
  | {
      readonly type: 'apdu';
      readonly number: number;
      readonly header: string;
      readonly commandLength: number;
      readonly responseLength: number;
      readonly sw: string;
    }
  | { readonly type: 'apdu_muted'; readonly number: number; readonly header: string; readonly commandLength: number }
  | { readonly type: 'field_lost'; readonly number: number; readonly header: string; readonly commandLength: number }
  | { readonly type: 'tag_error'; readonly number?: number; readonly header?: string; readonly error: string }
  | { readonly type: 'socket_error'; readonly error: string };

const hex = (bytes: Uint8Array): string => Array.from(bytes, (b) => b.toString(16).padStart(2, '0').toUpperCase()).join('');

/** CLA INS P1 P2 in hex (fewer bytes if the command is shorter): all of a command a log may show. */
export function apduHeader(command: Uint8Array): string {
  return hex(command.subarray(0, 4));
}

/** SW1 SW2 in hex (status only, no data). */
export function statusWord(response: Uint8Array): string {
  return response.length < 2 ? '' : hex(response.subarray(response.length - 2));
}

/** One line per event for logs and the CLI. */
export function describeVpcdEvent(event: VpcdCardEvent): string {
  switch (event.type) {
    case 'connected':
      return `card inserted: connected to vpcd at ${event.address}`;
    case 'removed': {
      const why = {
        removed: 'taken away',
        field_lost: 'the field dropped',
        reader_closed: 'vpcd closed the connection',
        socket_error: 'connection error',
      }[event.cause];
      return `card removed (${why}) after ${event.apdus} APDU(s)${event.detail === undefined ? '' : `: ${event.detail}`}`;
    }
    case 'power':
      return `vpcd ${event.control.replace('_', ' ')} (ignored: the HCE session follows the field)`;
    case 'unknown_control':
      return `vpcd sent unknown control byte 0x${event.byte.toString(16).padStart(2, '0')} (ignored)`;
    case 'apdu':
      return `APDU #${event.number} ${event.header} (${event.commandLength} bytes) → ${event.sw} (${event.responseLength} bytes)`;
    case 'apdu_muted':
      return `APDU #${event.number} ${event.header} (${event.commandLength} bytes) → no answer (muted)`;
    case 'field_lost':
      return `APDU #${event.number} ${event.header} (${event.commandLength} bytes) → field lost, no answer`;
    case 'tag_error':
      return `tag error${event.number === undefined ? '' : ` at APDU #${event.number} ${event.header ?? ''}`}: ${event.error}`;
    case 'socket_error':
      return `vpcd connection error: ${event.error}`;
  }
}
