/**
 * Where a vpcd reader listens: `host:port`, `[ipv6]:port`, a bare host (default port) or a bare port
 * (on 127.0.0.1). vpcd's defaults: 35963 for slot 0 ("Virtual PCD 00 00"), 35964 for slot 1.
 */
import { isIP } from 'node:net';

export const VPCD_DEFAULT_HOST = '127.0.0.1';
export const VPCD_DEFAULT_PORT = 35963;

export interface VpcdReaderAddress {
  readonly host: string;
  readonly port: number;
}

export class VpcdAddressError extends Error {
  override readonly name = 'VpcdAddressError';
}

// A DNS name or an IPv4 address; IPv6 addresses go in brackets.
const HOST_NAME = /^[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252})$/;

function parsePort(text: string, input: string): number {
  if (!/^\d{1,5}$/.test(text))
    throw new VpcdAddressError(`invalid vpcd address ${JSON.stringify(input)}: the port must be a number from 1 to 65535`);
  const port = Number(text);
  if (port < 1 || port > 65535)
    throw new VpcdAddressError(`invalid vpcd address ${JSON.stringify(input)}: port ${port} is not in 1..65535`);
  return port;
}

/** Parses a vpcd reader address; throws VpcdAddressError with the reason. */
export function parseHostPort(input: string, defaultPort: number = VPCD_DEFAULT_PORT): VpcdReaderAddress {
  const text = input.trim();
  if (text === '') throw new VpcdAddressError('invalid vpcd address "": expected host:port, e.g. 127.0.0.1:35963');
  if (/^\d+$/.test(text)) return { host: VPCD_DEFAULT_HOST, port: parsePort(text, input) };
  if (text.startsWith('[')) {
    const m = /^\[([^\]]+)\](?::(.*))?$/.exec(text);
    const host = m?.[1];
    if (host === undefined || isIP(host) !== 6)
      throw new VpcdAddressError(`invalid vpcd address ${JSON.stringify(input)}: expected [IPv6 address]:port`);
    const port = m?.[2];
    return { host, port: port === undefined ? defaultPort : parsePort(port, input) };
  }
  const colon = text.lastIndexOf(':');
  if (colon !== text.indexOf(':'))
    throw new VpcdAddressError(`invalid vpcd address ${JSON.stringify(input)}: write an IPv6 address in brackets, e.g. [::1]:35963`);
  const host = colon < 0 ? text : text.slice(0, colon);
  if (!HOST_NAME.test(host))
    throw new VpcdAddressError(`invalid vpcd address ${JSON.stringify(input)}: ${JSON.stringify(host)} is not a host name or IP address`);
  return { host, port: colon < 0 ? defaultPort : parsePort(text.slice(colon + 1), input) };
}

/** `host:port`, with IPv6 hosts in brackets (for messages). */
export function formatHostPort(address: VpcdReaderAddress): string {
  return isIP(address.host) === 6 ? `[${address.host}]:${address.port}` : `${address.host}:${address.port}`;
}
