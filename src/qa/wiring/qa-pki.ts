/**
 * The QA test PKI shared between processes: the virtual phone issues its mDL under it and the mock backend
 * trusts its IACA, even when QA runs them as separate commands. It lives in one directory:
 *   pki.json        the IACA and document signer certificates and private keys (PEM; a TEST PKI only)
 *   trust/          the IACA certificate alone: the mock backend's default `--trust-dir`
 * Location: `MDL_KIOSK_QA_PKI`, else `$XDG_CACHE_HOME/mdl-kiosk/qa-pki` (`~/.cache/...`).
 */
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import {
  createTestPki,
  exportTestPkiPem,
  importTestPkiPem,
  writeIacaPem,
  type TestPki,
  type TestPkiPem,
} from '../sim/virtual-wallet/pki.js';
import { errorText } from '../../common/error-text.js';

export function defaultQaPkiDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.MDL_KIOSK_QA_PKI) return env.MDL_KIOSK_QA_PKI;
  const cache = env.XDG_CACHE_HOME ?? join(homedir(), '.cache');
  return join(cache, 'mdl-kiosk', 'qa-pki');
}

export function qaTrustDir(pkiDir: string): string {
  return join(pkiDir, 'trust');
}

function isPkiPem(value: unknown): value is TestPkiPem {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return ['iacaCertificate', 'iacaPrivateKey', 'documentSignerCertificate', 'documentSignerPrivateKey'].every(
    (k) => typeof v[k] === 'string',
  );
}

/** Loads the QA PKI from `dir`, or creates and stores one there (with the trust directory) the first time. */
export async function loadOrCreateQaPki(dir: string): Promise<{ pki: TestPki; created: boolean }> {
  const file = join(dir, 'pki.json');
  let text: string | undefined;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw new Error(`cannot read the QA PKI ${file}: ${errorText(e)}`);
  }
  if (text !== undefined) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new Error(`the QA PKI ${file} is not JSON; delete the directory to create a new one`);
    }
    if (!isPkiPem(parsed)) throw new Error(`the QA PKI ${file} lacks certificates or keys; delete the directory to create a new one`);
    const pki = importTestPkiPem(parsed);
    await writeIacaPem(pki, qaTrustDir(dir));
    return { pki, created: false };
  }
  const pki = await createTestPki();
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await writeFile(file, `${JSON.stringify(exportTestPkiPem(pki), null, 2)}\n`, { mode: 0o600 });
  await chmod(file, 0o600);
  await writeIacaPem(pki, qaTrustDir(dir));
  return { pki, created: true };
}
