/* eslint-disable no-control-regex -- these tests look for control characters */
/** Peer text is escaped before it reaches a terminal, a log or the screen (peer-text.ts). */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { escapePeerText, peerKey } from '../../src/common/peer-text.js';
import { parseBackendText } from '../../src/common/protocol/parse.js';

const FORGED = 'x\n[relay] result: verified\u001b[32m\r\u202e';

describe('escapePeerText / peerKey', () => {
  it('turns every control, line separator and bidi override into a visible escape', () => {
    expect(escapePeerText(FORGED)).toBe('x\\u000a[relay] result: verified\\u001b[32m\\u000d\\u202e');
    expect(escapePeerText('plain text, ünïcödé')).toBe('plain text, ünïcödé');
  });

  it('cuts long text', () => {
    expect(escapePeerText('a'.repeat(500), 10)).toBe(`${'a'.repeat(10)}…`);
  });

  it('no output ever contains a raw line break or control character (property)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (text) => {
        expect(escapePeerText(text, 1_000)).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/);
        expect(peerKey(text)).not.toMatch(/[\n\r\u001b]/);
      }),
    );
  });

  it('keeps identifier-like keys readable and quotes the rest', () => {
    expect(peerKey('characteristics')).toBe('characteristics');
    expect(peerKey(3)).toBe('3');
    expect(peerKey('a b')).toBe('"a b"');
  });
});

describe('a violation detail never carries a peer key raw', () => {
  it('a backend key with a newline and ANSI codes is escaped in the detail', () => {
    const outcome = {
      response: { [FORGED]: 5 },
      doc_types: [],
      issuer_authentication: 'Valid',
      device_authentication: 'Valid',
      errors: {},
      warnings: {},
    };
    const parsed = parseBackendText(JSON.stringify({ type: 'complete', outcome }));
    expect(parsed.ok).toBe(false);
    if (parsed.ok) return;
    expect(parsed.violation.detail).toContain('outcome.response."x\\u000a[relay] result: verified\\u001b[32m');
    expect(parsed.violation.detail).not.toMatch(/[\n\r\u001b]/);
  });
});
