/**
 * The small pure pieces of the QR input: what the paste field strips, how camera repeats are filtered,
 * what a getUserMedia failure means, the median the benchmark prints, and the translations.
 */
import { describe, expect, it } from 'vitest';
import { classifyCameraError } from '../../../src/renderer/qr/camera-errors.js';
import { qrResources } from '../../../src/renderer/qr/locales.js';
import { median } from '../../../src/renderer/qr/qr-timings.js';
import { RepeatFilter, withoutTrailingNewline } from '../../../src/renderer/qr/scan-text.js';

describe('withoutTrailingNewline', () => {
  it('drops only the CR/LF at the end', () => {
    expect(withoutTrailingNewline('mdoc:abc\r\n')).toBe('mdoc:abc');
    expect(withoutTrailingNewline('mdoc:abc\n\n')).toBe('mdoc:abc');
    expect(withoutTrailingNewline('  mdoc:a\nb c  ')).toBe('  mdoc:a\nb c  ');
    expect(withoutTrailingNewline('mdoc:abc \t')).toBe('mdoc:abc \t');
    expect(withoutTrailingNewline('\r\n')).toBe('');
  });
});

describe('RepeatFilter', () => {
  it('reports a text once per window, a different text at once, and again after reset', () => {
    const filter = new RepeatFilter(3_000);
    expect(filter.accept('mdoc:a', 0)).toBe(true);
    expect(filter.accept('mdoc:a', 100)).toBe(false);
    expect(filter.accept('mdoc:a', 2_999)).toBe(false);
    expect(filter.accept('mdoc:a', 3_000)).toBe(true);
    expect(filter.accept('mdoc:b', 3_001)).toBe(true);
    expect(filter.accept('mdoc:a', 3_002)).toBe(true);
    filter.reset();
    expect(filter.accept('mdoc:a', 3_003)).toBe(true);
  });
});

describe('classifyCameraError', () => {
  const error = (name: string, extra: Record<string, unknown> = {}) => Object.assign(new Error('private message'), { name, ...extra });

  it.each([
    ['NotAllowedError', 'denied'],
    ['SecurityError', 'denied'],
    ['NotFoundError', 'missing'],
    ['OverconstrainedError', 'missing'],
    ['NotReadableError', 'error'],
    ['AbortError', 'error'],
  ])('%s → %s', (name, state) => {
    expect(classifyCameraError(error(name)).state).toBe(state);
  });

  it('gives staff the error name and the broken constraint, not the message', () => {
    expect(classifyCameraError(error('OverconstrainedError', { constraint: 'deviceId' }))).toEqual({
      state: 'missing',
      detail: 'OverconstrainedError (deviceId)',
    });
    expect(classifyCameraError('weird')).toEqual({ state: 'error', detail: 'Error' });
    expect(classifyCameraError(null)).toEqual({ state: 'error', detail: 'Error' });
  });
});

describe('median', () => {
  it('is the middle value (or the mean of the two middle ones), NaN for none', () => {
    expect(median([5, 1, 3])).toBe(3);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([])).toBeNaN();
  });
});

function keysOf(value: unknown, prefix = ''): string[] {
  if (typeof value !== 'object' || value === null) return [prefix];
  return Object.entries(value).flatMap(([k, v]) => keysOf(v, prefix === '' ? k : `${prefix}.${k}`));
}

describe('qrResources', () => {
  it('has every key in every language, none empty, and a message for every camera state', () => {
    const english = keysOf(qrResources.en).sort();
    for (const language of ['es', 'fr'] as const) expect(keysOf(qrResources[language]).sort()).toEqual(english);
    for (const language of ['en', 'es', 'fr'] as const) {
      const strings = qrResources[language];
      for (const state of ['off', 'starting', 'active', 'denied', 'missing', 'unplugged', 'error'] as const)
        expect(strings.camera[state].length).toBeGreaterThan(5);
      for (const reason of ['not_mdoc', 'empty', 'not_waiting'] as const) expect(strings.hint[reason].length).toBeGreaterThan(5);
    }
    expect(qrResources.es.camera.denied).not.toBe(qrResources.en.camera.denied);
    expect(qrResources.fr.paste.submit).not.toBe(qrResources.en.paste.submit);
  });
});
