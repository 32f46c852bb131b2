/**
 * Which host names are this machine: the one place plain http is allowed, for the backend (src/kiosk/
 * backend-endpoints.ts) and for the update feed (config.ts) alike.
 */
import { isIP } from 'node:net';

/**
 * True for `localhost`, 127.0.0.0/8 and ::1: traffic that never leaves the machine. Only these literal
 * names: `*.localhost` is loopback by RFC 6761 only where the resolver honours it, and Node asks the
 * system's resolver, which may ask a DNS server that answers with any address.
 */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (host === 'localhost') return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  if (isIP(host) === 6) return host === '::1' || host === '0:0:0:0:0:0:0:1';
  return false;
}
