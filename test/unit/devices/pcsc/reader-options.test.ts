/** The PC/SC reader's options: defaults filled in, a time bound that is not a positive number refused. */
import { describe, expect, it } from 'vitest';
import { readerSettings } from '../../../../src/devices/pcsc/reader-options.js';

describe('PC/SC reader options', () => {
  it('fills in the defaults', () => {
    expect(readerSettings({})).toEqual({
      shareMode: 'shared',
      protocol: 'any',
      serviceRetryMinMs: 500,
      serviceRetryMaxMs: 10_000,
      connectTimeoutMs: 5_000,
      disconnectTimeoutMs: 1_000,
    });
  });

  it.each([0, -1, Number.NaN, Number.POSITIVE_INFINITY])('refuses a connect bound of %s', (value) => {
    expect(() => readerSettings({ connectTimeoutMs: value })).toThrow(
      new RangeError(`connectTimeoutMs must be a positive number, got ${value}`),
    );
  });
});
