/**
 * The text of a thrown value for a message or a log line: an Error's message, anything else as a string.
 * Callers that show it to a customer or write it to a log still pass it through their own escaping
 * (peer-text.ts): a message can carry a peer's words.
 */
export function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
