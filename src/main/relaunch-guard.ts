/**
 * Stops a relaunch loop: every automatic relaunch (after a fatal error in main or repeated renderer
 * crashes) is recorded in a small file in the data directory, and once `max` relaunches happened within
 * `windowMs` the app stops relaunching and shows the error instead. A fleet's OS supervisor (systemd
 * `Restart=`, Windows Shell Launcher) may still restart it; that is its own, configurable, policy.
 *
 * Synchronous file access on purpose: it runs on the way out of a failing process, where an await may
 * never come back.
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { z } from 'zod';

const RelaunchFile = z.object({ version: z.literal(1), relaunches: z.array(z.number()).max(1_000) }).strict();

export interface RelaunchGuardOptions {
  /** `<userData>/relaunches.json`. */
  readonly file: string;
  /** Relaunches allowed within `windowMs` (default 3). */
  readonly max?: number;
  /** Default 10 minutes. */
  readonly windowMs?: number;
  readonly now?: () => number;
}

export class RelaunchGuard {
  readonly file: string;
  private readonly max: number;
  private readonly windowMs: number;
  private readonly now: () => number;

  constructor(options: RelaunchGuardOptions) {
    this.file = options.file;
    this.max = options.max ?? 3;
    this.windowMs = options.windowMs ?? 10 * 60_000;
    this.now = options.now ?? Date.now;
  }

  /** Relaunches recorded within the window (an unreadable or malformed file counts as none). */
  recent(): number[] {
    let raw: unknown;
    try {
      raw = JSON.parse(readFileSync(this.file, 'utf8'));
    } catch {
      return [];
    }
    const parsed = RelaunchFile.safeParse(raw);
    if (!parsed.success) return [];
    const since = this.now() - this.windowMs;
    return parsed.data.relaunches.filter((t) => t > since && t <= this.now());
  }

  /**
   * Records a relaunch about to happen and returns true, or returns false (recording nothing) when `max`
   * relaunches already happened within the window. A file that cannot be written does not block the
   * relaunch: the loop then ends at the OS supervisor's limit instead.
   */
  tryRecord(): boolean {
    const recent = this.recent();
    if (recent.length >= this.max) return false;
    const content = `${JSON.stringify({ version: 1, relaunches: [...recent, this.now()] })}\n`;
    try {
      mkdirSync(dirname(this.file), { recursive: true });
      const temp = `${this.file}.tmp`;
      writeFileSync(temp, content, { mode: 0o600 });
      renameSync(temp, this.file);
    } catch {
      // Best effort (see above).
    }
    return true;
  }
}
