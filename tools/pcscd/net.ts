/**
 * Loopback port helpers for the private pcscd. Readiness is read from /proc, never by connecting:
 * a TCP connect to a vpcd port is a card insertion (frankmorgner/vsmartcard `vpcd.c`: the card is the TCP client).
 */
import { readdir, readFile, readlink } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';

export interface ListeningSocket {
  readonly address: string;
  readonly port: number;
  readonly inode: number;
}

const TCP_LISTEN = '0A';

/** /proc/net/tcp prints each 32-bit word of the address in host byte order. */
function decodeAddress(hex: string): string {
  const bytes = Buffer.from(hex, 'hex');
  if (os.endianness() === 'LE') for (let i = 0; i < bytes.length; i += 4) bytes.subarray(i, i + 4).reverse();
  if (bytes.length === 4) return Array.from(bytes).join('.');
  const words: string[] = [];
  for (let i = 0; i < 16; i += 2) words.push(bytes.readUInt16BE(i).toString(16));
  // RFC 5952: the longest run of two or more zero words becomes '::'
  let start = -1;
  let length = 0;
  for (let i = 0; i < words.length; ) {
    let j = i;
    while (j < words.length && words[j] === '0') j++;
    if (j - i > length) [start, length] = [i, j - i];
    i = j === i ? i + 1 : j;
  }
  if (length < 2) return words.join(':');
  return `${words.slice(0, start).join(':')}::${words.slice(start + length).join(':')}`;
}

async function readTable(file: string): Promise<ListeningSocket[]> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    return []; // no IPv6 in this kernel
  }
  const sockets: ListeningSocket[] = [];
  for (const line of text.split('\n').slice(1)) {
    const fields = line.trim().split(/\s+/);
    const local = fields[1];
    const inode = fields[9];
    if (fields[3] !== TCP_LISTEN || local === undefined || inode === undefined) continue;
    const [address, port] = local.split(':');
    if (address === undefined || port === undefined) continue;
    sockets.push({ address: decodeAddress(address), port: parseInt(port, 16), inode: Number(inode) });
  }
  return sockets;
}

/** Every TCP socket in LISTEN state on this host (IPv4 and IPv6). */
export async function listeningTcpSockets(): Promise<ListeningSocket[]> {
  const [v4, v6] = await Promise.all([readTable('/proc/net/tcp'), readTable('/proc/net/tcp6')]);
  return [...v4, ...v6];
}

/** Inodes of the sockets a process holds open (needs the same user, or root). */
export async function socketInodesOf(pid: number): Promise<Set<number>> {
  const inodes = new Set<number>();
  let fds: string[];
  try {
    fds = await readdir(`/proc/${pid}/fd`);
  } catch {
    return inodes; // exited
  }
  await Promise.all(
    fds.map(async (fd) => {
      try {
        const match = /^socket:\[(\d+)\]$/.exec(await readlink(`/proc/${pid}/fd/${fd}`));
        if (match?.[1] !== undefined) inodes.add(Number(match[1]));
      } catch {
        // closed meanwhile
      }
    }),
  );
  return inodes;
}

/** TCP sockets in LISTEN state held by the process `pid`. */
export async function listeningSocketsOf(pid: number): Promise<ListeningSocket[]> {
  const [inodes, sockets] = await Promise.all([socketInodesOf(pid), listeningTcpSockets()]);
  return sockets.filter((s) => inodes.has(s.inode));
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => {
      resolve(false);
    });
    server.listen({ host: '127.0.0.1', port, exclusive: true }, () => {
      server.close(() => {
        resolve(true);
      });
    });
  });
}

async function ephemeralLow(): Promise<number> {
  try {
    const [low] = (await readFile('/proc/sys/net/ipv4/ip_local_port_range', 'utf8')).trim().split(/\s+/);
    return Number(low) || 32768;
  } catch {
    return 32768;
  }
}

/**
 * `count` free port pairs (p, p+1) on 127.0.0.1, vpcd's two slots per reader.conf entry.
 * Chosen at random below the kernel's ephemeral range, where outgoing connections never take a
 * port between our probe and pcscd's bind; a lost race is caught by the caller's readiness check.
 */
export async function freePortPairs(count: number, avoid: ReadonlySet<number> = new Set()): Promise<number[]> {
  const high = Math.min(await ephemeralLow(), 65535) - 2;
  const low = high > 12000 ? 10000 : 1024;
  const taken = new Set(avoid);
  const found: number[] = [];
  for (let attempt = 0; found.length < count; attempt++) {
    if (attempt > 500) throw new Error('private pcscd: no free loopback port pair found');
    const port = low + Math.floor(Math.random() * (high - low));
    if (taken.has(port) || taken.has(port + 1)) continue;
    if ((await canListen(port)) && (await canListen(port + 1))) {
      found.push(port);
      taken.add(port).add(port + 1);
    }
  }
  return found;
}
