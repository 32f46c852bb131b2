/**
 * The phones of the HCI notify comparison (ble-bench-hci.ts), in a process of their own as a phone is a
 * device of its own: one bleno GATT server per receiver, each on the controller whose tty is in argv[2…]
 * (btvirt, BlueZ 5.66, gives every link of a controller the same handle, so a controller serves one link).
 * The kiosk's main process (the bench) then shares no event loop with the sender, and neither does the floor.
 * IPC: hci-notify-stream.ts (`serve` → `subscribed`, `stream` … `progress` from the bench, `stop`).
 */
import type { Bleno } from '../../src/devices/ble/bleno-types.js';
import { createHciBleno } from '../../src/qa/hci/hci-libraries.js';
import { HciPhoneRadio } from '../../src/qa/hci/hci-phone-radio.js';
import { SERVER_MODE } from '../support/radio-phone.js';
import { PhoneRequest, WINDOW, notifyValue, type PhoneReply } from './hci-notify-stream.js';

const send = (message: PhoneReply): void => void process.send?.(message);
const fail = (e: unknown): void => send({ t: 'error', message: (e instanceof Error ? e.message : String(e)).slice(0, 2_000) });

/** One phone: a GATT server with the mdoc server-mode characteristics, and how far its receiver got. */
class Phone {
  readonly radio: HciPhoneRadio;
  private handle: number | undefined;
  private received = 0;
  private waiter: { n: number; resolve: () => void } | undefined;

  constructor(
    bleno: Bleno,
    private readonly index: number,
  ) {
    this.radio = new HciPhoneRadio({ bleno });
  }

  async serve(service: string): Promise<void> {
    this.radio.peripheral.setServices(
      [
        {
          uuid: service,
          characteristics: [
            { uuid: SERVER_MODE.state, properties: ['notify', 'writeWithoutResponse'] },
            { uuid: SERVER_MODE.c2s, properties: ['writeWithoutResponse'] },
            { uuid: SERVER_MODE.s2c, properties: ['notify'] },
          ],
        },
      ],
      {
        onSubscribe: (r) => {
          if (r.characteristicUuid !== SERVER_MODE.s2c || this.handle !== undefined) return;
          this.handle = r.connection.handle;
          void this.radio.peripheral.stopAdvertising().then(() => send({ t: 'subscribed', index: this.index }));
        },
      },
    );
    await this.radio.peripheral.startAdvertising({ localName: 'phone', serviceUuids: [service] });
  }

  progress(received: number): void {
    this.received = received;
    if (this.waiter && received >= this.waiter.n) {
      this.waiter.resolve();
      this.waiter = undefined;
    }
  }

  /** `count` values back to back, never more than WINDOW ahead of what the receiver took. */
  async stream(service: string, count: number): Promise<void> {
    const handle = this.handle;
    if (handle === undefined) throw new Error(`phone ${this.index}: no receiver subscribed`);
    this.radio.trace.splice(0); // not needed here: keep it from growing across streams
    this.progress(0);
    for (let i = 0; i < count; i++) {
      if (i - this.received >= WINDOW) await this.until(i - WINDOW + 1);
      await this.radio.peripheral.notify(handle, service, SERVER_MODE.s2c, notifyValue(i));
    }
  }

  private until(n: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`phone ${this.index}: the receiver stopped at ${this.received}`)), 10_000);
      this.waiter = {
        n,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      };
    });
  }
}

const phones = process.argv.slice(2).map((tty, index) => new Phone(createHciBleno({ tty }), index));

process.on('message', (raw: unknown) => {
  const parsed = PhoneRequest.safeParse(raw);
  if (!parsed.success) {
    fail(`bad request: ${parsed.error.issues[0]?.message ?? ''}`);
    return;
  }
  const request = parsed.data;
  if (request.t === 'stop') {
    process.disconnect();
    return;
  }
  const phone = phones[request.index];
  if (!phone) {
    fail(`no phone ${request.index}`);
    return;
  }
  switch (request.t) {
    case 'serve':
      phone.serve(request.service).catch(fail);
      return;
    case 'stream':
      phone.stream(request.service, request.count).catch(fail);
      return;
    case 'progress':
      phone.progress(request.received);
      return;
  }
});
// bleno cannot be stopped safely (src/qa/hci/hci-rig.ts): the process ends with the bench's channel.
process.on('disconnect', () => process.exit(0));
