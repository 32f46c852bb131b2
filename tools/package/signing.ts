/**
 * Code signing of release builds (docs/packaging.md "Signing"). On Windows and macOS a production build
 * must be signed: the asar integrity check (a fuse this project turns on) is only as good as the signature
 * over the executable that carries the archive's hash, and electron-updater checks an update's signature
 * against the running app's publisher (Windows) or Squirrel.Mac checks the code signature (macOS). An
 * unsigned production build therefore refuses to start unless `--unsigned` says so explicitly.
 *
 * `signingPlan` decides before electron-builder runs (is signing configured at all?); `peSignature` and
 * `macSignature` check afterwards that the packed executable really carries one.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

export type PackageOs = 'linux' | 'win' | 'mac';

export interface SigningInputs {
  readonly os: PackageOs;
  readonly flavour: 'production' | 'qa';
  readonly unsigned: boolean;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** electron-builder arguments the installer passed (`-c.win.signtoolOptions.certificateSubjectName=…`). */
  readonly builderArgs: readonly string[];
  /** Signing options set in the electron-builder file itself (win.signtoolOptions, mac.identity, …). */
  readonly configured: readonly string[];
  /** macOS only: a "Developer ID Application" identity in the keychain (electron-builder finds it by itself). */
  readonly keychainIdentity?: string | undefined;
}

export type SigningPlan =
  | { readonly kind: 'signed'; readonly how: string }
  | { readonly kind: 'unsigned'; readonly builderArgs: readonly string[]; readonly envRemoved: readonly string[]; readonly warning: string }
  | { readonly kind: 'refused'; readonly message: string }
  | { readonly kind: 'not-applicable' };

const WIN_ENV = ['CSC_LINK', 'WIN_CSC_LINK'];
const MAC_ENV = ['CSC_LINK', 'CSC_NAME'];
const WIN_ARGS = [
  /^-c\.win\.signtoolOptions\.(certificateSubjectName|certificateSha1|certificateFile|sign)=./,
  /^-c\.win\.azureSignOptions\./,
];
const MAC_ARGS = [/^-c\.mac\.identity=(?!null$)./];

const CONSEQUENCES =
  'without a signature the asar integrity check protects nothing (whoever can change the files can change the hash beside them), ' +
  'electron-updater has no publisher to check an update against on Windows and Squirrel.Mac refuses to update an unsigned app on macOS, and the OS warns whoever starts it';

/** What to do about signing for one build. */
export function signingPlan(input: SigningInputs): SigningPlan {
  if (input.os === 'linux') return { kind: 'not-applicable' };
  const envNames = input.os === 'win' ? WIN_ENV : MAC_ENV;
  const argPatterns = input.os === 'win' ? WIN_ARGS : MAC_ARGS;
  const fromEnv = envNames.filter((n) => (input.env[n] ?? '') !== '');
  const fromArgs = input.builderArgs.filter((a) => argPatterns.some((p) => p.test(a)));
  const sources = [
    ...fromEnv.map((n) => `${n} in the environment`),
    ...fromArgs.map((a) => a.replace(/=.*$/, '=…')),
    ...input.configured.map((c) => `${c} in the electron-builder file`),
    ...(input.keychainIdentity === undefined ? [] : [`the keychain identity "${input.keychainIdentity}"`]),
  ];
  const osName = input.os === 'win' ? 'Windows' : 'macOS';
  if (input.unsigned) {
    return {
      kind: 'unsigned',
      // macOS: electron-builder would sign with any identity it finds; `identity: null` turns that off.
      builderArgs: input.os === 'mac' ? ['-c.mac.identity=null'] : [],
      envRemoved: [...envNames],
      warning: `building an UNSIGNED ${input.flavour} package for ${osName} (--unsigned): ${CONSEQUENCES}. Never publish it to a fleet's update feed.`,
    };
  }
  if (sources.length > 0) return { kind: 'signed', how: sources.join(', ') };
  if (input.flavour === 'qa') {
    return {
      kind: 'unsigned',
      builderArgs: input.os === 'mac' ? ['-c.mac.identity=null'] : [],
      envRemoved: [],
      warning: `the QA package for ${osName} is built unsigned: no signing is configured (a QA build may be; a production one may not)`,
    };
  }
  const how =
    input.os === 'win'
      ? 'a certificate file in CSC_LINK (or WIN_CSC_LINK) with CSC_KEY_PASSWORD, a certificate in a store or HSM with -c.win.signtoolOptions.certificateSubjectName=… (or certificateSha1), or Azure Trusted Signing with -c.win.azureSignOptions.*'
      : 'a "Developer ID Application" identity in the keychain, CSC_LINK with CSC_KEY_PASSWORD, or CSC_NAME';
  return {
    kind: 'refused',
    message:
      `refusing to build an unsigned production package for ${osName}: no signing is configured. Configure ${how} (docs/packaging.md, "Signing"); ` +
      `or, knowing that ${CONSEQUENCES}, pass --unsigned.`,
  };
}

/**
 * Whether a PE file (a Windows .exe) carries an Authenticode signature: its certificate table (data
 * directory 4) is present. Presence, not validity: validity needs Windows' own tools (`Get-AuthenticodeSignature`).
 */
export function peSignature(bytes: Buffer): 'signed' | 'unsigned' | 'not-pe' {
  if (bytes.length < 0x40 || bytes.readUInt16LE(0) !== 0x5a4d) return 'not-pe';
  const pe = bytes.readUInt32LE(0x3c);
  if (pe + 24 + 2 > bytes.length || bytes.readUInt32LE(pe) !== 0x00004550) return 'not-pe';
  const optional = pe + 24;
  const magic = bytes.readUInt16LE(optional);
  if (magic !== 0x10b && magic !== 0x20b) return 'not-pe';
  const directories = optional + (magic === 0x20b ? 112 : 96);
  const count = bytes.readUInt32LE(optional + (magic === 0x20b ? 108 : 92));
  if (count <= 4 || directories + 8 * 4 + 8 > bytes.length) return 'unsigned';
  const offset = bytes.readUInt32LE(directories + 8 * 4);
  const size = bytes.readUInt32LE(directories + 8 * 4 + 4);
  return offset !== 0 && size > 0 && offset + size <= bytes.length ? 'signed' : 'unsigned';
}

const run = promisify(execFile);

/** macOS: `codesign` verifies the app and names a Developer ID authority. Only runs on a Mac. */
export async function macSignature(app: string): Promise<{ readonly ok: boolean; readonly detail: string }> {
  try {
    await run('codesign', ['--verify', '--deep', '--strict', app], { timeout: 120_000 });
    const { stderr } = await run('codesign', ['-dvv', app], { timeout: 60_000 });
    const authority = /^Authority=(Developer ID Application: .*)$/m.exec(stderr)?.[1];
    return authority === undefined
      ? { ok: false, detail: 'signed, but not with a Developer ID Application identity' }
      : { ok: true, detail: authority };
  } catch (e) {
    return { ok: false, detail: (e as Error).message.split('\n')[0] ?? 'codesign failed' };
  }
}

/** macOS: the first "Developer ID Application" identity `security` lists, if any. */
export async function keychainIdentity(): Promise<string | undefined> {
  if (process.platform !== 'darwin') return undefined;
  try {
    const { stdout } = await run('security', ['find-identity', '-v', '-p', 'codesigning'], { timeout: 30_000 });
    return /"(Developer ID Application: [^"]+)"/.exec(stdout)?.[1];
  } catch {
    return undefined;
  }
}
