/**
 * A loopback TCP proxy whose kiosk → backend direction is throttled: what the kiosk writes reaches the
 * backend at `bytesPerSecond`, so the kiosk's session socket backs up (a slow or congested uplink). The
 * other direction is passed through. Stopped with `stop()`; listens on 127.0.0.1, a free port.
 */
import net from 'node:net';

export interface SlowProxy {
  readonly url: string;
  stop(): Promise<void>;
}

export async function startSlowProxy(target: string, bytesPerSecond: number): Promise<SlowProxy> {
  const { hostname, port } = new URL(target);
  const sockets = new Set<net.Socket>();
  const TICK_MS = 20;
  const perTick = Math.max(1, Math.floor((bytesPerSecond * TICK_MS) / 1000));
  const server = net.createServer((client) => {
    const upstream = net.connect({ host: hostname, port: Number(port) });
    sockets.add(client).add(upstream);
    const queue: Buffer[] = [];
    const timer = setInterval(() => {
      let budget = perTick;
      while (budget > 0 && queue.length > 0) {
        const head = queue[0] as Buffer;
        const part = head.subarray(0, budget);
        upstream.write(part);
        budget -= part.length;
        if (part.length === head.length) queue.shift();
        else queue[0] = head.subarray(part.length);
      }
    }, TICK_MS);
    client.on('data', (chunk: Buffer) => queue.push(chunk));
    upstream.pipe(client);
    const end = (): void => {
      clearInterval(timer);
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${address.port}`,
    stop: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
