/**
 * Long texts are said sentence by sentence: the first sentence is asked for (and starts playing) before the
 * rest is made, and Chromium's speech synthesis stalls on long utterances on some platforms (a known quirk of
 * the Web Speech API: an utterance of more than roughly 15 seconds can stop without an `end` event).
 */

/** Longest piece said at once; a longer sentence is cut at a comma, else at a space. */
export const MAX_PIECE = 200;

export function splitSentences(text: string): string[] {
  const pieces: string[] = [];
  for (const sentence of text.split(/(?<=[.!?…])\s+/u)) {
    let rest = sentence.trim();
    while (rest.length > MAX_PIECE) {
      const window = rest.slice(0, MAX_PIECE);
      const cut = Math.max(window.lastIndexOf(', '), window.lastIndexOf(' '));
      const at = cut > 0 ? cut + 1 : MAX_PIECE;
      pieces.push(rest.slice(0, at).trim());
      rest = rest.slice(at).trim();
    }
    if (rest.length > 0) pieces.push(rest);
  }
  return pieces;
}
