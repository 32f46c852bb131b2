/**
 * `GET /support-bundle/<ticket>`: the staff's own browser saves a support bundle. The ticket (32 random
 * bytes) was handed out over the token-authenticated socket to an unlocked staff session and is good for
 * one download within a minute; a request another site's page makes (`Sec-Fetch-Site`, `Origin`) is refused.
 */
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { pipeline } from 'node:stream/promises';
import type { Logger } from '../platform/log.js';

/** Where the staff's browser fetches a support bundle by its one-time ticket. */
export const DOWNLOAD_PREFIX = '/support-bundle/';

export interface SupportDownloadOptions {
  /** The bundle a ticket stands for, once; undefined for an unknown or used ticket. */
  readonly take: (ticket: string) => { path: string; name: string } | undefined;
  /** Whether an `Origin` is the host's own. */
  readonly originAllowed: (origin: string) => boolean;
  readonly log: Logger;
}

export async function serveSupportDownload(req: IncomingMessage, res: ServerResponse, options: SupportDownloadOptions): Promise<void> {
  const refuse = (status: number, text: string): void => {
    res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8' });
    res.end(text);
  };
  if (req.method !== 'GET') {
    refuse(405, 'use GET');
    return;
  }
  const site = req.headers['sec-fetch-site'];
  const origin = req.headers.origin;
  if ((site !== undefined && site !== 'same-origin' && site !== 'none') || (origin !== undefined && !options.originAllowed(origin))) {
    refuse(403, 'forbidden: not from the kiosk page');
    return;
  }
  const ticket = (req.url ?? '').slice(DOWNLOAD_PREFIX.length).split('?', 1)[0] ?? '';
  const bundle = /^[A-Za-z0-9_-]{43}$/.test(ticket) ? options.take(ticket) : undefined;
  if (bundle === undefined) {
    refuse(404, 'no such download: it was used already or has expired; write a new one');
    return;
  }
  const info = await stat(bundle.path);
  const name = bundle.name.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 200);
  res.writeHead(200, {
    'Content-Type': 'application/gzip',
    'Content-Length': String(info.size),
    'Content-Disposition': `attachment; filename="${name}"`,
    'Cache-Control': 'no-store',
  });
  options.log.info({ event: 'support_bundle_downloaded', count: info.size }, 'support bundle downloaded by the staff browser');
  await pipeline(createReadStream(bundle.path), res);
}
