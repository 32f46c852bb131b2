/**
 * Serves the built renderer: GET and HEAD of files under one directory, with their MIME types (`.wasm`
 * as `application/wasm`, which streaming compilation requires). No directory listings, nothing outside
 * the directory (`..`, encoded separators, NUL and symbolic links that lead out are refused), and a clear
 * page when the renderer has not been built.
 */
import { createReadStream } from 'node:fs';
import { realpath, stat } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { extname, join, sep } from 'node:path';

const MIME_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.webmanifest': 'application/manifest+json; charset=utf-8',
  '.wasm': 'application/wasm',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.ico': 'image/x-icon',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
  '.ttf': 'font/ttf',
  '.txt': 'text/plain; charset=utf-8',
};

export function mimeTypeFor(path: string): string {
  return MIME_TYPES[extname(path).toLowerCase()] ?? 'application/octet-stream';
}

function plain(res: ServerResponse, status: number, text: string, extra: Record<string, string> = {}): void {
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': Buffer.byteLength(text), ...extra });
  res.end(text);
}

const NOT_BUILT_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Kiosk screen not built</title></head>
<body><main data-screen="not_built"><h1>The kiosk screen is not built</h1>
<p>Run <code>npm run build:renderer</code> and reload this page (<code>npm run host</code> and <code>npm run demo</code> build it first).</p>
</main></body></html>
`;

/** The file a URL path names inside `root`, or why not (a status and a message). */
export async function resolveStatic(
  root: string,
  urlPath: string,
): Promise<{ file: string; size: number } | { status: number; message: string }> {
  let decoded: string;
  try {
    decoded = decodeURIComponent(urlPath);
  } catch {
    return { status: 400, message: 'bad request: malformed path' };
  }
  if (!decoded.startsWith('/') || decoded.includes('\0') || decoded.includes('\\'))
    return { status: 400, message: 'bad request: malformed path' };
  const segments = decoded.split('/').filter((s) => s !== '');
  if (segments.some((s) => s === '..' || s === '.')) return { status: 403, message: 'forbidden: path outside the screen' };
  const relative = decoded.endsWith('/') ? [...segments, 'index.html'] : segments;
  if (relative.length === 0) relative.push('index.html');
  let rootReal: string;
  try {
    rootReal = await realpath(root);
  } catch {
    return { status: 404, message: 'not found' };
  }
  const candidate = join(rootReal, ...relative);
  let real: string;
  try {
    real = await realpath(candidate);
  } catch {
    return { status: 404, message: 'not found' };
  }
  if (!real.startsWith(rootReal + sep)) return { status: 403, message: 'forbidden: path outside the screen' };
  const info = await stat(real).catch(() => undefined);
  // Directories are not listed and have no implicit index below the root.
  if (!info?.isFile()) return { status: 404, message: 'not found' };
  return { file: real, size: info.size };
}

export async function serveStatic(req: IncomingMessage, res: ServerResponse, root: string): Promise<void> {
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    plain(res, 405, 'method not allowed', { Allow: 'GET, HEAD' });
    return;
  }
  const rootIndex = await stat(join(root, 'index.html')).catch(() => undefined);
  if (!rootIndex?.isFile()) {
    res.writeHead(503, { 'Content-Type': 'text/html; charset=utf-8', 'Content-Length': Buffer.byteLength(NOT_BUILT_PAGE) });
    res.end(req.method === 'HEAD' ? undefined : NOT_BUILT_PAGE);
    return;
  }
  // The raw path, not a URL-normalised one: a `..` is refused rather than silently folded away.
  const path = (req.url ?? '/').split(/[?#]/, 1)[0] ?? '/';
  const found = await resolveStatic(root, path);
  if ('status' in found) {
    plain(res, found.status, found.message);
    return;
  }
  res.writeHead(200, { 'Content-Type': mimeTypeFor(found.file), 'Content-Length': found.size });
  if (req.method === 'HEAD') {
    res.end();
    return;
  }
  const stream = createReadStream(found.file);
  stream.on('error', () => res.destroy());
  stream.pipe(res);
}
