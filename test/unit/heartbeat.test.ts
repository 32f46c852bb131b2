/**
 * The session socket's heartbeat on a fake clock: a ping every interval, each with a pong deadline of its
 * own, and a probe that pings at once (docs/protocol.md §10.2: the detection bounds).
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Heartbeat } from '../../src/kiosk/heartbeat.js';

function rig(intervalMs: number, pongMs: number, canSend = true) {
  const pings: number[] = [];
  const silent: number[] = [];
  const beat = new Heartbeat({
    intervalMs,
    pongMs,
    ping: () => {
      if (canSend) pings.push(Date.now());
      return canSend;
    },
    onSilent: (waited) => silent.push(waited),
  });
  return { beat, pings, silent };
}

beforeEach(() => {
  vi.useFakeTimers({ now: 0 });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('Heartbeat', () => {
  it('a backend that answers every ping is never declared silent', () => {
    const { beat, pings, silent } = rig(5_000, 2_500);
    for (let i = 0; i < 10; i++) {
      vi.advanceTimersByTime(5_000);
      vi.advanceTimersByTime(100);
      beat.pong();
    }
    expect(pings).toHaveLength(10);
    expect(silent).toEqual([]);
    beat.stop();
  });

  it('idle: a backend that stops answering is declared silent pongMs after the next ping, within interval + pong', () => {
    const { beat, silent } = rig(5_000, 2_500);
    vi.advanceTimersByTime(5_000);
    beat.pong();
    // Silence starts just after a pong: the worst case is a whole interval and then the pong deadline.
    vi.advanceTimersByTime(5_000 + 2_499);
    expect(silent).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(silent).toEqual([2_500]);
    expect(Date.now()).toBe(12_500);
  });

  it('is declared silent once only, and stops pinging then', () => {
    const { pings, silent } = rig(1_000, 500);
    vi.advanceTimersByTime(10_000);
    expect(silent).toEqual([500]);
    expect(pings).toEqual([1_000]);
  });

  it('a probe pings at once and finds a silent backend within pongMs, without waiting for the next beat', () => {
    const { beat, pings, silent } = rig(5_000, 2_500);
    vi.advanceTimersByTime(1_000);
    beat.probe();
    expect(pings).toEqual([1_000]);
    vi.advanceTimersByTime(2_500);
    expect(silent).toEqual([2_500]);
    expect(Date.now()).toBe(3_500);
  });

  it('a probe while a ping waits for its pong keeps that deadline (no second ping, no later deadline)', () => {
    const { beat, pings, silent } = rig(5_000, 2_500);
    vi.advanceTimersByTime(5_000);
    vi.advanceTimersByTime(2_000);
    beat.probe();
    expect(pings).toEqual([5_000]);
    vi.advanceTimersByTime(500);
    expect(silent).toEqual([2_500]);
  });

  it('the pong deadline is never longer than the interval', () => {
    const { silent } = rig(1_000, 60_000);
    vi.advanceTimersByTime(2_000);
    expect(silent).toEqual([1_000]);
  });

  it('with the periodic heartbeat off (interval 0), only probes ping', () => {
    const { beat, pings, silent } = rig(0, 2_500);
    vi.advanceTimersByTime(60_000);
    expect(pings).toEqual([]);
    beat.probe();
    vi.advanceTimersByTime(2_500);
    expect(silent).toEqual([2_500]);
  });

  it('a socket that cannot send is not waited on; stop() ends every timer', () => {
    const closed = rig(1_000, 500, false);
    vi.advanceTimersByTime(5_000);
    expect(closed.silent).toEqual([]);
    closed.beat.stop();
    const stopped = rig(1_000, 500);
    vi.advanceTimersByTime(1_000);
    stopped.beat.stop();
    vi.advanceTimersByTime(10_000);
    expect(stopped.silent).toEqual([]);
    expect(vi.getTimerCount()).toBe(0);
  });
});
