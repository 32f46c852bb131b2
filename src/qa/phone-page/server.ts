/**
 * The virtual phone page (QA only, never part of the kiosk screen): a small loopback server, on a port of
 * its own, that shows the virtual phone and lets QA tap it, lift it, show its QR code, push that QR into
 * the kiosk as a scanner would, and change its behaviour while the kiosk runs.
 *
 * Same guards as the kiosk's host: loopback only, a per-launch token (in the page URL's `#token=`, sent back
 * as `Authorization: Bearer`), the Host header must name this server (DNS rebinding), a POST's Origin must be
 * this server's, bodies are small JSON validated with zod, and a strict CSP with no inline script or style.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import QRCode from 'qrcode';
import { z } from 'zod';
import type { VirtualCounter } from '../wiring/virtual-counter.js';
import { PhoneSettingsChangeSchema } from '../wiring/phone-settings.js';
import { errorText } from '../../common/error-text.js';

/** What "Scan it" does with the QR text: the kiosk's `qrScanned` intent, so the same rules apply. */
export type ScanIntoKiosk = (text: string) => Promise<{ readonly accepted: boolean; readonly reason?: string }>;

export interface PhonePageOptions {
  readonly counter: VirtualCounter;
  /** 0 (default) picks a free port. */
  readonly port?: number;
  readonly scan?: ScanIntoKiosk;
  /** The kiosk's phase, shown on the page so QA sees both sides (no personal data). */
  readonly kioskPhase?: () => string | undefined;
}

export interface PhonePage {
  /** `http://127.0.0.1:<port>/#token=<token>`: open this. */
  readonly url: string;
  readonly origin: string;
  readonly port: number;
  readonly token: string;
  stop(): Promise<void>;
}

export const PHONE_PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
  "form-action 'none'",
].join('; ');

const MAX_BODY_BYTES = 4_096;

/**
 * `backend_silent` / `backend_answer`: the embedded mock backend takes the traffic and answers nothing, or
 * answers again (QA's "silent backend" switch, docs/qa-demo.md).
 */
export const PhoneActionSchema = z.strictObject({
  action: z.enum(['tap', 'lift', 'retap', 'show_qr', 'scan_qr', 'backend_silent', 'backend_answer']),
});
export type PhoneAction = z.infer<typeof PhoneActionSchema>['action'];

const ASSETS: Readonly<Record<string, { readonly file: string; readonly type: string }>> = {
  '/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/phone.js': { file: 'phone.js', type: 'text/javascript; charset=utf-8' },
  '/phone.css': { file: 'phone.css', type: 'text/css; charset=utf-8' },
};

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

function describe(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`)
    .join('; ');
}

function send(res: ServerResponse, status: number, type: string, body: string | Buffer): void {
  res.writeHead(status, {
    'content-type': type,
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
    'content-security-policy': PHONE_PAGE_CSP,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'cross-origin-opener-policy': 'same-origin',
    'cross-origin-resource-policy': 'same-origin',
  });
  res.end(body);
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  send(res, status, 'application/json', JSON.stringify(body));
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  if (!/^application\/json\b/i.test(req.headers['content-type'] ?? ''))
    throw new HttpError(415, 'send JSON (Content-Type: application/json)');
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new HttpError(413, `body larger than ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as unknown;
  } catch {
    throw new HttpError(400, 'the body is not JSON');
  }
}

async function qrImage(text: string): Promise<string> {
  const svg = await QRCode.toString(text, { type: 'svg', errorCorrectionLevel: 'M', margin: 4 });
  return `data:image/svg+xml;base64,${Buffer.from(svg).toString('base64')}`;
}

export async function startPhonePage(options: PhonePageOptions): Promise<PhonePage> {
  const { counter } = options;
  const token = randomBytes(24).toString('base64url');
  const tokenBytes = Buffer.from(token);
  const assets = new Map<string, Buffer>();
  for (const [path, asset] of Object.entries(ASSETS)) assets.set(path, await readFile(new URL(`./assets/${asset.file}`, import.meta.url)));
  // The last QR image, so polling does not redraw it every time.
  let imageFor: { text: string; image: string } | undefined;

  const authorised = (req: IncomingMessage): boolean => {
    const header = req.headers.authorization ?? '';
    if (!header.startsWith('Bearer ')) return false;
    const given = Buffer.from(header.slice('Bearer '.length));
    return given.length === tokenBytes.length && timingSafeEqual(given, tokenBytes);
  };

  const state = async (): Promise<unknown> => {
    const text = counter.currentQr;
    if (text !== undefined && imageFor?.text !== text) imageFor = { text, image: await qrImage(text) };
    return {
      settings: counter.settings,
      last: counter.lastActivity ?? null,
      qr: text === undefined || imageFor === undefined ? null : { text, image: imageFor.image },
      kioskPhase: options.kioskPhase?.() ?? null,
      canScan: options.scan !== undefined,
      backend: counter.backend === undefined ? null : { online: counter.backend.online, silent: counter.backend.silent },
    };
  };

  const act = async (action: PhoneAction): Promise<unknown> => {
    const { rig } = counter;
    switch (action) {
      case 'tap':
        rig.tap();
        return { ok: true };
      case 'lift':
        rig.lift();
        return { ok: true };
      case 'retap':
        rig.retap();
        return { ok: true };
      case 'show_qr':
        return { ok: true, qr: counter.presentQr() };
      case 'scan_qr': {
        const text = counter.currentQr;
        if (text === undefined) throw new HttpError(409, 'the phone shows no QR code: press "Show QR" first');
        if (options.scan === undefined) throw new HttpError(409, 'no kiosk to scan into');
        return { ok: true, scan: await options.scan(text) };
      }
      case 'backend_silent':
      case 'backend_answer': {
        const backend = counter.backend;
        if (backend === undefined) throw new HttpError(409, 'no embedded backend: the kiosk uses a backend of its own');
        if (action === 'backend_silent') backend.goSilent();
        else backend.answerAgain();
        return { ok: true, backend: { online: backend.online, silent: backend.silent } };
      }
    }
  };

  const handleApi = async (req: IncomingMessage, res: ServerResponse, path: string, origin: string): Promise<void> => {
    if (!authorised(req)) throw new HttpError(401, 'missing or wrong token: open the URL the demo printed');
    if (req.method === 'POST' && req.headers.origin !== undefined && req.headers.origin !== origin)
      throw new HttpError(403, 'cross-origin request refused');
    if (path === '/api/state' && req.method === 'GET') {
      sendJson(res, 200, await state());
      return;
    }
    if (req.method !== 'POST') throw new HttpError(405, `${path}: use ${path === '/api/state' ? 'GET' : 'POST'}`);
    if (path === '/api/settings') {
      const parsed = PhoneSettingsChangeSchema.safeParse(await readJson(req));
      if (!parsed.success) throw new HttpError(400, `invalid settings: ${describe(parsed.error)}`);
      sendJson(res, 200, { settings: await counter.reconfigurePhone(parsed.data) });
      return;
    }
    if (path === '/api/action') {
      const parsed = PhoneActionSchema.safeParse(await readJson(req));
      if (!parsed.success) throw new HttpError(400, `invalid action: ${describe(parsed.error)}`);
      sendJson(res, 200, await act(parsed.data.action));
      return;
    }
    throw new HttpError(404, `no such endpoint: ${path}`);
  };

  const server: Server = createServer();
  const sockets = new Set<Socket>();
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const host = `127.0.0.1:${port}`;
  const origin = `http://${host}`;

  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const path = new URL(req.url ?? '/', origin).pathname;
    const run = async (): Promise<void> => {
      if (req.headers.host !== host) throw new HttpError(421, 'wrong Host header');
      if (path.startsWith('/api/')) {
        await handleApi(req, res, path, origin);
        return;
      }
      const asset = ASSETS[path];
      const body = assets.get(path);
      if (asset === undefined || body === undefined) throw new HttpError(404, 'not found');
      if (req.method !== 'GET' && req.method !== 'HEAD') throw new HttpError(405, 'use GET');
      send(res, 200, asset.type, body);
    };
    run().catch((e: unknown) => {
      const status = e instanceof HttpError ? e.status : e instanceof z.ZodError ? 400 : 500;
      const message =
        e instanceof HttpError ? e.message : e instanceof z.ZodError ? describe(e) : `the virtual phone failed: ${errorText(e)}`;
      if (res.headersSent) res.destroy();
      else sendJson(res, status, { error: message });
    });
  });

  return {
    url: `${origin}/#token=${token}`,
    origin,
    port,
    token,
    async stop() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
