/**
 * What the radio process says, into the kiosk's log: its stdout and stderr line by line (a native print), and
 * the records of its libraries' `console` (routed in the child). Escaped, bounded and without device
 * addresses (a native print may name a phone); never passed on to this process's stdout (the relay CLI
 * prints one JSON line per verification).
 */
import { escapePeerText } from '../../../../common/peer-text.js';
import type { LibraryLog } from '../../library-console.js';
import type { ChildMessage } from '../protocol.js';

const MAX_OUTPUT_LINE = 500;

/** A Bluetooth device address (a phone's, in a native print): `12:34:56:78:9A:BC`, `-` or no separators. */
const DEVICE_ADDRESS = /\b[0-9a-f]{2}([:-]?)(?:[0-9a-f]{2}\1){4}[0-9a-f]{2}\b/gi;

/** A line the child printed, fit for the log: no device address, escaped, bounded. */
export function childOutputLine(line: string): string {
  return escapePeerText(line.replace(DEVICE_ADDRESS, '[address]'), MAX_OUTPUT_LINE);
}

/** The child's own output: to the log as library output, line by line, escaped and bounded. */
export function captureChildOutput(stream: NodeJS.ReadableStream | null, name: 'stdout' | 'stderr', log: LibraryLog): void {
  if (!stream) return;
  let partial = '';
  const emit = (line: string): void => {
    if (line.trim() === '') return;
    log.warn({ event: 'ble_library_output', library: 'radio-process', stream: name }, childOutputLine(line));
  };
  stream.on('data', (chunk: Buffer | string) => {
    partial += chunk.toString();
    const lines = partial.split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) emit(line);
    // A line that never ends is cut, so a flood cannot grow this buffer.
    if (partial.length > 4 * MAX_OUTPUT_LINE) {
      emit(partial);
      partial = '';
    }
  });
  stream.on('end', () => emit(partial));
}

/** A log record of the child's libraries, logged here as theirs. */
export function logChildRecord(log: LibraryLog, message: Extract<ChildMessage, { t: 'log' }>): void {
  log[message.level](
    { event: message.event, library: message.library ?? 'radio-process' },
    escapePeerText(message.message, MAX_OUTPUT_LINE),
  );
}
