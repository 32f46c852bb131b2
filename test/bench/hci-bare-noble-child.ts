/**
 * The floor of the HCI notify comparison (ble-bench-hci.ts), in a process of its own as the kiosk's noble
 * is in production: noble's own API on the controller whose tty is argv[2], no adapter, no IPC per
 * notification. It connects to the phone when asked, checks each stream's order itself, and tells the bench
 * once per stream (`done`) and every PROGRESS_EVERY values for the sender's window (hci-notify-stream.ts):
 * one small message per 16 notifications where the kiosk's path carries each one.
 * IPC: hci-notify-stream.ts (`connect` → `subscribed`, `expect` → `armed`, `progress` … `done`, `stop`).
 */
import type { Characteristic, Peripheral } from '@stoprocent/noble';
import { createHciNoble, whenPoweredOn } from '../../src/qa/hci/hci-libraries.js';
import { BareRequest, OrderedSink, PROGRESS_EVERY, type BareReply } from './hci-notify-stream.js';

const tty = process.argv[2] ?? '';
const noble = createHciNoble({ tty });
const sink = new OrderedSink();
const send = (message: BareReply): void => void process.send?.(message);
let peripheral: Peripheral | undefined;
sink.onValue = (received) => {
  if (received % PROGRESS_EVERY === 0) send({ t: 'progress', received });
};

async function connect(service: string, characteristic: string): Promise<void> {
  await whenPoweredOn(noble, 20_000, 'bare noble');
  const found = await new Promise<Peripheral>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('bare noble: the phone was not found within 10 s')), 10_000);
    noble.once('discover', (p: Peripheral) => {
      clearTimeout(timer);
      resolve(p);
    });
    noble.startScanningAsync([service], false).catch(reject);
  });
  await noble.stopScanningAsync();
  // As NobleCentral and the phone's noble do: ask for the largest MTU (bleno grants 256).
  await (found as Peripheral & { connectAsync(o: { mtu: number }): Promise<void> }).connectAsync({ mtu: 517 });
  peripheral = found;
  const { characteristics } = await found.discoverSomeServicesAndCharacteristicsAsync([service], [characteristic]);
  const target: Characteristic | undefined = characteristics[0];
  if (!target) throw new Error('bare noble: the phone has no such characteristic');
  target.on('data', (data: Buffer) => sink.receive(data));
  await target.subscribeAsync();
  send({ t: 'subscribed', address: found.address });
}

process.on('message', (raw: unknown) => {
  const parsed = BareRequest.safeParse(raw);
  if (!parsed.success) {
    send({ t: 'error', message: `bad request: ${parsed.error.issues[0]?.message ?? ''}` });
    return;
  }
  const request = parsed.data;
  switch (request.t) {
    case 'connect':
      connect(request.service, request.characteristic).catch((e: unknown) =>
        send({ t: 'error', message: (e instanceof Error ? e.message : String(e)).slice(0, 2_000) }),
      );
      return;
    case 'expect':
      sink.start(request.count, () => send({ t: 'done', failures: sink.failures.splice(0) }));
      send({ t: 'armed' });
      return;
    case 'stop':
      void (peripheral?.disconnectAsync() ?? Promise.resolve()).finally(() => {
        noble.stop();
        process.disconnect();
      });
      return;
  }
});
// The bench going away closes the channel: never outlive it.
process.on('disconnect', () => process.exit(0));
