/**
 * The browser host's support bundle download (`GET /support-bundle/<ticket>`): the file a one-time ticket
 * stands for, as an attachment, once; refused with a wrong Host, from another site's page, with another
 * method, and for an unknown, spent or malformed ticket. (The tickets come from the service's
 * `prepareSupportDownload`: test/unit/service/removable-volumes.test.ts.)
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/platform/log.js';
import { startHost, type HostedService, type RunningHost } from '../../../src/host/server.js';
import { LogCapture } from '../../support/harness.js';

const TICKET = 'A'.repeat(43);
let root: string;
let host: RunningHost;
const tickets = new Map<string, { path: string; name: string }>();

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'mdl-kiosk-download-'));
  await writeFile(join(root, 'bundle.tar.gz'), Buffer.from('bundle-bytes'));
  const service: HostedService = {
    connectScreen: () => {
      throw new Error('no screen in this test');
    },
    takeSupportDownload: (ticket) => {
      const entry = tickets.get(ticket);
      tickets.delete(ticket);
      return entry;
    },
  };
  host = await startHost({ service, rendererDir: root, port: 0, log: createLogger({ level: 'silent' }, new LogCapture()) });
});

afterAll(async () => {
  await host.stop();
  await rm(root, { recursive: true, force: true });
});

function get(
  path: string,
  headers: Record<string, string> = {},
  method = 'GET',
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port: host.port, path, method, headers: { host: `127.0.0.1:${host.port}`, ...headers } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('support bundle download', () => {
  it("serves the ticket's bundle once, as an attachment, not cached", async () => {
    tickets.set(TICKET, { path: join(root, 'bundle.tar.gz'), name: 'mdl-kiosk-support-2026.tar.gz' });
    const reply = await get(`/support-bundle/${TICKET}`, { 'sec-fetch-site': 'same-origin' });
    expect(reply.status).toBe(200);
    expect(reply.body).toBe('bundle-bytes');
    expect(reply.headers['content-type']).toBe('application/gzip');
    expect(reply.headers['content-disposition']).toBe('attachment; filename="mdl-kiosk-support-2026.tar.gz"');
    expect(reply.headers['cache-control']).toBe('no-store');
    expect(reply.headers['content-security-policy']).toBeDefined();
    expect((await get(`/support-bundle/${TICKET}`)).status).toBe(404);
  });

  it('refuses a wrong Host, another site, another method, and bad tickets, without spending a ticket', async () => {
    tickets.set(TICKET, { path: join(root, 'bundle.tar.gz'), name: 'x.tar.gz' });
    expect((await get(`/support-bundle/${TICKET}`, { host: 'evil.example:80' })).status).toBe(403);
    expect((await get(`/support-bundle/${TICKET}`, { 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    expect((await get(`/support-bundle/${TICKET}`, { origin: 'http://evil.example' })).status).toBe(403);
    expect((await get(`/support-bundle/${TICKET}`, {}, 'POST')).status).toBe(405);
    expect((await get('/support-bundle/short')).status).toBe(404);
    expect((await get(`/support-bundle/${'B'.repeat(43)}`)).status).toBe(404);
    expect((await get(`/support-bundle/../${TICKET}`)).status).toBe(404);
    // Still good after all that: each refusal came before the ticket was looked at.
    expect((await get(`/support-bundle/${TICKET}`)).status).toBe(200);
  });

  it('a name from the service cannot break out of the header', async () => {
    tickets.set(TICKET, { path: join(root, 'bundle.tar.gz'), name: 'a"; b\r\nX-Evil: 1.tar.gz' });
    const reply = await get(`/support-bundle/${TICKET}`);
    expect(reply.headers['x-evil']).toBeUndefined();
    expect(reply.headers['content-disposition']).toBe('attachment; filename="a___b__X-Evil__1.tar.gz"');
  });
});
