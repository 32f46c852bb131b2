/**
 * Which local user is at the other end of a loopback TCP connection (Linux). The host's token is in the
 * screen's URL, and so in Chromium's command line, which other local users can read unless `/proc` is
 * mounted with `hidepid`; knowing the token must not be enough for another account to reach the kiosk's
 * API (guess the staff PIN, or keep staff locked out with wrong ones). The kernel lists every TCP socket in
 * `/proc/net/tcp` and `/proc/net/tcp6` with the uid of the process that opened it (proc(5)): the client's
 * socket is the entry whose local port is the connection's remote port and whose remote port is ours.
 */
import { readFileSync } from 'node:fs';

/** One socket of a `/proc/net/tcp*` table. */
interface TcpEntry {
  readonly localPort: number;
  readonly remotePort: number;
  readonly uid: number;
}

/** The entries of one `/proc/net/tcp` or `/proc/net/tcp6` text (header line first). */
export function parseProcNetTcp(text: string): TcpEntry[] {
  const entries: TcpEntry[] = [];
  for (const line of text.split('\n').slice(1)) {
    // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode …
    const fields = line.trim().split(/\s+/);
    if (fields.length < 8) continue;
    const localPort = Number.parseInt(fields[1]?.split(':')[1] ?? '', 16);
    const remotePort = Number.parseInt(fields[2]?.split(':')[1] ?? '', 16);
    const uid = Number.parseInt(fields[7] ?? '', 10);
    if (Number.isInteger(localPort) && Number.isInteger(remotePort) && Number.isInteger(uid)) entries.push({ localPort, remotePort, uid });
  }
  return entries;
}

export type PeerUser = { readonly uid: number } | { readonly unknown: string };

/**
 * The uid of the process that opened the client end of a loopback connection to `serverPort` from
 * `clientPort`, or why it cannot be told (not Linux, `/proc` unreadable, no such entry).
 */
export function loopbackPeerUser(
  serverPort: number,
  clientPort: number,
  read: (path: string) => string = (p) => readFileSync(p, 'utf8'),
): PeerUser {
  const tables: string[] = [];
  for (const path of ['/proc/net/tcp', '/proc/net/tcp6']) {
    try {
      tables.push(read(path));
    } catch {
      // tcp6 is absent on kernels without IPv6; both absent is reported below.
    }
  }
  if (tables.length === 0) return { unknown: '/proc/net/tcp cannot be read' };
  for (const table of tables) {
    const client = parseProcNetTcp(table).find((e) => e.localPort === clientPort && e.remotePort === serverPort);
    if (client) return { uid: client.uid };
  }
  return { unknown: 'the connection is not in /proc/net/tcp' };
}
