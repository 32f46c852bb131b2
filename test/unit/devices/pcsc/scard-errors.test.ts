import { describe, expect, it } from 'vitest';
import { formatScardCode, parseScardCode, SCARD_CODES, scardEntry, scardVariant } from '../../../../src/devices/pcsc/scard-errors.js';

/**
 * The expected names, written out independently of the table under test: the Rust `pcsc` crate's `Error`
 * variants (bluetech/pcsc-rust pcsc/src/lib.rs) with the codes of pcsc-sys (pcsc-lite / non-Windows).
 */
const CRATE_NON_WINDOWS = `
80100001 InternalError      80100002 Cancelled          80100003 InvalidHandle       80100004 InvalidParameter
80100005 InvalidTarget      80100006 NoMemory           80100007 WaitedTooLong       80100008 InsufficientBuffer
80100009 UnknownReader      8010000A Timeout            8010000B SharingViolation    8010000C NoSmartcard
8010000D UnknownCard        8010000E CantDispose        8010000F ProtoMismatch       80100010 NotReady
80100011 InvalidValue       80100012 SystemCancelled    80100013 CommError           80100014 UnknownError
80100015 InvalidAtr         80100016 NotTransacted      80100017 ReaderUnavailable   80100018 Shutdown
80100019 PciTooSmall        8010001A ReaderUnsupported  8010001B DuplicateReader     8010001C CardUnsupported
8010001D NoService          8010001E ServiceStopped     8010001F UnsupportedFeature  80100020 IccInstallation
80100021 IccCreateorder     80100023 DirNotFound        80100024 FileNotFound        80100025 NoDir
80100026 NoFile             80100027 NoAccess           80100028 WriteTooMany        80100029 BadSeek
8010002A InvalidChv         8010002B UnknownResMng      8010002C NoSuchCertificate   8010002D CertificateUnavailable
8010002E NoReadersAvailable 8010002F CommDataLost       80100030 NoKeyContainer      80100031 ServerTooBusy
80100065 UnsupportedCard    80100066 UnresponsiveCard   80100067 UnpoweredCard       80100068 ResetCard
80100069 RemovedCard        8010006A SecurityViolation  8010006B WrongChv            8010006C ChvBlocked
8010006D Eof                8010006E CancelledByUser    8010006F CardNotAuthenticated 80100070 CacheItemNotFound
80100071 CacheItemStale     80100072 CacheItemTooBig`;

const expected = new Map<number, string>();
const tokens = CRATE_NON_WINDOWS.trim().split(/\s+/);
for (let i = 0; i < tokens.length; i += 2) expected.set(Number.parseInt(tokens[i] ?? '', 16), tokens[i + 1] ?? '');

/** On Windows the crate differs in exactly these codes. */
const WINDOWS_DIFFERENCES = new Map<number, string>([
  [0x8010001f, 'Unexpected'],
  [0x80100022, 'UnsupportedFeature'],
  [0x80100032, 'UnknownError'],
  [0x80100033, 'UnknownError'],
  [0x80100034, 'UnknownError'],
]);

describe('SCARD code table', () => {
  it.each(SCARD_CODES.map((e) => [formatScardCode(e.code), e.platform ?? 'every OS', e] as const))(
    '%s (%s) maps to the pcsc crate variant',
    (_code, _platform, entry) => {
      const platforms = entry.platform === undefined ? (['other', 'windows'] as const) : [entry.platform];
      for (const platform of platforms) {
        const want = platform === 'windows' ? (WINDOWS_DIFFERENCES.get(entry.code) ?? expected.get(entry.code)) : expected.get(entry.code);
        expect(scardVariant(entry.code, platform)).toBe(want);
        expect(entry.constant).toMatch(/^SCARD_[EWFP]_[A-Z_]+$/);
      }
    },
  );

  it('covers every code the crate knows, on both platforms', () => {
    for (const [code, name] of expected) {
      expect(scardEntry(code, 'other')?.variant).toBe(name);
      expect(scardEntry(code, 'windows')?.variant).toBe(WINDOWS_DIFFERENCES.get(code) ?? name);
    }
  });

  it('codes nobody defines are UnknownError, as the crate masks them', () => {
    expect(scardVariant(0x80100022, 'other')).toBe('UnknownError');
    expect(scardVariant(0x80100099, 'other')).toBe('UnknownError');
    expect(scardVariant(0x00000000, 'windows')).toBe('UnknownError');
  });

  it('has no code twice on one platform', () => {
    for (const platform of ['other', 'windows'] as const) {
      const codes = SCARD_CODES.filter((e) => e.platform === undefined || e.platform === platform).map((e) => e.code);
      expect(new Set(codes).size).toBe(codes.length);
    }
  });
});

describe('parseScardCode', () => {
  it.each([
    ['SCardTransmit error: Card was removed.(0x80100069)', 0x80100069], // pcsc-lite: "%s error: %s(0x%.8lx)"
    ['SCardTransmit error: Transaction failed.(0x80100016)', 0x80100016],
    ['SCardEstablishContext error: Service not available.(0x8010001d)', 0x8010001d],
    ['SCardTransmit error: La carte à puce a été retirée.(0x80100069)', 0x80100069], // localised on Windows
    ['SCardConnect error: Die Chipkarte reagiert nicht.(0x80100066)', 0x80100066],
    ['SCardTransmit error: Unknown(0x8010002F)', 0x8010002f],
  ])('%s → %s', (message, code) => {
    expect(parseScardCode(new Error(message))).toBe(code);
  });

  it('returns undefined for errors without a code', () => {
    expect(parseScardCode(new Error('Card Reader not connected'))).toBeUndefined();
    expect(parseScardCode(new Error('error (0x123)'))).toBeUndefined();
    expect(parseScardCode(undefined)).toBeUndefined();
    expect(parseScardCode({ message: '(0x80100069)' })).toBeUndefined();
  });

  it('formats codes the way the binding prints them', () => {
    expect(formatScardCode(0x80100069)).toBe('0x80100069');
    expect(formatScardCode(0x80100069 | 0)).toBe('0x80100069'); // a signed LONG
  });
});
