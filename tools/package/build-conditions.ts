/**
 * The build machine's circumstances a reproducible build must not depend on — the account, the umask,
 * the time zone and the locale — as a way to run one command under chosen ones. The reproducibility test
 * and `npm run package:reproducibility` build twice under two different sets and compare the bytes.
 */
import { execFileSync } from 'node:child_process';

export interface BuildConditions {
  /** Run as this account (root only: through `runuser`); undefined: as the caller. */
  readonly user?: string;
  /** The umask of the build, e.g. 0o077; undefined: the caller's. */
  readonly umask?: number;
  /** TZ, e.g. `Pacific/Auckland`. */
  readonly timeZone?: string;
  /** LC_ALL and LANG, e.g. `C.UTF-8`. */
  readonly locale?: string;
}

export function describeConditions(c: BuildConditions): string {
  const umask = c.umask === undefined ? 'inherited' : `0${c.umask.toString(8).padStart(3, '0')}`;
  return `user ${c.user ?? 'inherited'}, umask ${umask}, TZ ${c.timeZone ?? 'inherited'}, locale ${c.locale ?? 'inherited'}`;
}

/** `command args` wrapped so that it runs under `conditions` (a shell for the umask, runuser for the account). */
export function conditionedCommand(
  command: string,
  args: readonly string[],
  conditions: BuildConditions,
): { command: string; args: string[] } {
  let cmd = command;
  let argv = [...args];
  if (conditions.umask !== undefined) {
    argv = ['-c', `umask ${conditions.umask.toString(8).padStart(3, '0')} && exec "$0" "$@"`, cmd, ...argv];
    cmd = '/bin/sh';
  }
  if (conditions.user !== undefined) {
    argv = ['-u', conditions.user, '--', cmd, ...argv];
    cmd = 'runuser';
  }
  return { command: cmd, args: argv };
}

export function conditionedEnv(env: NodeJS.ProcessEnv, conditions: BuildConditions): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = { ...env };
  if (conditions.timeZone !== undefined) out.TZ = conditions.timeZone;
  if (conditions.locale !== undefined) {
    out.LC_ALL = conditions.locale;
    out.LANG = conditions.locale;
  }
  return out;
}

/**
 * Why builds cannot run as another account here, or undefined when they can: only root may switch
 * accounts without a password, and `runuser` must exist.
 */
export function otherUserUnavailable(user: string): string | undefined {
  if (process.platform !== 'linux') return `running as another account is tried on Linux only (this is ${process.platform})`;
  if (process.getuid?.() !== 0) return 'running as another account needs root (runuser); this process is not root';
  try {
    execFileSync('runuser', ['-u', user, '--', 'true'], { stdio: 'ignore' });
  } catch (e) {
    return `runuser -u ${user} failed (${(e as Error).message.split('\n')[0] ?? ''})`;
  }
  return undefined;
}

/** A second locale for the comparison: French if this machine has it, else C.UTF-8. */
export function otherLocale(): string {
  try {
    const locales = execFileSync('locale', ['-a'], { encoding: 'utf8' }).split('\n');
    const french = locales.find((l) => /^fr_FR\.utf-?8$/i.test(l.trim()));
    if (french !== undefined) return french.trim();
  } catch {
    // No `locale` tool: fall through.
  }
  return 'C.UTF-8';
}
