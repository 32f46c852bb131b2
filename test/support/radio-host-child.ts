/**
 * Child process for the radio-link test: "process A" — a virtual radio, the virtual phone on it and a
 * RadioLinkServer on a free loopback port. The phone shows a QR engagement at once.
 *
 * stdout, one JSON object per line:
 *   {"ready":true,"port":N,"qr":"mdoc:…","iaca":"<base64 DER>"}   once listening
 *   {"outcome":"shared"|…,"detail"?:…}                              when the presentation ends
 *   {"stopped":true}                                                after SIGTERM or stdin closed
 *
 *   node --import tsx test/support/radio-host-child.ts [android|iphone]
 *
 * android: the phone is a GATT server (peripheral server mode), for noble over the link; iphone: the
 * phone is a GATT client (central client mode), for bleno over the link (role "bleno").
 */
import { RadioLinkServer } from '../../src/qa/devices/radio-link/server.js';
import { VirtualRadio } from '../../src/qa/sim/radio/virtual-radio.js';
import { VirtualPhone } from '../../src/qa/sim/virtual-wallet/virtual-phone.js';

const profile = process.argv[2] === 'iphone' ? 'iphone' : 'android';
const out = (message: Record<string, unknown>): void => {
  process.stdout.write(`${JSON.stringify(message)}\n`);
};

const radio = new VirtualRadio();
const phone = await VirtualPhone.create({ profile, radio, name: 'child-phone' });
const server = await RadioLinkServer.start({ radio });
const qr = phone.presentQr();
void phone.outcome.then((outcome) => out({ outcome: outcome.kind, ...('reason' in outcome ? { reason: outcome.reason } : {}) }));
out({ ready: true, port: server.port, qr, iaca: Buffer.from(phone.credential.pki.iaca.der).toString('base64') });

let stopping = false;
async function stop(): Promise<void> {
  if (stopping) return;
  stopping = true;
  await server.stop();
  await phone.stop();
  radio.shutdown();
  out({ stopped: true });
  process.exit(0);
}
process.on('SIGTERM', () => void stop());
// The parent going away closes our stdin: never outlive it.
process.stdin.on('end', () => void stop());
process.stdin.resume();
