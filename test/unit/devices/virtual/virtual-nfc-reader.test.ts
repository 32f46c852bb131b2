/**
 * The virtual NFC reader port: the NfcReader contract (a presence handed out once, a fresh handle per
 * presence, ignoreCurrentCard, waitForRemoval, transmit asynchronous with timeout/abort/status-word rules)
 * and the virtual phone on it (field drop → RemovedCard / NotTransacted, re-tap, handover completes).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { NfcTransmitError, type NfcCard } from '../../../../src/devices/ports.js';
import { VirtualNfcReader } from '../../../../src/qa/devices/virtual-nfc-reader.js';
import { AID_NDEF_APPLICATION, encodeCommandApdu, readBinary, selectAid } from '../../../../src/qa/sim/iso/apdu.js';
import { NfcHandoverDriver } from '../../../../src/qa/sim/mock-backend/reader/index.js';
import { VirtualRadio } from '../../../../src/qa/sim/radio/virtual-radio.js';
import { VirtualPhone, type VirtualNfcTag } from '../../../../src/qa/sim/virtual-wallet/index.js';

const SELECT = encodeCommandApdu(selectAid(AID_NDEF_APPLICATION));
const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString('hex');
const signal = (): AbortSignal => new AbortController().signal;
const opts = { timeoutMs: 1_000, signal: signal() };

/** A tag that records what it got and answers with a fixed response. */
class ScriptedTag implements VirtualNfcTag {
  readonly commands: string[] = [];
  readonly fields: string[] = [];
  constructor(private readonly answer: (command: Uint8Array) => Uint8Array = () => Uint8Array.of(0x90, 0x00)) {}
  processApdu(command: Uint8Array): Uint8Array {
    this.commands.push(hex(command));
    return this.answer(command);
  }
  fieldOn(): void {
    this.fields.push('on');
  }
  fieldOff(): void {
    this.fields.push('off');
  }
}

const radio = new VirtualRadio();
const phones: VirtualPhone[] = [];
afterEach(async () => {
  for (const phone of phones.splice(0)) await phone.stop();
});

describe('presences and handles', () => {
  it('a tap is handed out once; a new tap gives a fresh handle; the tag sees the field', async () => {
    const reader = new VirtualNfcReader();
    const tag = new ScriptedTag();
    const waiting = reader.nextCard(signal());
    reader.tap(tag);
    const first = await waiting;
    expect(first.present).toBe(true);
    expect(tag.fields).toEqual(['on']);
    // Still lying there: not offered again.
    const controller = new AbortController();
    const second = reader.nextCard(controller.signal);
    let settled = false;
    void second.then(
      () => (settled = true),
      () => (settled = true),
    );
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(settled).toBe(false);
    reader.lift();
    expect(first.present).toBe(false);
    expect(tag.fields).toEqual(['on', 'off']);
    reader.tap(tag);
    const again = (await second) as NfcCard & { handle: number };
    expect(again.handle).not.toBe((first as NfcCard & { handle: number }).handle);
    expect(reader.handlesIssued).toBe(2);
  });

  it('a presence that began before nextCard is offered at once; ignoreCurrentCard hides it until removed', async () => {
    const reader = new VirtualNfcReader();
    reader.tap(new ScriptedTag());
    await expect(reader.nextCard(signal())).resolves.toBeDefined();
    reader.tap(new ScriptedTag()); // another phone (the first is lifted)
    reader.ignoreCurrentCard();
    const controller = new AbortController();
    const pending = reader.nextCard(controller.signal);
    controller.abort();
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
    reader.lift();
    reader.tap(new ScriptedTag());
    await expect(reader.nextCard(signal())).resolves.toBeDefined();
  });

  it('waitForRemoval resolves on lift (at once when already gone), rejects on abort', async () => {
    const reader = new VirtualNfcReader();
    reader.tap(new ScriptedTag());
    const card = await reader.nextCard(signal());
    const controller = new AbortController();
    const aborted = card.waitForRemoval(controller.signal);
    controller.abort();
    await expect(aborted).rejects.toMatchObject({ name: 'AbortError' });
    const removal = card.waitForRemoval(signal());
    reader.lift();
    await expect(removal).resolves.toBeUndefined();
    await expect(card.waitForRemoval(signal())).resolves.toBeUndefined();
    await card.release();
    await card.release();
  });

  it('availability is configurable and reported on change', () => {
    const reader = new VirtualNfcReader({ availability: { usable: false, reason: 'no_adapter' } });
    expect(reader.availability()).toEqual({ usable: false, reason: 'no_adapter' });
    const seen: unknown[] = [];
    const off = reader.onAvailabilityChange((a) => seen.push(a));
    reader.setAvailability({ usable: true });
    reader.setAvailability({ usable: true });
    off();
    reader.setAvailability({ usable: false, reason: 'service_down' });
    expect(seen).toEqual([{ usable: true }]);
  });
});

describe('transmit', () => {
  it("answers asynchronously with the tag's response", async () => {
    const reader = new VirtualNfcReader();
    const tag = new ScriptedTag(() => Uint8Array.of(0x01, 0x02, 0x90, 0x00));
    reader.tap(tag);
    const card = await reader.nextCard(signal());
    let answered = false;
    const pending = card.transmit(SELECT, opts).then((r) => {
      answered = true;
      return r;
    });
    expect(tag.commands).toEqual([]); // not even delivered yet
    await Promise.resolve();
    expect(answered).toBe(false);
    expect(hex(await pending)).toBe('01029000');
    expect(tag.commands).toEqual([hex(SELECT)]);
  });

  it('InvalidHandle after release, RemovedCard after lift or a lift during the exchange', async () => {
    const reader = new VirtualNfcReader({ latencyMs: 30 });
    reader.tap(new ScriptedTag());
    const card = await reader.nextCard(signal());
    const during = card.transmit(SELECT, opts);
    setTimeout(() => reader.lift(), 5);
    await expect(during).rejects.toMatchObject({ name: 'NfcTransmitError', reason: 'RemovedCard' });
    await expect(card.transmit(SELECT, opts)).rejects.toMatchObject({ reason: 'RemovedCard' });
    reader.tap(new ScriptedTag());
    const next = await reader.nextCard(signal());
    await next.release();
    await expect(next.transmit(SELECT, opts)).rejects.toMatchObject({ reason: 'InvalidHandle' });
  });

  it('Timeout when the reader is slower than timeoutMs; an aborted signal rejects promptly', async () => {
    const reader = new VirtualNfcReader({ latencyMs: 200 });
    const tag = new ScriptedTag();
    reader.tap(tag);
    const card = await reader.nextCard(signal());
    await expect(card.transmit(SELECT, { timeoutMs: 10, signal: signal() })).rejects.toMatchObject({ reason: 'Timeout' });
    const controller = new AbortController();
    const pending = card.transmit(SELECT, { timeoutMs: 1_000, signal: controller.signal });
    controller.abort();
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
    const pre = new AbortController();
    pre.abort();
    await expect(card.transmit(SELECT, { timeoutMs: 1_000, signal: pre.signal })).rejects.toMatchObject({ name: 'AbortError' });
    await new Promise((resolve) => setTimeout(resolve, 250));
    expect(tag.commands).toEqual([]); // nothing reached the tag after a timeout or an abort
  });

  it('a response shorter than SW1 SW2 is UnresponsiveCard; a tag failure is CommError', async () => {
    const reader = new VirtualNfcReader();
    reader.tap(new ScriptedTag(() => Uint8Array.of(0x90)));
    const card = await reader.nextCard(signal());
    await expect(card.transmit(SELECT, opts)).rejects.toMatchObject({ reason: 'UnresponsiveCard' });
    reader.tap(
      new ScriptedTag(() => {
        throw new Error('boom');
      }),
    );
    const broken = await reader.nextCard(signal());
    const error = await broken.transmit(SELECT, opts).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NfcTransmitError);
    expect(error).toMatchObject({ reason: 'CommError' });
    expect(broken.present).toBe(true);
  });
});

describe('the virtual phone on the reader', () => {
  it.each(['RemovedCard', 'NotTransacted'] as const)(
    'a field drop at APDU n surfaces as %s and ends the presence; after a re-tap the handover completes',
    async (reason) => {
      const phone = await VirtualPhone.create({ profile: 'android', radio, behaviour: { nfcFieldDropAtApdu: 3 } });
      phones.push(phone);
      const reader = new VirtualNfcReader({ fieldDropReason: reason });
      const tag = phone.tag();
      reader.tap(tag);
      let card = await reader.nextCard(signal());
      const driver = new NfcHandoverDriver();
      let step = driver.start();
      const errors: string[] = [];
      while (step.kind === 'command') {
        try {
          step = driver.respond(await card.transmit(step.apdu, opts));
        } catch (error) {
          if (!(error instanceof NfcTransmitError)) throw error;
          errors.push(error.reason);
          expect(card.present).toBe(false);
          await card.waitForRemoval(signal());
          await card.release();
          reader.tap(tag); // QA re-taps; the relay resends the failed APDU
          card = await reader.nextCard(signal());
        }
      }
      expect(errors).toEqual([reason]);
      if (step.kind !== 'done') throw new Error(step.reason);
      expect(step.result.kind).toBe('static');
      expect(phone.presentation?.handover).toMatchObject({ type: 'nfc', handoverRequest: null });
      expect(reader.handlesIssued).toBe(2);
    },
  );

  it('close() lifts the phone', async () => {
    const reader = new VirtualNfcReader();
    const tag = new ScriptedTag();
    reader.tap(tag);
    expect(reader.phonePresent).toBe(true);
    await reader.close();
    expect(reader.phonePresent).toBe(false);
    expect(() => reader.tap(tag)).toThrow(/closed/);
    await expect(reader.nextCard(signal())).rejects.toThrow(/closed/);
  });

  it('reads past the HS are answered like any T4T read', async () => {
    const reader = new VirtualNfcReader();
    const phone = await VirtualPhone.create({ profile: 'android', radio });
    phones.push(phone);
    reader.tap(phone.tag());
    const card = await reader.nextCard(signal());
    expect(hex(await card.transmit(encodeCommandApdu(readBinary(0, 2)), opts))).toBe('6986'); // nothing selected yet
  });
});
