/**
 * Locale formatting of outcome values (pure; Intl only). A full-date (`YYYY-MM-DD`, RFC 8943) is a day,
 * not an instant: it is formatted in UTC from its own parts, so no time zone can move it to the day
 * before. A tdate (RFC 3339 date-time) is an instant: shown with its time in the kiosk's time zone.
 */

export function formatFullDate(iso: string, language: string): string {
  const [year, month, day] = iso.split('-').map(Number) as [number, number, number];
  return new Intl.DateTimeFormat(language, { dateStyle: 'long', timeZone: 'UTC' }).format(new Date(Date.UTC(year, month - 1, day)));
}

export function formatDateTime(iso: string, language: string, timeZone?: string): string {
  const options: Intl.DateTimeFormatOptions = { dateStyle: 'long', timeStyle: 'short', ...(timeZone === undefined ? {} : { timeZone }) };
  return new Intl.DateTimeFormat(language, options).format(new Date(iso));
}

export function formatNumber(value: number, language: string): string {
  return new Intl.NumberFormat(language, { maximumFractionDigits: 2 }).format(value);
}

/** A byte count for people: "512 B", "12.3 kB", "1.2 MB" (decimal units, as file managers show). */
export function formatSize(bytes: number, language: string): string {
  const units = [
    ['byte', 1],
    ['kilobyte', 1_000],
    ['megabyte', 1_000_000],
  ] as const;
  const [unit, scale] = bytes >= 1_000_000 ? units[2] : bytes >= 1_000 ? units[1] : units[0];
  return new Intl.NumberFormat(language, { style: 'unit', unit, unitDisplay: 'short', maximumFractionDigits: 1 }).format(bytes / scale);
}
