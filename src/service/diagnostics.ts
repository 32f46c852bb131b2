/**
 * The staff's diagnostics: the last events of the kiosk's log and counts of what happened, with no
 * personal data. The kiosk's pino logger is tee'd into {@link DiagnosticsLog.stream}; of each line only the
 * level, the event name and a short detail built from whitelisted fields whose values look like codes
 * (letters, digits, `_.:-`) or numbers are kept. Free text (`detail`, `msg`), names, values and anything
 * a peer wrote are dropped, so even a careless log call cannot put a holder's data on the staff screen.
 */
import { Writable } from 'node:stream';
import type { DiagnosticEvent, Diagnostics } from '../common/kiosk-api.js';
import type { VerificationReport } from '../kiosk/kiosk.js';

/** Fields whose code-like values may appear in an event's detail. */
const DETAIL_KEYS = [
  'code',
  'reason',
  'reasons',
  'verdict',
  'answer',
  'missing',
  'result',
  'transport',
  'role',
  'phase',
  'state',
  'status',
  'source',
  'kind',
  'component',
  'profile',
  'wsAuth',
  'closeCode',
  'attempt',
  'attempts',
  'attemptsLeft',
  'lockouts',
  'apdus',
  'bleMessages',
  'durationMs',
  'count',
  'keys',
  'rebuild',
] as const;
const SAFE_TEXT = /^[A-Za-z0-9_.:-]{1,64}$/;
const SAFE_EVENT = /^[A-Za-z][A-Za-z0-9_.-]{0,99}$/;
const MAX_DETAIL = 300;
const MAX_COUNT_KEYS = 200;
const DAY_MS = 86_400_000;
const MAX_SESSION_TIMES = 100_000;

function safeValue(value: unknown): string | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : undefined;
  if (typeof value === 'boolean') return String(value);
  if (typeof value === 'string') return SAFE_TEXT.test(value) ? value : undefined;
  if (Array.isArray(value)) {
    const items = value.slice(0, 6).map(safeValue);
    return items.every((v) => v !== undefined) ? items.join(',') : undefined;
  }
  return undefined;
}

/** A detail string from whitelisted, code-like fields; undefined when nothing qualifies. */
export function safeDetail(fields: Record<string, unknown>): string | undefined {
  const parts: string[] = [];
  for (const key of DETAIL_KEYS) {
    const value = safeValue(fields[key]);
    if (value !== undefined) parts.push(`${key}=${value}`);
  }
  const detail = parts.join(' ').slice(0, MAX_DETAIL);
  return detail === '' ? undefined : detail;
}

function levelName(level: unknown): DiagnosticEvent['level'] | undefined {
  if (typeof level !== 'number') return undefined;
  if (level >= 50) return 'error';
  if (level >= 40) return 'warn';
  if (level >= 30) return 'info';
  return undefined;
}

export class DiagnosticsLog {
  private readonly events: DiagnosticEvent[] = [];
  private readonly counts = new Map<string, number>();
  /** When sessions were created, for the count over the last 24 hours (pruned as it is read). */
  private readonly sessionTimes: number[] = [];
  /** Where the logger writes (pino writes one JSON line per call). */
  readonly stream: Writable;

  constructor(private readonly options: { capacity?: number; now?: () => number } = {}) {
    this.stream = new Writable({
      decodeStrings: false,
      write: (chunk: string | Buffer, _encoding, callback) => {
        for (const line of String(chunk).split('\n')) if (line !== '') this.takeLine(line);
        callback();
      },
    });
  }

  private now(): number {
    return this.options.now?.() ?? Date.now();
  }

  private takeLine(line: string): void {
    let entry: unknown;
    try {
      entry = JSON.parse(line);
    } catch {
      return;
    }
    if (typeof entry !== 'object' || entry === null) return;
    const fields = entry as Record<string, unknown>;
    const level = levelName(fields.level);
    if (!level) return;
    const event = typeof fields.event === 'string' && SAFE_EVENT.test(fields.event) ? fields.event : 'log';
    const at = typeof fields.time === 'number' ? fields.time : this.now();
    this.push({ at, level, event, detail: safeDetail(fields) });
  }

  /** Records an event directly (same filtering as log lines). */
  record(level: DiagnosticEvent['level'], event: string, fields: Record<string, unknown> = {}): void {
    this.push({ at: this.now(), level, event: SAFE_EVENT.test(event) ? event : 'event', detail: safeDetail(fields) });
  }

  private push(event: { at: number; level: DiagnosticEvent['level']; event: string; detail: string | undefined }): void {
    const { at, level, detail } = event;
    this.events.push(detail === undefined ? { at, level, event: event.event } : { at, level, event: event.event, detail });
    const capacity = this.options.capacity ?? 200;
    if (this.events.length > capacity) this.events.splice(0, this.events.length - capacity);
  }

  /** Adds one to a counter; keys are code-like or dropped. */
  count(key: string): void {
    if (!/^[A-Za-z0-9_.:-]{1,100}$/.test(key)) return;
    if (!this.counts.has(key) && this.counts.size >= MAX_COUNT_KEYS) return;
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
  }

  /** Counts of a finished verification by result, verdict, the request's answer, rejection reasons and error code. */
  countVerification(report: VerificationReport): void {
    this.count('verifications');
    this.count(`result.${report.result}`);
    this.count(`transport.${report.transport}`);
    if (report.outcome) {
      this.count(`verdict.${report.outcome.verdict}`);
      // "Authentic but not met" (an under-age customer, an element withheld) is what staff act on.
      this.count(`answer.${report.outcome.answer.result}`);
      for (const reason of report.outcome.reasons.slice(0, 10)) if (SAFE_TEXT.test(reason)) this.count(`reason.${reason}`);
    }
    if (report.error && SAFE_TEXT.test(report.error.code)) this.count(`error.${report.error.code}`);
  }

  recentEvents(): DiagnosticEvent[] {
    return [...this.events];
  }

  /**
   * A session was created (`POST /sessions`). Counted in total and over the last 24 hours, the figure a
   * fleet owner paying per session looks at (`session.prewarm` changes it most).
   */
  sessionCreated(at: number): void {
    this.count('sessionsCreated');
    this.sessionTimes.push(at);
    // At most one a second is plausible; the bound keeps a runaway loop from growing the list.
    if (this.sessionTimes.length > MAX_SESSION_TIMES) this.sessionTimes.splice(0, this.sessionTimes.length - MAX_SESSION_TIMES);
  }

  snapshot(version: string, startedAt: number, now: number = Date.now()): Diagnostics {
    const dayAgo = now - DAY_MS;
    const firstInDay = this.sessionTimes.findIndex((t) => t > dayAgo);
    if (firstInDay > 0) this.sessionTimes.splice(0, firstInDay);
    else if (firstInDay < 0) this.sessionTimes.length = 0;
    const counts = Object.fromEntries(this.counts);
    if (this.counts.has('sessionsCreated')) counts.sessionsCreatedLastDay = this.sessionTimes.length;
    return { version, startedAt, events: this.recentEvents().reverse(), counts };
  }
}
