/** Calling a consumer's callback from inside a device adapter. */

/** Runs `call`, swallowing anything it throws: the consumer's failure must not become the adapter's. */
export function safeCall(call: () => void): void {
  try {
    call();
  } catch {
    // the consumer's failure is its own
  }
}
