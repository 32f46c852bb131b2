/**
 * Keyboard shortcuts a kiosk must not honour: they would reload the screen, open the developer tools,
 * zoom the layout, go back in history, or close, hide or quit the window. Removing the application menu removes most of
 * Electron's built-in accelerators already; this filter (`before-input-event`, which sees keys before the
 * page does: electronjs.org/docs/latest/api/web-contents#event-before-input-event) is the second line.
 *
 * Ordinary typing is never touched: the customer and staff type digits, letters and `-`, and staff paste
 * with Ctrl/Cmd+V. OS-level shortcuts (Alt+Tab, Ctrl+Alt+Del, the Windows key) never reach an app: they
 * need the OS kiosk lockdown (docs/desktop-app.md, installer guide).
 */
import type { Input } from 'electron';

export type BlockedShortcut = 'reload' | 'devtools' | 'zoom' | 'close' | 'hide' | 'navigate';

export type KeyInput = Pick<Input, 'key' | 'code' | 'control' | 'meta' | 'alt' | 'shift'>;

const ZOOM_KEYS = new Set(['+', '=', '-', '_', '0']);
const ZOOM_CODES = new Set(['NumpadAdd', 'NumpadSubtract', 'Numpad0', 'Equal', 'Minus', 'Digit0']);
const DEVTOOLS_LETTERS = new Set(['i', 'j', 'c']);

/** Which kind of shortcut `input` is, if it is one the kiosk blocks; `null` for anything else. */
export function blockedShortcut(input: KeyInput, platform: NodeJS.Platform): BlockedShortcut | null {
  const key = input.key.length === 1 ? input.key.toLowerCase() : input.key;
  const mac = platform === 'darwin';
  // The platform's command modifier: Cmd on macOS, Ctrl elsewhere. Ctrl is checked on macOS too, as
  // Chromium maps a few Ctrl shortcuts there as well.
  const command = input.control || (mac && input.meta);

  if (key === 'F5' || key === 'BrowserRefresh') return 'reload';
  if (command && key === 'r') return 'reload';

  if (key === 'F12') return 'devtools';
  if (input.control && input.shift && DEVTOOLS_LETTERS.has(key)) return 'devtools';
  if (mac && input.meta && input.alt && (DEVTOOLS_LETTERS.has(key) || ['ˆ', '∆', 'ç'].includes(key))) return 'devtools';

  if (command && (ZOOM_KEYS.has(key) || ZOOM_CODES.has(input.code))) return 'zoom';
  if (key === 'ZoomIn' || key === 'ZoomOut' || key === 'ZoomToggle') return 'zoom';

  if (input.alt && key === 'F4') return 'close';
  if (input.control && key === 'F4') return 'close';
  if (command && (key === 'w' || key === 'q')) return 'close';

  // History back/forward would leave the screen's one page (the navigation guard allows our own origin).
  if (key === 'BrowserBack' || key === 'BrowserForward' || key === 'BrowserHome') return 'navigate';
  if (input.alt && (key === 'ArrowLeft' || key === 'ArrowRight') && !input.control && !input.shift) return 'navigate';

  if (mac && input.meta && (key === 'h' || key === 'm')) return 'hide';
  return null;
}
