/**
 * Order, not wall-clock time: a timeline of what happened, so a test can say "the abort's rejection came
 * before the stage it interrupted would have ended" without a millisecond bound that a loaded machine
 * breaks (or a slow implementation slips under).
 */
import type { RadioCentral, RadioDevice, RadioLink } from '../../src/qa/sim/radio/virtual-radio.js';

export class Timeline {
  readonly entries: string[] = [];

  push(entry: string): void {
    this.entries.push(entry);
  }

  /** Position of the first `entry`, or +Infinity when it never happened (it cannot have come first). */
  at(entry: string): number {
    const index = this.entries.indexOf(entry);
    return index < 0 ? Number.POSITIVE_INFINITY : index;
  }

  /** Records `settled:fulfilled` / `settled:rejected` when `promise` settles; passes it on unchanged. */
  settle<T>(promise: Promise<T>, label = 'settled'): Promise<T> {
    promise.then(
      () => this.push(`${label}:fulfilled`),
      () => this.push(`${label}:rejected`),
    );
    return promise;
  }
}

/**
 * Records when each setup stage of a central on `device` ends on the central's side, whoever drives it
 * (the virtual port, noble's radio bindings): `connected` (the link is up), `discovered` (the discovery
 * answer is back), `subscribed` (a subscription answered). Returns the undo.
 */
export function recordCentralStageEnds(device: RadioDevice, timeline: Timeline): () => void {
  const central: RadioCentral = device.central;
  const connect = central.connect.bind(central);
  const wrapped: RadioCentral['connect'] = async (...args) => {
    const link = await connect(...args);
    timeline.push('connected');
    wrapLink(link, timeline);
    return link;
  };
  Object.defineProperty(central, 'connect', { value: wrapped, configurable: true, writable: true });
  return () => {
    Reflect.deleteProperty(central, 'connect');
  };
}

function wrapLink(link: RadioLink, timeline: Timeline): void {
  const discover = link.discover.bind(link);
  const subscribe = link.subscribe.bind(link);
  const wrappedDiscover: RadioLink['discover'] = async (...args) => {
    const services = await discover(...args);
    timeline.push('discovered');
    return services;
  };
  const wrappedSubscribe: RadioLink['subscribe'] = async (...args) => {
    await subscribe(...args);
    timeline.push('subscribed');
  };
  Object.defineProperty(link, 'discover', { value: wrappedDiscover, configurable: true, writable: true });
  Object.defineProperty(link, 'subscribe', { value: wrappedSubscribe, configurable: true, writable: true });
}
