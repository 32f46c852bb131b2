/**
 * What the fleet bench (fleet.ts) and its backend child (fleet-backend-child.ts) say to each other over the
 * IPC channel, and the API key of each kiosk (both sides derive it, so 1,000 keys never cross the channel).
 *
 *   child → parent  loaded    the mock backend's engine is ready; it listens when told
 *                   ready     listening on 127.0.0.1:port since `listeningAt`
 *                   arrivals  requests that reached the backend since the last batch
 *                   down      stopped listening at `stoppingAt` (every connection destroyed); the child exits next
 *                   failure   something the bench must report (the child could not listen, …)
 *   parent → child  listen    start the mock backend on `port` (0: a free one)
 *                   down      stop listening, destroy every connection, send the last arrivals and exit
 */

export const EXCHANGES = ['create', 'result', 'upgrade', 'other'] as const;
export type Exchange = (typeof EXCHANGES)[number];

/**
 * One request as the backend saw it: `[at, exchange, kiosk, sessionId]`, where `kiosk` is the index of the
 * API key it presented (-1 for an upgrade, whose bearer is the client secret, or an unknown key) and
 * `sessionId` the session it addressed (`null` for `POST /sessions`). A tuple: thousands cross the channel.
 */
export type WireArrival = readonly [at: number, exchange: Exchange, kiosk: number, sessionId: string | null];

export type FleetChildReport =
  | { readonly kind: 'loaded'; readonly pid: number }
  | { readonly kind: 'ready'; readonly port: number; readonly listeningAt: number }
  | { readonly kind: 'arrivals'; readonly arrivals: readonly WireArrival[] }
  | { readonly kind: 'down'; readonly stoppingAt: number }
  | { readonly kind: 'failure'; readonly detail: string };

export type FleetChildCommand = { readonly kind: 'listen'; readonly port: number } | { readonly kind: 'down' };

/** The API key of kiosk `index` in a run (the seed keeps two runs' keys apart). */
export function fleetApiKey(seed: string, index: number): string {
  return `fleet-${seed}-${index}`;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0;

function isWireArrival(v: unknown): v is WireArrival {
  return (
    Array.isArray(v) &&
    v.length === 4 &&
    typeof v[0] === 'number' &&
    (EXCHANGES as readonly unknown[]).includes(v[1]) &&
    typeof v[2] === 'number' &&
    Number.isInteger(v[2]) &&
    (v[3] === null || typeof v[3] === 'string')
  );
}

export function isFleetChildReport(v: unknown): v is FleetChildReport {
  if (!isObject(v)) return false;
  switch (v.kind) {
    case 'loaded':
      return isCount(v.pid);
    case 'ready':
      return isCount(v.port) && typeof v.listeningAt === 'number';
    case 'arrivals':
      return Array.isArray(v.arrivals) && v.arrivals.every(isWireArrival);
    case 'down':
      return typeof v.stoppingAt === 'number';
    case 'failure':
      return typeof v.detail === 'string';
    default:
      return false;
  }
}

export function isFleetChildCommand(v: unknown): v is FleetChildCommand {
  if (!isObject(v)) return false;
  return (v.kind === 'listen' && isCount(v.port) && v.port <= 65_535) || v.kind === 'down';
}
