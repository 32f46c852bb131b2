/**
 * A stand-in for the `smartcard` addon (smartcard 3.x API) whose SCardDisconnect blocks its thread, as
 * pcsc-lite's client does while pcscd holds the reader (a `poll` with no timeout). One reader, a card on it,
 * transmits echo the command with 90 00. Loaded by test/unit/devices/pcsc/worker-binding.test.ts on the
 * test's own thread and inside the PC/SC worker (`addonModule`). Plain CommonJS: the worker requires it.
 */
'use strict';

const BLOCK_MS = Number(process.env.FAKE_SMARTCARD_DISCONNECT_BLOCK_MS ?? '600');
const READER = 'Blocking Reader 00 00';
const PRESENT = 0x0020;

function blockThread(ms) {
  // Atomics.wait on a buffer nobody notifies: the thread sleeps in the kernel, as in poll().
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

class Card {
  constructor() {
    this.protocol = 2;
    this.connected = true;
  }
  transmit(command) {
    return Promise.resolve(Buffer.concat([Buffer.from(command), Buffer.from([0x90, 0x00])]));
  }
  disconnect() {
    blockThread(BLOCK_MS);
    this.connected = false;
  }
}

class Reader {
  constructor() {
    this.name = READER;
    this.state = PRESENT;
  }
  connect() {
    return Promise.resolve(new Card());
  }
}

class Context {
  constructor() {
    this.cancelled = undefined;
  }
  listReaders() {
    return [new Reader()];
  }
  waitForChange(_readers, timeoutMs) {
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve([]), timeoutMs);
      this.cancelled = () => {
        clearTimeout(timer);
        resolve(null);
      };
    });
  }
  cancel() {
    if (this.cancelled) this.cancelled();
  }
  close() {}
}

module.exports = {
  Context,
  SCARD_SHARE_SHARED: 2,
  SCARD_SHARE_EXCLUSIVE: 1,
  SCARD_PROTOCOL_T0: 1,
  SCARD_PROTOCOL_T1: 2,
  SCARD_LEAVE_CARD: 0,
  READER,
};
