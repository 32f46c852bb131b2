/**
 * pcscd writes its log straight to a file (no pipe that a busy or exited Node process could stall);
 * these helpers read it back: the tail for error messages, and new lines for a `log` callback.
 */
import { closeSync, openSync, readSync, statSync } from 'node:fs';

/** Bytes of `file` from `offset` on, as text ('' when missing). */
export function readFrom(file: string, offset: number): string {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch {
    return '';
  }
  try {
    const size = statSync(file).size;
    if (size <= offset) return '';
    const buffer = Buffer.alloc(size - offset);
    const n = readSync(fd, buffer, 0, buffer.length, offset);
    return buffer.subarray(0, n).toString('utf8');
  } finally {
    closeSync(fd);
  }
}

export function fileSize(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}

/** The last `lines` lines of `file` from `offset` on, for error messages. */
export function tail(file: string, offset = 0, lines = 25): string {
  const text = readFrom(file, offset).trimEnd();
  return text === '' ? '(log empty)' : text.split('\n').slice(-lines).join('\n');
}

/** Calls `onLine` for each line appended to `file`, polling every `intervalMs` (unref'd timer). */
export class LogFollower {
  private partial = '';
  private readonly timer: NodeJS.Timeout;

  /** Starts reading at byte `offset` (default: the current end). */
  constructor(
    private readonly file: string,
    private readonly onLine: (line: string) => void,
    private offset = fileSize(file),
    intervalMs = 50,
  ) {
    this.timer = setInterval(() => {
      this.poll();
    }, intervalMs);
    this.timer.unref();
  }

  poll(): void {
    const text = readFrom(this.file, this.offset);
    if (text === '') return;
    this.offset += Buffer.byteLength(text);
    const parts = (this.partial + text).split('\n');
    this.partial = parts.pop() ?? '';
    for (const line of parts) this.onLine(line);
  }

  close(): void {
    clearInterval(this.timer);
    this.poll();
    if (this.partial !== '') this.onLine(this.partial);
    this.partial = '';
  }
}
