/** Child process: lays a mute virtual card on a vpcd reader, lifts it after HOLD_MS. */
import { VpcdCard } from '../../src/qa/sim/vpcd/vpcd-card.js';

const [host = '127.0.0.1', port = '0', hold = '4000'] = process.argv.slice(2);
const card = new VpcdCard({ host, port: Number(port), minAwayMs: 0 });
card.setMute(true);
await card.insert({ fieldOn: () => undefined, fieldOff: () => undefined, processApdu: () => Uint8Array.of(0x90, 0x00) });
process.stdout.write('inserted\n');
setTimeout(() => {
  void card.remove().then(() => {
    process.stdout.write('removed\n');
    process.exit(0);
  });
}, Number(hold));
