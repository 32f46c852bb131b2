/**
 * The soak's secrets search must find what it looks for in every spelling a log could use (hex, base64 at
 * any alignment, URL-safe base64, a decimal byte list; a client secret inside a longer token), count hits
 * without keeping the matched text, and not cry wolf on ordinary log lines. The resource tracker's figures:
 * growth from the early baseline, slope per 1,000 runs, counts judged on medians after warm-up.
 */
import { describe, expect, it } from 'vitest';
import { ResourceTracker, robustSlope, slope, type ResourceSample } from '../../../tools/soak/resources.js';
import { byteSpellings, middleSlice, SecretScanner } from '../../../tools/soak/secrets.js';

/** Bytes with no repeated slice (a linear congruential sequence's high bytes), like an image's entropy-coded data. */
const PORTRAIT = (() => {
  let x = 12345;
  return Uint8Array.from({ length: 600 }, () => {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    return x >>> 24;
  });
})();
const SECRET = 'q8Yt3nP0-ZxWv_7Lm2Kd9sRf4GhJ1aBc';

function scanner(): SecretScanner {
  const s = new SecretScanner();
  s.addText('API key', 'kX9_apikey_Qz71');
  s.addText('holder name', '"Doe"');
  s.addText('document number', 'D1234567');
  s.addBytes('portrait bytes', middleSlice(PORTRAIT));
  return s;
}

describe('SecretScanner', () => {
  it('passes its own self-test', () => {
    expect(scanner().selfTest(middleSlice(PORTRAIT), SECRET)).toEqual([]);
  });

  it('finds a portrait slice as base64 (all alignments, both alphabets), hex and a decimal list inside longer text', () => {
    const encodings: ((b: Buffer) => string)[] = [
      (b) => b.toString('base64'),
      (b) => b.toString('base64url'),
      (b) => b.toString('hex').toUpperCase(),
      (b) => JSON.stringify(Array.from(b)),
    ];
    for (const encode of encodings) {
      for (const start of [0, 1, 2, 100, 101, 102]) {
        const s = scanner();
        s.scan('log', `{"event":"x","data":"${encode(Buffer.from(PORTRAIT.subarray(start)))}"}`);
        expect(s.hits, `${encode.toString()} from byte ${start}`).toBe(1);
      }
    }
  });

  it('finds client secrets by window, however many are known, and counts hits by label and source without their values', () => {
    const s = scanner();
    for (let i = 0; i < 5_000; i++) s.addSecret(`${String(i).padStart(8, '0')}${SECRET.slice(8)}`);
    s.addSecret(SECRET);
    expect(s.secretsKnown).toBe(5_001);
    s.scan('kiosk log', `{"msg":"GET /ws?token=${SECRET}&x=1"}`);
    s.scan('kiosk log', `{"authorization":"Bearer ${SECRET}"}`);
    s.scan('pcscd log', SECRET);
    expect(s.hits).toBe(3);
    expect(s.hitSummary).toEqual(['client secret in kiosk log: 2', 'client secret in pcscd log: 1']);
    expect(s.hitSummary.join()).not.toContain(SECRET);
  });

  it('stays silent on ordinary log lines and counts the bytes it searched per source', () => {
    const s = scanner();
    s.addSecret(SECRET);
    const line =
      '{"level":30,"event":"session_armed","sessionId":"0b7c5a6e-3f1d-4c2a-9e8b-7d6c5b4a3f2e","remainingMs":29998,"msg":"session engaged"}';
    s.scan('kiosk log', line);
    s.scan('kiosk log', line);
    expect(s.hits).toBe(0);
    expect(s.bytesPerSource.get('kiosk log')).toBe(2 * Buffer.byteLength(line));
    expect(s.searchedBytes).toBe(2 * Buffer.byteLength(line));
  });

  it('byteSpellings gives hex both cases, a decimal list and base64 at each alignment', () => {
    const spellings = byteSpellings(Uint8Array.from([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]));
    expect(spellings).toContain('0102030405060708090a');
    expect(spellings).toContain('0102030405060708090A');
    expect(spellings).toContain('1,2,3,4,5,6,7,8,9,10');
    expect(spellings).toContain(Buffer.from([1, 2, 3, 4, 5, 6, 7, 8, 9]).toString('base64'));
    expect(spellings).toContain(Buffer.from([2, 3, 4, 5, 6, 7, 8, 9, 10]).toString('base64'));
    expect(() => new SecretScanner().addText('x', 'ab')).toThrow(RangeError);
  });
});

describe('ResourceTracker', () => {
  const sample = (runs: number, patch: Partial<ResourceSample> = {}): ResourceSample => ({
    runs,
    rssMb: 100,
    heapMb: 20,
    fds: 30,
    listeners: 10,
    timers: 4,
    sockets: 3,
    ...patch,
  });

  it('slope() is the least-squares slope; robustSlope() the Theil–Sen one, which a lone outlier does not tilt', () => {
    expect(
      slope([
        [0, 1],
        [1, 3],
        [2, 5],
      ]),
    ).toBeCloseTo(2);
    expect(slope([[5, 1]])).toBeNaN();
    const flatWithSpike = Array.from({ length: 20 }, (_, i) => [i * 10, i === 19 ? 12 : 4] as const);
    expect(robustSlope(flatWithSpike)).toBe(0);
    expect(slope(flatWithSpike)).toBeGreaterThan(0.01); // 11 per 1,000 runs from one sample
    expect(
      robustSlope([
        [0, 0],
        [10, 1],
        [20, 2],
        [30, 3],
      ]),
    ).toBeCloseTo(0.1);
  });

  it('a steady heap passes; a heap growing with the runs fails with its slope per 1,000', () => {
    const steady = new ResourceTracker(100);
    const leaking = new ResourceTracker(100);
    for (let runs = 0; runs <= 2_000; runs += 20) {
      steady.add(sample(runs, { heapMb: 20 + (runs < 100 ? runs / 50 : 2) }));
      leaking.add(sample(runs, { heapMb: 20 + runs * 0.01 }));
    }
    expect(
      steady.report({ rssMbPer1000: 20, heapMbPer1000: 5, fds: 2, listeners: 2, timers: 2, sockets: 2, countPer1000: 5 }).problems,
    ).toEqual([]);
    const report = leaking.report({ rssMbPer1000: 20, heapMbPer1000: 5, fds: 2, listeners: 2, timers: 2, sockets: 2, countPer1000: 5 });
    expect(report.slopePer1000.heapMb).toBeCloseTo(10, 5);
    expect(report.growth.heapMb).toBeCloseTo(20, 5);
    expect(report.problems).toEqual([expect.stringMatching(/^heap grows 10\.00 MB per 1,000/)]);
  });

  it('counts are judged on medians after warm-up: a one-off spike passes, a steady climb fails', () => {
    const spike = new ResourceTracker(0);
    const climb = new ResourceTracker(0);
    for (let runs = 0; runs <= 400; runs += 20) {
      spike.add(sample(runs, { timers: runs === 400 ? 12 : 4 }));
      climb.add(sample(runs, { fds: 30 + runs / 20 }));
    }
    const bounds = { rssMbPer1000: 20, heapMbPer1000: 5, fds: 2, listeners: 2, timers: 2, sockets: 2, countPer1000: 5 };
    expect(spike.report(bounds).problems).toEqual([]);
    expect(climb.report(bounds).problems).toEqual([
      expect.stringMatching(/^fds grow 50\.0 per 1,000/),
      expect.stringMatching(/^fds: \+16 when idle after warm-up/),
    ]);
  });

  it('counts are judged on their floor: busier moments at the end pass, a rising floor fails (CI once failed on timers of work in flight)', () => {
    const busy = new ResourceTracker(0);
    const leak = new ResourceTracker(0);
    const head = [4, 4, 5, 4, 4];
    const tail = [9, 4, 9, 9, 5]; // median +5, floor +0
    const all = [...head, 6, 5, 7, ...tail];
    all.forEach((timers, i) => {
      busy.add(sample(i * 10, { timers }));
      leak.add(sample(i * 10, { timers: timers + (i >= all.length - tail.length ? 5 : 0) }));
    });
    const bounds = { rssMbPer1000: 20, heapMbPer1000: 5, fds: 2, listeners: 2, timers: 4, sockets: 2, countPer1000: 5 };
    const quiet = busy.report(bounds);
    expect(quiet.settledGrowth.timers).toBe(0);
    expect(quiet.problems).toEqual([]);
    expect(leak.report(bounds).problems).toEqual([expect.stringMatching(/^timers: \+5 when idle after warm-up \(lowest of the last 5/)]);
  });

  it('a head window that dips below the first idle level is not the floor; a leak still rises above both (seed 3057469880)', () => {
    const dip = new ResourceTracker(1);
    const leak = new ResourceTracker(1);
    const early = 21;
    const head = [16, 17, 16, 18, 16];
    const tail = [21, 22, 21, 23, 21];
    const all = [early, ...head, 20, 21, 22, ...tail];
    all.forEach((timers, i) => {
      dip.add(sample(i * 10, { timers }));
      leak.add(sample(i * 10, { timers: timers + (i >= all.length - tail.length ? 6 : 0) }));
    });
    const bounds = { rssMbPer1000: 20, heapMbPer1000: 5, fds: 2, listeners: 2, timers: 4, sockets: 2, countPer1000: 500 };
    expect(dip.report(bounds).settledGrowth.timers).toBe(0);
    expect(dip.report(bounds).problems).toEqual([]);
    expect(leak.report(bounds).problems).toEqual([expect.stringMatching(/^timers: \+6 when idle after warm-up/)]);
  });

  it('keeps a bounded number of points over a long soak', () => {
    const tracker = new ResourceTracker(0, 64);
    for (let runs = 0; runs < 100_000; runs += 10) tracker.add(sample(runs, { rssMb: 100 + runs / 1_000 }));
    const report = tracker.report({ rssMbPer1000: 20, heapMbPer1000: 5, fds: 2, listeners: 2, timers: 2, sockets: 2, countPer1000: 5 });
    expect(report.samples).toBeLessThanOrEqual(64);
    expect(report.slopePer1000.rssMb).toBeCloseTo(1, 5);
  });
});
