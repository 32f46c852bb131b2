/**
 * The list of what the packages' node_modules carry (tools/package/production-modules.json) and the checks
 * built on it: the packaged set against `ships`, the production dependency tree against both lists, and the
 * electron-builder exclusion pattern that leaves `leftOut` behind.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';

export const PRODUCTION_MODULES_FILE = 'tools/package/production-modules.json';

const Reasons = z.record(z.string().regex(/^(@[a-z0-9][\w.-]*\/)?[a-z0-9][\w.-]*$/i, 'a package name'), z.string().min(1));
export const ProductionModulesSchema = z.strictObject({ $comment: z.string(), ships: Reasons, leftOut: Reasons });
export type ProductionModules = z.infer<typeof ProductionModulesSchema>;

export function parseProductionModules(text: string, source = PRODUCTION_MODULES_FILE): ProductionModules {
  const parsed = ProductionModulesSchema.safeParse(JSON.parse(text));
  if (!parsed.success)
    throw new Error(`${source}: ${parsed.error.issues.map((i) => `${i.path.join('.') || '/'}: ${i.message}`).join('; ')}`);
  const both = Object.keys(parsed.data.ships).filter((name) => name in parsed.data.leftOut);
  if (both.length > 0) throw new Error(`${source}: ${both.join(', ')} both ships and is left out`);
  return parsed.data;
}

export function loadProductionModules(root: string): ProductionModules {
  return parseProductionModules(readFileSync(join(root, PRODUCTION_MODULES_FILE), 'utf8'));
}

/** Packaged package names against `ships`: every unexpected and every missing one, named. */
export function packagedModuleProblems(packaged: Iterable<string>, modules: ProductionModules, label: string): string[] {
  const have = new Set(packaged);
  const problems: string[] = [];
  for (const name of [...have].sort()) {
    if (name in modules.ships) continue;
    problems.push(
      name in modules.leftOut
        ? `${label}: node_modules/${name} is packaged although ${PRODUCTION_MODULES_FILE} leaves it out (${modules.leftOut[name] ?? ''})`
        : `${label}: unexpected package node_modules/${name}: the kiosk's package carries only what ${PRODUCTION_MODULES_FILE} lists under "ships"; list it there with what needs it, or under "leftOut" and exclude it in electron-builder.yml`,
    );
  }
  for (const name of Object.keys(modules.ships).sort()) {
    if (have.has(name)) continue;
    // npm ci drops an optional package whose install script failed (no PC/SC headers, no compiler, Node's
    // headers out of reach) and still exits 0: the most likely cause.
    problems.push(
      `${label}: node_modules/${name} is missing (${modules.ships[name] ?? ''}); if npm ci could not build it, it left it out and still succeeded: run npm ci --foreground-scripts to see why (docs/installer-guide.md §2)`,
    );
  }
  return problems;
}

/** The production dependency tree's names against both lists: unclassified and stale entries. */
export function treeClassificationProblems(treeNames: Iterable<string>, modules: ProductionModules): string[] {
  const tree = new Set(treeNames);
  const problems: string[] = [];
  for (const name of [...tree].sort()) {
    if (!(name in modules.ships) && !(name in modules.leftOut))
      problems.push(`${name} is in the production dependency tree but in neither list of ${PRODUCTION_MODULES_FILE}`);
  }
  for (const name of [...Object.keys(modules.ships), ...Object.keys(modules.leftOut)].sort()) {
    if (!tree.has(name)) problems.push(`${PRODUCTION_MODULES_FILE} lists ${name}, which the production dependency tree no longer has`);
  }
  return problems;
}

/** The `files` pattern of electron-builder.yml that excludes every left-out package, wherever it is nested. */
export function leftOutPattern(modules: ProductionModules): string {
  // One entry per top-level name: a scope left out as a whole is one entry (`@serialport`).
  const names = Object.keys(modules.leftOut);
  const scopes = new Set<string>();
  for (const name of names) {
    if (!name.startsWith('@')) continue;
    const scope = name.slice(0, name.indexOf('/'));
    const shippedInScope = Object.keys(modules.ships).some((s) => s.startsWith(`${scope}/`));
    if (!shippedInScope) scopes.add(scope);
  }
  const entries = [...scopes, ...names.filter((n) => !n.startsWith('@') || !scopes.has(n.slice(0, n.indexOf('/'))))].sort();
  return `!**/node_modules/{${entries.join(',')}}{,/**}`;
}
