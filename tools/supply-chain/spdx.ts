/**
 * SPDX licence expressions (SPDX 2.3, annex D: `MIT`, `(MIT OR Apache-2.0)`, `MIT AND ISC`,
 * `GPL-2.0-or-later`, `GPL-2.0+`, `Apache-2.0 WITH LLVM-exception`, `LicenseRef-x`), parsed strictly
 * enough to judge them against an allowlist, and the licence a package.json declares in its three
 * historical forms (`license: "…"`, `license: { type }`, `licenses: [{ type } | "…"]`).
 */
import type { z } from 'zod';
import type { LicenseValue } from './tree.js';

export type LicenseExpression =
  | { readonly kind: 'license'; readonly id: string; readonly orLater: boolean; readonly exception?: string }
  | { readonly kind: 'and' | 'or'; readonly left: LicenseExpression; readonly right: LicenseExpression };

export class SpdxSyntaxError extends Error {}

const IDSTRING = /^(?:DocumentRef-[A-Za-z0-9.-]+:)?[A-Za-z0-9][A-Za-z0-9.-]*$/;

function tokenize(text: string): string[] {
  const tokens: string[] = [];
  const re = /\s*(\(|\)|[^\s()]+)/gy;
  let m: RegExpExecArray | null;
  while ((m = re.exec(text)) !== null) {
    if (m[1] !== undefined) tokens.push(m[1]);
  }
  return tokens;
}

/** Parses an SPDX expression; operators are accepted in any case (`or` is read as `OR`). */
export function parseSpdx(text: string): LicenseExpression {
  const tokens = tokenize(text);
  if (tokens.length === 0) throw new SpdxSyntaxError('empty expression');
  let at = 0;
  const peek = (): string | undefined => tokens[at];
  const isOp = (t: string | undefined, op: string): boolean => t !== undefined && t.toUpperCase() === op;

  const atom = (): LicenseExpression => {
    const t = tokens[at++];
    if (t === undefined) throw new SpdxSyntaxError('the expression ends early');
    if (t === '(') {
      const inner = or();
      if (tokens[at++] !== ')') throw new SpdxSyntaxError('a "(" is not closed');
      return inner;
    }
    if (t === ')' || isOp(t, 'AND') || isOp(t, 'OR') || isOp(t, 'WITH')) throw new SpdxSyntaxError(`unexpected "${t}"`);
    const orLater = t.endsWith('+');
    const id = orLater ? t.slice(0, -1) : t;
    if (!IDSTRING.test(id)) throw new SpdxSyntaxError(`"${t}" is not a licence identifier`);
    if (isOp(peek(), 'WITH')) {
      at++;
      const exception = tokens[at++];
      if (exception === undefined || !IDSTRING.test(exception)) throw new SpdxSyntaxError('WITH needs an exception identifier');
      return { kind: 'license', id, orLater, exception };
    }
    return { kind: 'license', id, orLater };
  };
  const and = (): LicenseExpression => {
    let left = atom();
    while (isOp(peek(), 'AND')) {
      at++;
      left = { kind: 'and', left, right: atom() };
    }
    return left;
  };
  const or = (): LicenseExpression => {
    let left = and();
    while (isOp(peek(), 'OR')) {
      at++;
      left = { kind: 'or', left, right: and() };
    }
    return left;
  };

  const expression = or();
  if (at < tokens.length) throw new SpdxSyntaxError(`unexpected "${tokens[at] ?? ''}"`);
  return expression;
}

/** One licence term as written: `MIT`, `GPL-2.0+`, `Apache-2.0 WITH LLVM-exception`. */
export function termText(e: Extract<LicenseExpression, { kind: 'license' }>): string {
  return `${e.id}${e.orLater ? '+' : ''}${e.exception === undefined ? '' : ` WITH ${e.exception}`}`;
}

export interface Evaluation {
  readonly ok: boolean;
  /** The terms the package is used under when ok (one branch of each OR); the refused terms otherwise. */
  readonly terms: readonly string[];
}

/**
 * Is the expression satisfied by the allowed licence ids (compared without case, as SPDX says)? OR needs one
 * side, AND both. `X+` (or later) is satisfied by an allowed X; a `WITH` term only by an allowlist entry
 * naming the whole term (`Apache-2.0 WITH LLVM-exception`).
 */
export function evaluate(expression: LicenseExpression, allowed: ReadonlySet<string>): Evaluation {
  const has = (s: string): boolean => allowed.has(s.toLowerCase());
  switch (expression.kind) {
    case 'license': {
      const text = termText(expression);
      const ok = expression.exception === undefined ? has(expression.id) : has(text);
      return { ok, terms: [text] };
    }
    case 'or': {
      const left = evaluate(expression.left, allowed);
      if (left.ok) return left;
      const right = evaluate(expression.right, allowed);
      if (right.ok) return right;
      return { ok: false, terms: [...left.terms, ...right.terms] };
    }
    case 'and': {
      const left = evaluate(expression.left, allowed);
      const right = evaluate(expression.right, allowed);
      if (left.ok && right.ok) return { ok: true, terms: [...left.terms, ...right.terms] };
      return { ok: false, terms: [...(left.ok ? [] : left.terms), ...(right.ok ? [] : right.terms)] };
    }
  }
}

type LicenseField = z.infer<typeof LicenseValue>;

export interface DeclaredLicense {
  /** The licence as one expression string, undefined when the package declares none. */
  readonly text: string | undefined;
  /** Which package.json form it came from. */
  readonly form: 'license' | 'license object (deprecated)' | 'licenses array (deprecated)' | 'none';
}

const typeOf = (v: LicenseField): string => (typeof v === 'string' ? v : v.type).trim();

/**
 * The licence a package.json declares. A deprecated `licenses` array lists alternatives: it is read as
 * their OR, as npm's own SBOM does.
 */
export function declaredLicense(pkg: {
  license?: LicenseField | undefined;
  licenses?: readonly LicenseField[] | undefined;
}): DeclaredLicense {
  if (pkg.license !== undefined) {
    const text = typeOf(pkg.license);
    return { text: text === '' ? undefined : text, form: typeof pkg.license === 'string' ? 'license' : 'license object (deprecated)' };
  }
  if (pkg.licenses !== undefined && pkg.licenses.length > 0) {
    const parts = pkg.licenses.map(typeOf).filter((t) => t !== '');
    if (parts.length === 0) return { text: undefined, form: 'none' };
    const text = parts.length === 1 ? (parts[0] ?? '') : parts.map((p) => (/\s/.test(p) ? `(${p})` : p)).join(' OR ');
    return { text, form: 'licenses array (deprecated)' };
  }
  return { text: undefined, form: 'none' };
}
