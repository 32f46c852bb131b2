import { describe, expect, it } from 'vitest';
import { appArguments, parseCommandLine } from '../../../src/main/command-line.js';

describe('appArguments', () => {
  it('drops the executable, and the app folder of an unpackaged run', () => {
    expect(appArguments(['/opt/mdl-kiosk/mdl-kiosk', '--no-kiosk'], false)).toEqual(['--no-kiosk']);
    expect(appArguments(['/x/electron', 'dist/app-dev', '--no-kiosk'], true)).toEqual(['--no-kiosk']);
  });
});

describe('parseCommandLine', () => {
  it('reads every option', () => {
    expect(
      parseCommandLine([
        '--config',
        '/etc/k.json',
        '--data-dir=/var/k',
        '--log-level',
        'debug',
        '--no-kiosk',
        '--support-bundle',
        'out.tar.gz',
        '--provision',
      ]),
    ).toEqual({
      configFile: '/etc/k.json',
      dataDir: '/var/k',
      logLevel: 'debug',
      noKiosk: true,
      help: false,
      provision: true,
      supportBundle: 'out.tar.gz',
      problems: [],
    });
    expect(parseCommandLine(['-h']).help).toBe(true);
    expect(parseCommandLine([])).toEqual({ noKiosk: false, help: false, provision: false, problems: [] });
    expect(parseCommandLine(['--support-bundle']).problems).toEqual(['--support-bundle needs a value (ignored)']);
  });

  it('unknown options and stray arguments become problems, not a crash', () => {
    const cli = parseCommandLine(['--enable-logging', '--kiosk-mode=off', 'extra', '--log-level', 'warn']);
    expect(cli.logLevel).toBe('warn');
    expect(cli.problems).toEqual([
      '--enable-logging is not an mDL Kiosk option (left to Electron/Chromium)',
      '--kiosk-mode is not an mDL Kiosk option (left to Electron/Chromium)',
      'unexpected argument "extra" (ignored)',
    ]);
  });

  it('bad values are dropped with a message naming the option', () => {
    const cli = parseCommandLine(['--log-level', 'loud', '--no-kiosk=yes', '--config']);
    expect(cli.logLevel).toBeUndefined();
    expect(cli.noKiosk).toBe(false);
    expect(cli.configFile).toBeUndefined();
    expect(cli.problems).toEqual([
      '--config needs a value (ignored)',
      '--log-level takes fatal | error | warn | info | debug | trace | silent (ignored)',
      '--no-kiosk takes no value (ignored)',
    ]);
  });
});
