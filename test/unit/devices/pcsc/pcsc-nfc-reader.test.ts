import { afterEach, describe, expect, it, vi } from 'vitest';
import { PcscBindingUnavailableError, type BindingCallbackError } from '../../../../src/devices/pcsc/pcsc-binding.js';
import { PcscNfcReader, RECEIVE_BUFFER_BYTES, type PcscNfcReaderOptions } from '../../../../src/devices/pcsc/pcsc-nfc-reader.js';
import { NfcTransmitError, type Availability, type NfcCard } from '../../../../src/devices/ports.js';
import { availabilityWhen } from '../../../support/availability-wait.js';
import { echoCard, FakePcscService, FakeReader, scardError, type CardBehaviour } from '../../../support/fake-pcsclite.js';

const SELECT = Uint8Array.from([0x00, 0xa4, 0x04, 0x00, 0x07, 0xd2, 0x76, 0x00, 0x00, 0x85, 0x01, 0x01, 0x00]);
const opened: PcscNfcReader[] = [];
const restore: (() => void)[] = [];

function open(service: FakePcscService, options: PcscNfcReaderOptions = {}): PcscNfcReader {
  const reader = new PcscNfcReader({
    binding: service.factory,
    serviceRetryMinMs: 5,
    serviceRetryMaxMs: 40,
    disconnectTimeoutMs: 200,
    connectTimeoutMs: 500,
    ...options,
  });
  opened.push(reader);
  return reader;
}

afterEach(async () => {
  for (const undo of restore.splice(0)) undo();
  await Promise.all(opened.splice(0).map((r) => r.close()));
});

const signal = (): AbortSignal => AbortSignal.timeout(3_000);
const tx = (ms = 1_000): { timeoutMs: number; signal: AbortSignal } => ({ timeoutMs: ms, signal: AbortSignal.timeout(5_000) });

const until = (reader: PcscNfcReader, test: (a: Availability) => boolean, ms = 2_000): Promise<Availability> =>
  availabilityWhen(reader, test, ms);

const usable = (reader: PcscNfcReader): Promise<Availability> => until(reader, (a) => a.usable);

async function transmitError(card: NfcCard, command = SELECT, ms = 1_000): Promise<NfcTransmitError> {
  const error = await card.transmit(command, tx(ms)).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(NfcTransmitError);
  return error as NfcTransmitError;
}

const settle = (ms = 20): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Real event-loop turns (the fake binding answers in setImmediate callbacks). */
async function turns(n = 3): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/** Waits, turn by turn, until `condition` holds; fails after `max` turns. */
async function turnsUntil(condition: () => boolean, what: string, max = 1_000): Promise<void> {
  for (let i = 0; i < max && !condition(); i++) await turns(1);
  if (!condition()) throw new Error(`not within ${max} event-loop turns: ${what}`);
}

describe('PC/SC context lifecycle', () => {
  it('reports the service as down, retries with backoff, and connects once the service is up', async () => {
    const service = new FakePcscService();
    service.running = false;
    const reader = open(service);
    expect(reader.availability()).toMatchObject({ usable: false, reason: 'service_down' });
    expect(reader.availability().detail).toContain('NoService');
    await settle(80);
    const attempts = service.establishCalls;
    expect(attempts).toBeGreaterThanOrEqual(3); // 5, 10, 20, 40 ms …
    expect(attempts).toBeLessThan(12); // … but no busy loop
    service.start();
    await usable(reader);
    expect(reader.readerName).toBe('Fake Reader PICC 0');
  });

  it('re-establishes the context after the service is lost, and a waiting nextCard gets the next card', async () => {
    const service = new FakePcscService();
    const reader = open(service);
    await usable(reader);
    const pending = reader.nextCard(signal());
    service.kill();
    await until(reader, (a) => a.reason === 'service_down');
    expect(reader.availability().detail).toContain('CommError');
    service.start();
    await usable(reader);
    service.slot().insert(echoCard);
    const card = await pending;
    expect([...(await card.transmit(SELECT, tx()))]).toEqual([0x00, 0x90, 0x00]);
  });

  it('says the binding is not installed when it cannot be loaded, without retrying', async () => {
    let calls = 0;
    const reader = open(new FakePcscService(), {
      binding: () => {
        calls++;
        throw new PcscBindingUnavailableError('no addon');
      },
    });
    await settle(40);
    expect(reader.availability()).toMatchObject({ usable: false, reason: 'not_installed' });
    expect(calls).toBe(1);
  });

  it('close() rejects waiting calls, closes the binding, swallows its late "Command cancelled" and survives a failing close', async () => {
    const service = new FakePcscService();
    const reader = open(service);
    await usable(reader);
    const pending = expect(reader.nextCard(signal())).rejects.toThrow(/closed/);
    service.closeThrows = true;
    await reader.close();
    await pending;
    await settle(20); // the binding's late error events must find listeners
    expect(reader.availability()).toMatchObject({ usable: false, reason: 'closed' });
    await expect(reader.nextCard(signal())).rejects.toThrow(/closed/);
  });
});

describe('reader selection', () => {
  it('ignores SAM slots and prefers the contactless interface', async () => {
    const service = new FakePcscService([
      'ACS ACR1252 1S CL Reader SAM 0',
      'Generic Smart Card Reader 00',
      'ACS ACR1252 1S CL Reader PICC 0',
    ]);
    const reader = open(service);
    await usable(reader);
    await settle();
    expect(reader.readerName).toBe('ACS ACR1252 1S CL Reader PICC 0');
  });

  it('uses only the configured reader; a card on another reader is not engaged', async () => {
    const service = new FakePcscService(['Virtual PCD 00 00', 'Virtual PCD 00 01']);
    const reader = open(service, { reader: 'Virtual PCD 00 01' });
    await usable(reader);
    expect(reader.readerName).toBe('Virtual PCD 00 01');
    service.slot('Virtual PCD 00 00').insert(echoCard);
    const next = reader.nextCard(signal());
    await settle(30);
    service.slot('Virtual PCD 00 01').insert((c) => Buffer.from([c[1] ?? 0, 0x90, 0x00]));
    const card = await next;
    expect([...(await card.transmit(SELECT, tx()))]).toEqual([0xa4, 0x90, 0x00]);
    expect(service.slot('Virtual PCD 00 00').connects).toHaveLength(0);
  });

  it('matches a /regex/ and follows readers being plugged and unplugged', async () => {
    const service = new FakePcscService([]);
    const reader = open(service, { reader: '/acr12\\d2/i' });
    await until(reader, (a) => a.reason === 'no_reader');
    expect(reader.availability().detail).toContain('/acr12\\d2/i');
    service.plug('Other Reader');
    await settle();
    expect(reader.availability().usable).toBe(false);
    service.plug('ACS ACR1252 PICC');
    await usable(reader);
    service.unplug('ACS ACR1252 PICC');
    await until(reader, (a) => a.reason === 'no_reader');
    expect(reader.readerName).toBeUndefined();
  });

  it('rejects an invalid pattern at construction', () => {
    expect(() => open(new FakePcscService(), { reader: '/([/' })).toThrow(/invalid reader pattern/);
  });
});

describe('presence and handles', () => {
  it('connects shared with T=0|T=1 by default and transmits with a 65,538-byte receive buffer', async () => {
    const service = new FakePcscService();
    const reader = open(service);
    await usable(reader);
    service.slot().insert(echoCard);
    const card = await reader.nextCard(signal());
    await card.transmit(SELECT, tx());
    expect(service.slot().connects).toEqual([{ shareMode: 2, protocol: 3 }]);
    expect(service.slot().transmits).toEqual([{ length: SELECT.length, responseLength: RECEIVE_BUFFER_BYTES, protocol: 2 }]);
  });

  it('passes a configured share mode and protocol', async () => {
    const service = new FakePcscService();
    const reader = open(service, { shareMode: 'exclusive', protocol: 'T0' });
    await usable(reader);
    service.slot().insert(echoCard);
    const card = await reader.nextCard(signal());
    await card.transmit(SELECT, tx());
    expect(service.slot().connects).toEqual([{ shareMode: 1, protocol: 1 }]);
    expect(service.slot().transmits[0]?.protocol).toBe(1);
  });

  it('offers a card already lying on the reader, once; the same phone again only after removal', async () => {
    const service = new FakePcscService();
    service.slot().insert(echoCard);
    const reader = open(service);
    const first = await reader.nextCard(signal());
    expect(first.present).toBe(true);
    const second = reader.nextCard(signal());
    let got = false;
    void second.then(() => (got = true));
    await settle(40);
    expect(got).toBe(false);
    service.slot().remove();
    await first.waitForRemoval(signal());
    expect(first.present).toBe(false);
    service.slot().insert(echoCard);
    await second;
    expect(service.slot().connects).toHaveLength(2);
  });

  it('ignoreCurrentCard() keeps a phone put down meanwhile from being engaged', async () => {
    const service = new FakePcscService();
    const reader = open(service);
    await usable(reader);
    service.slot().insert(echoCard);
    await settle(20);
    reader.ignoreCurrentCard();
    const next = reader.nextCard(signal());
    let got = false;
    void next.then(() => (got = true));
    await settle(30);
    expect(got).toBe(false);
    service.slot().remove();
    service.slot().insert(echoCard);
    await next;
  });

  it('drops the handle on EMPTY, so the next presence connects afresh (no stale handle)', async () => {
    const service = new FakePcscService();
    const reader = open(service);
    await usable(reader);
    service.slot().insert(echoCard);
    await reader.nextCard(signal());
    service.slot().remove();
    await settle(30);
    expect(service.slot().disconnects).toBe(1);
    service.slot().insert(echoCard);
    const card = await reader.nextCard(signal());
    expect(await card.transmit(SELECT, tx())).toHaveLength(3);
  });

  it('on EMPTY the handle is dropped at once, before the next card is laid down: the next presence connects to a reader holding no handle (binding call trail)', async () => {
    const service = new FakePcscService();
    const reader = open(service);
    await usable(reader);
    const trail: string[] = [];
    traceHandles(trail);
    service.slot().insert(echoCard);
    const card = await reader.nextCard(signal());
    expect(await card.transmit(SELECT, tx())).toHaveLength(3); // used, and never released by its holder
    trail.push('phone lifted');
    service.slot().remove();
    await card.waitForRemoval(signal());
    await turns(); // everything the EMPTY report set off has run
    trail.push('phone laid down');
    service.slot().insert(echoCard);
    const next = await reader.nextCard(signal());
    expect(await next.transmit(SELECT, tx())).toHaveLength(3);
    // A handle kept until the next connect would show 'disconnect' after 'phone laid down'.
    expect(trail).toEqual(['connect (no handle held)', 'phone lifted', 'disconnect', 'phone laid down', 'connect (no handle held)']);
  });

  it('sees a removal and re-insertion that only the insertion counter shows', async () => {
    const service = new FakePcscService();
    const reader = open(service);
    await usable(reader);
    service.slot().insert(echoCard);
    const first = await reader.nextCard(signal());
    service.slot().swapUnseen(echoCard);
    await first.waitForRemoval(signal());
    const second = await reader.nextCard(signal());
    expect(await second.transmit(SELECT, tx())).toHaveLength(3);
  });

  it('a released old card does not drop the handle of a newer one', async () => {
    const service = new FakePcscService();
    const reader = open(service);
    await usable(reader);
    service.slot().insert(echoCard);
    const old = await reader.nextCard(signal());
    service.slot().remove();
    await old.waitForRemoval(signal());
    service.slot().insert(echoCard);
    const fresh = await reader.nextCard(signal());
    const disconnects = service.slot().disconnects;
    await old.release();
    await old.release();
    expect(service.slot().disconnects).toBe(disconnects);
    expect(await fresh.transmit(SELECT, tx())).toHaveLength(3);
  });

  it('a card that cannot be connected is skipped without a retry loop', async () => {
    const service = new FakePcscService();
    const reader = open(service);
    await usable(reader);
    service.slot().connectError = scardError('SCardConnect', 'Card is unresponsive.', 0x80100066);
    service.slot().insert(echoCard);
    const next = reader.nextCard(signal());
    await settle(40);
    expect(service.slot().connects).toHaveLength(1);
    service.slot().remove();
    service.slot().insert(echoCard);
    await next;
    expect(service.slot().connects).toHaveLength(2);
  });

  it('an aborted nextCard rejects and leaves no waiter behind', async () => {
    const service = new FakePcscService();
    const reader = open(service);
    await usable(reader);
    const controller = new AbortController();
    const pending = reader.nextCard(controller.signal);
    controller.abort();
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
    service.slot().insert(echoCard);
    const card = await reader.nextCard(signal()); // the presence was not given to the aborted call
    expect(card.present).toBe(true);
  });
});

describe('transmit failures', () => {
  async function cardWith(
    behaviour: CardBehaviour,
    tweak?: (service: FakePcscService) => void,
  ): Promise<{ service: FakePcscService; card: NfcCard; reader: PcscNfcReader }> {
    const service = new FakePcscService();
    tweak?.(service);
    const reader = open(service);
    await usable(reader);
    service.slot().insert(behaviour);
    return { service, card: await reader.nextCard(signal()), reader };
  }

  it.each([
    [0x80100069, 'RemovedCard'],
    [0x80100016, 'NotTransacted'],
    [0x80100013, 'CommError'],
    [0x80100068, 'ResetCard'],
    [0x80100008, 'InsufficientBuffer'],
    [0x801000ff, 'UnknownError'],
  ])('an error with code %s is reported as %s', async (code, variant) => {
    const { card } = await cardWith(() => scardError('SCardTransmit', 'localised text that is never matched', code));
    expect((await transmitError(card)).reason).toBe(variant);
  });

  it('after a failed exchange the handle is dropped; a re-tap gets a fresh one', async () => {
    let fail = true;
    const { service, card, reader } = await cardWith((c) =>
      fail ? scardError('SCardTransmit', 'Transaction failed.', 0x80100016) : echoCard(c),
    );
    expect((await transmitError(card)).reason).toBe('NotTransacted');
    await settle(20);
    expect(service.slot().disconnects).toBe(1);
    expect((await transmitError(card)).reason).toBe('InvalidHandle');
    fail = false;
    const next = reader.nextCard(signal());
    service.slot().remove();
    await card.waitForRemoval(signal());
    service.slot().insert(echoCard);
    const fresh = await next;
    expect(await fresh.transmit(SELECT, tx())).toHaveLength(3);
    expect(service.slot().connects).toHaveLength(2);
  });

  it('a response without a status word is UnresponsiveCard', async () => {
    const { card } = await cardWith(() => Buffer.from([0x90]));
    expect((await transmitError(card)).reason).toBe('UnresponsiveCard');
  });

  it.each([
    ['an empty buffer (vpcd)', true, 'UnresponsiveCard'],
    ['RemovedCard (a reader driver)', false, 'RemovedCard'],
  ])('a card leaving mid-APDU, answered with %s, fails the exchange at once as %s', async (_what, empty, variant) => {
    const { service, card } = await cardWith(
      () => 'mute',
      (s) => (s.slot().emptyOnRemoval = empty),
    );
    let settled = false;
    const pending = transmitError(card, SELECT, 5_000).finally(() => (settled = true));
    await turnsUntil(() => service.slot().pendingTransmits.size === 1, 'the transmit to reach the card');
    service.slot().remove();
    // At once: settled within the event-loop turns of the removal itself, no timer (the 5 s timeout) involved.
    await turns(2);
    expect(settled).toBe(true);
    expect((await pending).reason).toBe(variant);
    await card.waitForRemoval(signal());
  });

  it('a mute card times out as Timeout at the timeoutMs it was given (fake clock), and the next exchange on that handle does not hang either', async () => {
    const { service, card } = await cardWith(() => 'mute');
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    restore.push(() => vi.useRealTimers());
    let failed: NfcTransmitError | undefined;
    const pending = transmitError(card, SELECT, 60).then((e) => (failed = e));
    await turnsUntil(() => service.slot().pendingTransmits.size === 1, 'the transmit to reach the card');
    await vi.advanceTimersByTimeAsync(50);
    expect(failed).toBeUndefined(); // not before its time
    await vi.advanceTimersByTimeAsync(10);
    expect(failed).toMatchObject({ reason: 'Timeout', message: 'the card did not answer within 60 ms' });
    await pending;
    let second: NfcTransmitError | undefined;
    void transmitError(card, SELECT, 60).then((e) => (second = e));
    await turns(2); // no timer runs: the lost handle fails it at once
    expect(second?.reason).toBe('InvalidHandle');
    await card.release();
  });

  it('the binding throwing synchronously (a stale handle) is UnknownError', async () => {
    const { service, card } = await cardWith(echoCard);
    service.slot().transmitThrows = new TypeError('Third argument must be an integer');
    expect((await transmitError(card)).reason).toBe('UnknownError');
  });

  it('the binding\'s own "not connected" error (no SCARD code) is InvalidHandle while the card is present', async () => {
    const { service, card } = await cardWith(echoCard);
    for (const r of service.slot().readers) r.connected = false;
    expect((await transmitError(card)).reason).toBe('InvalidHandle');
  });

  it('a reader unplugged during an exchange fails it at once as ReaderUnavailable', async () => {
    const { service, card } = await cardWith(() => 'mute');
    const pending = transmitError(card, SELECT, 5_000);
    await settle(20);
    service.unplug('Fake Reader PICC 0');
    expect((await pending).reason).toBe('ReaderUnavailable');
    await card.waitForRemoval(signal());
  });

  it('the service lost during an exchange fails it at once as CommError', async () => {
    const { service, card } = await cardWith(() => 'mute');
    const pending = transmitError(card, SELECT, 5_000);
    await settle(20);
    service.kill();
    expect((await pending).reason).toBe('CommError');
  });

  it('an aborted transmit rejects with an abort error', async () => {
    const { card } = await cardWith(() => 'mute');
    const controller = new AbortController();
    const pending = card.transmit(SELECT, { timeoutMs: 5_000, signal: controller.signal });
    controller.abort();
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('leaves no timer running once idle or closed', async () => {
    const timers = (): number => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const before = timers();
    const { card, reader } = await cardWith(echoCard);
    for (let i = 0; i < 20; i++) await card.transmit(SELECT, tx());
    await card.release();
    await reader.close();
    await settle(10);
    expect(timers()).toBeLessThanOrEqual(before);
  });
});

/** Records, in `trail`, each SCardConnect (with whether the binding's reader still held a handle) and each SCardDisconnect. */
function traceHandles(trail: string[]): void {
  const proto = FakeReader.prototype;
  type Connect = (this: FakeReader, options: { share_mode: number; protocol: number }, callback: ConnectCb) => void;
  type Disconnect = (this: FakeReader, disposition: number, callback: (error: BindingCallbackError) => void) => void;
  const connect = Object.getOwnPropertyDescriptor(proto, 'connect')?.value as Connect;
  const disconnect = Object.getOwnPropertyDescriptor(proto, 'disconnect')?.value as Disconnect;
  proto.connect = function (this: FakeReader, options, callback) {
    trail.push(this.connected ? 'connect (stale handle held)' : 'connect (no handle held)');
    connect.call(this, options, callback);
  };
  proto.disconnect = function (this: FakeReader, disposition, callback) {
    trail.push('disconnect');
    disconnect.call(this, disposition, callback);
  };
  restore.push(() => {
    proto.connect = connect;
    proto.disconnect = disconnect;
  });
}

type ConnectCb = (error: BindingCallbackError, protocol?: number) => void;
/** Replaces FakeReader.prototype.connect for this test; `hook` decides what to do with each call. */
function interceptConnect(
  hook: (reader: FakeReader, options: { share_mode: number; protocol: number }, callback: ConnectCb, original: () => void) => void,
): void {
  const proto = FakeReader.prototype;
  const original = Object.getOwnPropertyDescriptor(proto, 'connect')?.value as (
    this: FakeReader,
    options: { share_mode: number; protocol: number },
    callback: ConnectCb,
  ) => void;
  proto.connect = function (this: FakeReader, options, callback) {
    hook(this, options, callback, () => {
      original.call(this, options, callback);
    });
  };
  restore.push(() => (proto.connect = original));
}

describe('races (nextCard)', () => {
  it('B1: two concurrent nextCard calls never get the same presence (a card already on the reader)', async () => {
    const service = new FakePcscService();
    const reader = open(service);
    await usable(reader);
    service.slot().insert(echoCard);
    await settle(20);
    const a = reader.nextCard(signal());
    const b = reader.nextCard(signal());
    let bGot: NfcCard | undefined;
    void b.then(
      (c) => (bGot = c),
      () => undefined,
    );
    const first = await a;
    await settle(60);
    // Port contract: "Each presence is handed out once". The second call must still be waiting.
    expect(bGot === undefined, 'second nextCard got a card for the same presence').toBe(true);
    expect(service.slot().connects).toHaveLength(1);
    // …and the first handle must still work.
    expect(await first.transmit(SELECT, tx())).toHaveLength(3);
  });

  it('B2: nextCard aborted while the card is being connected rejects before SCardConnect returns (and hands out no card)', async () => {
    const service = new FakePcscService();
    const timeline: string[] = [];
    let returned: Promise<void> | undefined;
    // A slow SCardConnect: it returns 300 ms later, and the timeline says when.
    interceptConnect((_r, _o, _cb, original) => {
      returned = new Promise((resolve) =>
        setTimeout(() => {
          timeline.push('SCardConnect returned');
          original();
          resolve();
        }, 300),
      );
    });
    const reader = open(service, { connectTimeoutMs: 2_000 });
    await usable(reader);
    service.slot().insert(echoCard);
    await settle(20);
    const controller = new AbortController();
    const pending = reader.nextCard(controller.signal);
    await settle(20); // the presence was taken, SCardConnect is under way
    controller.abort();
    const outcome = await pending.then(
      (card) => ({ card }),
      (error: unknown) => ({ error }),
    );
    timeline.push('nextCard settled');
    expect(outcome).toHaveProperty('error');
    expect((outcome as { error: Error }).error.name).toBe('AbortError');
    await returned;
    // "Promptly" as an order of events, not a number of milliseconds.
    expect(timeline).toEqual(['nextCard settled', 'SCardConnect returned']);
  });

  it('B3: a handle that arrives late from a timed-out SCardConnect does not drop the handle of the next card', async () => {
    const service = new FakePcscService();
    let late: (() => void) | undefined;
    let calls = 0;
    interceptConnect((reader, _o, callback, original) => {
      if (++calls === 1) {
        // The first SCardConnect hangs past the adapter's bound, then succeeds.
        late = () => {
          reader.connected = true;
          callback(undefined, 2);
        };
        return;
      }
      original();
    });
    const reader = open(service, { connectTimeoutMs: 100 });
    await usable(reader);
    const next = reader.nextCard(signal());
    service.slot().insert(echoCard);
    await settle(150); // the connect timed out; the presence is spent
    service.slot().remove(); // the customer lifts the phone …
    await settle(20);
    service.slot().insert(echoCard); // … and taps again
    const card = await next;
    expect(await card.transmit(SELECT, tx())).toHaveLength(3);
    late?.(); // the first SCardConnect finally returns
    await settle(20);
    // The new card's exchange must not be broken by the adapter cleaning up the late handle.
    expect(await card.transmit(SELECT, tx())).toHaveLength(3);
  });

  it('B4: a phone left on the reader after its verification is not engaged again after a PC/SC service restart', async () => {
    const service = new FakePcscService();
    const reader = open(service);
    await usable(reader);
    service.slot().insert(echoCard);
    const first = await reader.nextCard(signal());
    await first.release();
    service.kill();
    await until(reader, (a) => a.reason === 'service_down');
    service.start();
    await usable(reader);
    const next = reader.nextCard(signal());
    let got = false;
    void next.then(
      () => (got = true),
      () => undefined,
    );
    await settle(80);
    // The phone never left the reader: ports.ts says it "is not offered again until it has been removed".
    expect(got).toBe(false);
    expect(service.slot().connects).toHaveLength(1);
  });
});

describe('races (transmit)', () => {
  it('an exchange on an idle handle reaches the binding in the same turn; one asked for while another runs waits its turn', async () => {
    const service = new FakePcscService();
    const reader = open(service);
    await usable(reader);
    let answering = true;
    const order: number[] = [];
    service.slot().insert((command) => {
      order.push(command[1] ?? -1);
      return answering ? echoCard(command) : 'mute';
    });
    const card = await reader.nextCard(signal());
    const sent = service.slot().transmits.length;
    const first = card.transmit(Uint8Array.of(0x00, 0x01, 0, 0), tx());
    // No promise hop before the card (issue 34): the native call is made before transmit() returns.
    expect(service.slot().transmits.length).toBe(sent + 1);
    // Asked for while the first runs: queued, not sent on top of it.
    const second = card.transmit(Uint8Array.of(0x00, 0x02, 0, 0), tx());
    expect(service.slot().transmits.length).toBe(sent + 1);
    expect(await first).toHaveLength(3);
    expect(await second).toHaveLength(3);
    expect(order).toEqual([0x01, 0x02]);
    // Idle again once answered: the next goes out at once again.
    await turns();
    answering = false;
    void card.transmit(Uint8Array.of(0x00, 0x03, 0, 0), tx(50)).catch(() => undefined);
    expect(service.slot().transmits.length).toBe(sent + 3);
  });

  it('B5: an exchange queued behind an aborted one is not sent on a handle that was lost meanwhile (stale handle after re-tap)', async () => {
    const service = new FakePcscService();
    let mute = true;
    const reader = open(service);
    await usable(reader);
    service.slot().insert((c) => (mute ? 'mute' : echoCard(c)));
    const old = await reader.nextCard(signal());
    // Exchange 1 is aborted but its native call keeps running (mute card).
    const c1 = new AbortController();
    const first = old.transmit(SELECT, { timeoutMs: 5_000, signal: c1.signal });
    await settle(10);
    c1.abort();
    await expect(first).rejects.toMatchObject({ name: 'AbortError' });
    // Exchange 2 (another signal) waits for the native call to return.
    const second = old.transmit(Uint8Array.of(0x42, 0, 0, 0), tx(3_000)).then(
      (data) => ({ data }),
      (error: unknown) => ({ error }),
    );
    // The native call of exchange 1 is still blocked while the card leaves and a new card is tapped.
    const pendingNative = [...service.slot().pendingTransmits];
    service.slot().pendingTransmits.clear();
    service.slot().remove();
    await old.waitForRemoval(signal());
    mute = false;
    service.slot().insert(echoCard);
    // The new card's connect waits for the reader's stuck native call; meanwhile exchange 1 finally returns.
    const freshPending = reader.nextCard(signal());
    await settle(20);
    const transmitsBefore = service.slot().transmits.length;
    for (const done of pendingNative) done(undefined, Buffer.alloc(0));
    const fresh = await freshPending;
    expect(fresh.present).toBe(true);
    const outcome = await second;
    // The old card is gone: exchange 2 must fail, and must not reach the new card.
    expect(outcome).toHaveProperty('error');
    expect(service.slot().transmits.length).toBe(transmitsBefore);
    expect(await fresh.transmit(SELECT, tx())).toHaveLength(3);
  });
});
