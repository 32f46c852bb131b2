/** A JSON object (not null, not an array): what the hand-checked message paths look into first. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
