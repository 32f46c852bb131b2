/**
 * Local-time windows `HH:MM-HH:MM` (start included, end excluded; an end before the start wraps midnight:
 * `23:00-01:00` holds 23:30 and 00:30). Used by the pre-warm policy's business hours and the updater's
 * maintenance window.
 */
export const TIME_WINDOW = /^([01][0-9]|2[0-3]):([0-5][0-9])-([01][0-9]|2[0-3]):([0-5][0-9])$/;

function minutesOf(window: string): { start: number; end: number } {
  const m = TIME_WINDOW.exec(window);
  if (!m) throw new RangeError(`not a time window (HH:MM-HH:MM): ${window.slice(0, 40)}`);
  return { start: Number(m[1]) * 60 + Number(m[2]), end: Number(m[3]) * 60 + Number(m[4]) };
}

/** Whether `date` (local time) is inside `window`. */
export function insideWindow(window: string, date: Date): boolean {
  const { start, end } = minutesOf(window);
  const now = date.getHours() * 60 + date.getMinutes();
  return start < end ? now >= start && now < end : now >= start || now < end;
}
