/**
 * Shared fixtures for the BLE port tests (virtual, bleno, noble, radio link and the end-to-end runs through
 * them): the mdoc GATT profiles the kiosk asks for, recorders of what the ports report, listener counts and
 * the verdict of a verified run.
 */
import { expect } from 'vitest';
import type { Bleno } from '../../src/devices/ble/bleno-types.js';
import type { BleCentralHandlers, GattProfile, PeripheralEvent } from '../../src/devices/ports.js';
import type { E2eStack } from './e2e-stack.js';
import { CLIENT_MODE, Inbox, SERVER_MODE } from './radio-phone.js';

type Spec = GattProfile['characteristics']['c2s'];

/** The kiosk's profile in mdoc peripheral server mode (the phone is GATT server, the kiosk central). */
export function serverProfile(serviceUuid: string): GattProfile {
  return {
    serviceUuid,
    characteristics: {
      state: { uuid: SERVER_MODE.state, operations: ['notify', 'write_without_response'], permissions: ['writeable'] },
      c2s: { uuid: SERVER_MODE.c2s, operations: ['write_without_response'], permissions: ['writeable'] },
      s2c: { uuid: SERVER_MODE.s2c, operations: ['notify'], permissions: [] },
    },
  };
}

/** The kiosk's profile in mdoc central client mode (the kiosk is GATT server), with Ident; `ident` and `c2s` may be replaced. */
export function clientProfile(serviceUuid: string, overrides: Partial<Record<'ident' | 'c2s', Spec>> = {}): GattProfile {
  const C = CLIENT_MODE;
  return {
    serviceUuid,
    characteristics: {
      state: { uuid: C.state, operations: ['notify', 'write_without_response'], permissions: ['writeable'] },
      c2s: overrides.c2s ?? { uuid: C.c2s, operations: ['write_without_response'], permissions: ['writeable'] },
      s2c: { uuid: C.s2c, operations: ['notify'], permissions: [] },
      ident: overrides.ident ?? { uuid: C.ident, operations: ['read'], permissions: ['readable'] },
    },
  };
}

/** The Ident value a peripheral test serves by default. */
export const IDENT = Uint8Array.from({ length: 16 }, (_, i) => 0xb0 + i);

/** BleCentralHandlers that record notifications and disconnect reasons. */
export class Recorder implements BleCentralHandlers {
  readonly notifications: { uuid: string; data: Uint8Array }[] = [];
  readonly disconnects: string[] = [];
  onNotification(characteristicUuid: string, data: Uint8Array): void {
    this.notifications.push({ uuid: characteristicUuid, data });
  }
  onDisconnect(reason: string): void {
    this.disconnects.push(reason);
  }
}

export type ReadEvent = Extract<PeripheralEvent, { kind: 'read' }>;

/** PeripheralEvents as compact strings (UUIDs as the profile spells them); reads are answered by `answer` (default: IDENT). */
export class Events {
  readonly log = new Inbox<string>();
  readonly reads: ReadEvent[] = [];
  answer: ((event: ReadEvent) => void) | undefined = (e) => e.respond(IDENT);
  tap: ((event: PeripheralEvent) => void) | undefined;
  readonly onEvent = (event: PeripheralEvent): void => {
    this.tap?.(event);
    switch (event.kind) {
      case 'read':
        this.reads.push(event);
        this.log.push(`read ${event.characteristicUuid} @${event.offset}`);
        this.answer?.(event);
        return;
      case 'write':
        this.log.push(`write ${event.characteristicUuid} ${Buffer.from(event.data).toString('hex')}`);
        return;
      case 'subscribe':
      case 'unsubscribe':
        this.log.push(`${event.kind} ${event.characteristicUuid}`);
        return;
      case 'connect':
        this.log.push('connect');
        return;
      case 'disconnect':
        this.log.push(`disconnect ${event.reason}`);
        return;
    }
  };
}

/** Listeners a bleno session adds, or leaves behind by waiting on bleno's events. */
export function blenoSessionListeners(bleno: Bleno): number {
  return ['accept', 'disconnect', 'advertisingStart', 'advertisingStop', 'servicesSet', 'servicesSetError'].reduce(
    (n, event) => n + bleno.listenerCount(event),
    0,
  );
}

type E2eReport = Awaited<ReturnType<E2eStack['nextReport']>>;

/** The run completed and the verifier found the mdoc verified, issuer and device authentication valid. */
export function expectVerifiedOutcome(report: E2eReport): void {
  expect(report.result).toBe('complete');
  expect(report.outcome?.verdict).toBe('verified');
  expect(report.outcome?.issuerAuthentication).toBe('Valid');
  expect(report.outcome?.deviceAuthentication).toBe('Valid');
}

/** expectVerifiedOutcome, and no errors reported. */
export function expectVerified(report: E2eReport): void {
  expectVerifiedOutcome(report);
  expect(report.outcome?.errors).toEqual({});
}
