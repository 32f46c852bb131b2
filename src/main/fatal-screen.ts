/**
 * What the kiosk window shows when the app has stopped relaunching itself after repeated fatal errors:
 * a static page (no script, its own CSP) saying what happened and what staff should do. Loaded by main,
 * so the navigation guard does not apply; the IPC sender check refuses anything it could send.
 */
import type { BrowserWindow } from 'electron';

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

export function fatalPage(message: string, logsDir: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>Kiosk stopped</title>
<style>body{font:20px/1.5 system-ui,sans-serif;background:#1b1b1b;color:#f4f4f4;margin:0;display:grid;place-items:center;min-height:100vh}main{max-width:48rem;padding:2rem}code{background:#333;padding:0 .3em}</style>
</head><body><main data-screen="fatal">
<h1>This kiosk is out of service</h1>
<p>It stopped after repeated errors and will not restart by itself. Staff: restart the kiosk; if this comes back, send the log files to support.</p>
<p>Error: <code>${escapeHtml(message)}</code></p>
<p>Logs: <code>${escapeHtml(logsDir)}</code></p>
</main></body></html>
`;
}

export function showFatalScreen(
  window: Pick<BrowserWindow, 'loadURL' | 'isDestroyed' | 'show'> | undefined,
  message: string,
  logsDir: string,
): boolean {
  if (!window || window.isDestroyed()) return false;
  void window.loadURL(`data:text/html;charset=utf-8,${encodeURIComponent(fatalPage(message, logsDir))}`).catch(() => undefined);
  window.show();
  return true;
}
