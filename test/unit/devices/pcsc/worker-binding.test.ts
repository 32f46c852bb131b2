/**
 * The PC/SC binding on its own thread (`worker-binding.ts`): a synchronous SCardDisconnect that waits on pcscd
 * stops only that thread. Against `blocking-smartcard-addon.cjs`, whose disconnect blocks its thread as
 * pcsc-lite's client does while pcscd holds the reader (the soak found a kiosk stopped there for good, with
 * vpcd waiting for a virtual card that lived on the stopped thread).
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { BindingContext, BindingFactory, BindingReader } from '../../../../src/devices/pcsc/pcsc-binding.js';
import { PcscBindingUnavailableError } from '../../../../src/devices/pcsc/pcsc-binding.js';
import { PcscNfcReader } from '../../../../src/devices/pcsc/pcsc-nfc-reader.js';
import { smartcardBindingFactory, type SmartcardAddon } from '../../../../src/devices/pcsc/smartcard-binding.js';
import { workerBindingFactory } from '../../../../src/devices/pcsc/worker-binding.js';

const ADDON = path.resolve('test/support/blocking-smartcard-addon.cjs');
const requireHere = createRequire(import.meta.url);

const disposers: (() => unknown)[] = [];
afterEach(async () => {
  for (const dispose of disposers.splice(0)) await dispose();
});

async function firstReader(factory: BindingFactory): Promise<{ context: BindingContext; reader: BindingReader }> {
  const context = await factory();
  disposers.push(() => context.close());
  const reader = await new Promise<BindingReader>((resolve, reject) => {
    context.on('reader', resolve);
    context.on('error', reject);
  });
  return { context, reader };
}

function connect(reader: BindingReader): Promise<void> {
  return new Promise((resolve, reject) =>
    reader.connect({ share_mode: reader.SCARD_SHARE_SHARED, protocol: reader.SCARD_PROTOCOL_T1 }, (e) => (e ? reject(e) : resolve())),
  );
}

/** Disconnects and counts how often a 5 ms interval ran on this thread while the disconnect was pending. */
async function ticksDuringDisconnect(reader: BindingReader): Promise<number> {
  let ticks = 0;
  const interval = setInterval(() => ticks++, 5);
  try {
    await new Promise<void>((resolve, reject) => reader.disconnect(reader.SCARD_LEAVE_CARD, (e) => (e ? reject(e) : resolve())));
    return ticks;
  } finally {
    clearInterval(interval);
  }
}

describe('the smartcard addon on a worker thread', () => {
  it('a disconnect that blocks in the addon leaves the kiosk thread running (on the kiosk thread it stops it)', async () => {
    const onThisThread = await firstReader(smartcardBindingFactory(requireHere(ADDON) as SmartcardAddon, { waitMs: 50 }));
    await connect(onThisThread.reader);
    const blockedTicks = await ticksDuringDisconnect(onThisThread.reader);

    const factory = workerBindingFactory({ addonModule: ADDON, waitMs: 50 });
    disposers.push(() => factory.dispose());
    const onWorker = await firstReader(factory);
    expect(onWorker.reader.name).toBe('Blocking Reader 00 00');
    await connect(onWorker.reader);
    expect(onWorker.reader.connected).toBe(true);
    const freeTicks = await ticksDuringDisconnect(onWorker.reader);
    expect(onWorker.reader.connected).toBe(false);

    // The same 600 ms block: at most the one overdue tick on the blocked thread, dozens on the free one.
    expect(blockedTicks).toBeLessThanOrEqual(1);
    expect(freeTicks).toBeGreaterThan(20);
  });

  it('carries APDUs both ways and status words with their reader', async () => {
    const factory = workerBindingFactory({ addonModule: ADDON, waitMs: 50 });
    disposers.push(() => factory.dispose());
    const { reader } = await firstReader(factory);
    const status = await new Promise<{ state: number }>((resolve) => reader.on('status', resolve));
    expect(status.state & 0x20).toBe(0x20);
    await connect(reader);
    const response = await new Promise<Buffer>((resolve, reject) =>
      reader.transmit(Buffer.from([0x00, 0xa4, 0x04, 0x00]), 258, reader.SCARD_PROTOCOL_T1, (e, r) =>
        e || !r ? reject(e ?? new Error('no response')) : resolve(r),
      ),
    );
    expect([...response]).toEqual([0x00, 0xa4, 0x04, 0x00, 0x90, 0x00]);
  });

  it('a response longer than any R-APDU comes back as an error, and the thread carries on', async () => {
    const factory = workerBindingFactory({ addonModule: ADDON, waitMs: 50 });
    disposers.push(() => factory.dispose());
    const { reader } = await firstReader(factory);
    await connect(reader);
    const transmit = (command: Buffer): Promise<Buffer> =>
      new Promise((resolve, reject) =>
        reader.transmit(command, 70_000, reader.SCARD_PROTOCOL_T1, (e, r) =>
          e || !r ? reject(e ?? new Error('no response')) : resolve(r),
        ),
      );
    // The stand-in echoes the command and appends 90 00: 70,002 bytes, above the 70,000 a message may carry.
    await expect(transmit(Buffer.alloc(70_000, 0x11))).rejects.toThrow(/70002 bytes is too long/);
    expect([...(await transmit(Buffer.from([0x00, 0xb0, 0x00, 0x00])))]).toEqual([0x00, 0xb0, 0x00, 0x00, 0x90, 0x00]);
  });

  it('an addon that cannot be loaded in the worker is "not installed", as on the kiosk thread', async () => {
    const factory = workerBindingFactory({ addonModule: path.resolve('test/support/no-such-addon.cjs') });
    disposers.push(() => factory.dispose());
    await expect(factory()).rejects.toBeInstanceOf(PcscBindingUnavailableError);
    const reader = new PcscNfcReader({ binding: workerBindingFactory({ addonModule: path.resolve('test/support/no-such-addon.cjs') }) });
    disposers.push(() => reader.close());
    await expect.poll(() => reader.availability().reason).toBe('not_installed');
  });

  it('the adapter on the worker finds the card, and its close ends the thread', async () => {
    const factory = workerBindingFactory({ addonModule: ADDON, waitMs: 50 });
    const reader = new PcscNfcReader({ binding: factory });
    await expect.poll(() => reader.availability().usable).toBe(true);
    const card = await reader.nextCard(AbortSignal.timeout(5_000));
    const answer = await card.transmit(Uint8Array.of(0x00, 0xb0, 0x00, 0x00), { timeoutMs: 2_000, signal: AbortSignal.timeout(5_000) });
    expect([...answer]).toEqual([0x00, 0xb0, 0x00, 0x00, 0x90, 0x00]);
    await reader.close();
    expect(reader.availability().reason).toBe('closed');
    // After close the factory refuses new contexts, and the contexts it made are released.
    await expect(factory()).rejects.toThrow(/closed/);
  });
});
