/**
 * The production radio process: noble and bleno on this machine's Bluetooth stack (`loadPlatformBle`),
 * served to the kiosk over the channel it was started with (Node `fork` or Electron `utilityProcess`).
 * Bundled as dist/app/radio.js for the app (tools/build/app.ts). Over btvirt the same entry runs with
 * `BLUETOOTH_HCI_SOCKET_UART_PORT` in its environment (docs/emulated-radio.md).
 */
import { loadPlatformBle } from '../platform-stack.js';
import { channelOfThisProcess, serveRadio } from './child-server.js';

const channel = channelOfThisProcess();
serveRadio(channel, (init, log) =>
  loadPlatformBle({ central: init.central, peripheral: init.peripheral, log, ...(init.usbDongle ? { usbDongle: init.usbDongle } : {}) }),
);
// The kiosk going away closes the channel: never outlive it (a utility process is ended by Electron).
process.on('disconnect', () => process.exit(0));
