// An ESLint rule that keeps packages and Node's built-ins in the rooms that may use them (docs/ARCHITECTURE.md),
// the way VS Code's per-layer import rules do: a room's entry names the package patterns it may not import
// (`deny`), whether Node's built-ins are refused (`nodeBuiltins: false`), files that are exempt with the reason
// written beside them (`except`), and the reason shown to whoever trips it. It also refuses, in every room:
// - a file directly in src/ (it belongs to no room, so no floor would hold for it);
// - `require('./x')`, `createRequire(…)('../x')` and the like with a relative path: that loads a module of
//   src/ past both this rule and the floors rule (packages may still be loaded that way, as noble is).
import { builtinModules } from 'node:module';
import path from 'node:path';

const BUILTINS = new Set(builtinModules.filter((name) => !name.startsWith('_')));

/** The package a specifier names ('@scope/name/sub' → '@scope/name'; 'node:fs' and 'fs/promises' → built-in), or undefined for a path. */
function packageOf(/** @type {string} */ spec) {
  if (spec.startsWith('.') || spec.startsWith('/')) return undefined;
  const bare = spec.replace(/[?#].*$/, '');
  if (bare.startsWith('node:')) return { builtin: true, name: bare };
  const parts = bare.split('/');
  const name = bare.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] ?? bare);
  return { builtin: BUILTINS.has(name), name };
}

/** Whether a package name matches a pattern: an exact name, or a prefix ending in '*' ('@stoprocent/*', 'pino*'). */
function matches(/** @type {string} */ name, /** @type {string} */ pattern) {
  return pattern.endsWith('*') ? name.startsWith(pattern.slice(0, -1)) : name === pattern;
}

/** A call that loads a module by a path it was given as text: `require(…)`, `createRequire(…)(…)`, or a `require…` alias. */
function isRequireCall(/** @type {any} */ node) {
  const callee = node.callee;
  if (callee.type === 'Identifier') return /require/i.test(callee.name);
  if (callee.type === 'CallExpression') return callee.callee.type === 'Identifier' && callee.callee.name === 'createRequire';
  return false;
}

/** @type {import('eslint').Rule.RuleModule} */
export const roomPackages = {
  meta: {
    type: 'problem',
    docs: {
      description:
        'a room of src/ imports only the packages and Node built-ins its entry allows; no file directly in src/; no require of a relative path',
    },
    schema: [
      {
        type: 'object',
        properties: {
          src: { type: 'string' },
          rooms: {
            type: 'object',
            additionalProperties: {
              type: 'object',
              properties: {
                nodeBuiltins: { type: 'boolean' },
                deny: { type: 'array', items: { type: 'string' } },
                except: { type: 'object', additionalProperties: { type: 'string' } },
                why: { type: 'string' },
              },
              additionalProperties: false,
            },
          },
        },
        required: ['src', 'rooms'],
        additionalProperties: false,
      },
    ],
  },
  create(context) {
    const { src: srcDir, rooms } =
      /** @type {{ src: string, rooms: Record<string, { nodeBuiltins?: boolean, deny?: string[], except?: Record<string, string>, why?: string }> }} */ (
        context.options[0]
      );
    const fromRel = path.relative(srcDir, context.filename);
    if (fromRel.startsWith('..') || path.isAbsolute(fromRel)) return {};
    if (!fromRel.includes(path.sep)) {
      return {
        Program(node) {
          context.report({
            node,
            message: `${fromRel} sits directly in src/, in no room: put it in the room whose job it does (docs/ARCHITECTURE.md)`,
          });
        },
      };
    }
    const fromRoom = fromRel.split(path.sep)[0] ?? '';
    const entry = rooms[fromRoom];
    const exempt = entry?.except?.[fromRel.split(path.sep).join('/')] !== undefined;
    const reason = entry?.why ? ` (${entry.why})` : '';

    /** @param {import('estree').Node} node @param {unknown} spec */
    const check = (node, spec) => {
      if (typeof spec !== 'string' || entry === undefined || exempt) return;
      const pkg = packageOf(spec);
      if (pkg === undefined) return;
      if (pkg.builtin && entry.nodeBuiltins === false) {
        context.report({ node, message: `src/${fromRoom} may not import Node's built-in '${spec}'${reason}` });
        return;
      }
      if (entry.deny?.some((pattern) => matches(pkg.name, pattern))) {
        context.report({ node, message: `src/${fromRoom} may not import '${pkg.name}'${reason}` });
      }
    };

    return {
      ImportDeclaration: (node) => check(node, node.source.value),
      ExportNamedDeclaration: (node) => check(node, node.source?.value),
      ExportAllDeclaration: (node) => check(node, node.source.value),
      ImportExpression: (node) => check(node, node.source.type === 'Literal' ? node.source.value : undefined),
      /** @param {any} node */
      TSImportType: (node) => check(node, node.source ? node.source.value : node.argument?.literal?.value),
      /** @param {any} node */
      CallExpression(node) {
        if (!isRequireCall(node)) return;
        const first = node.arguments[0];
        if (first?.type === 'Literal' && typeof first.value === 'string') {
          if (first.value.startsWith('.')) {
            context.report({
              node,
              message: `loading '${first.value}' with require() goes past the floors: import it (a relative module of src/ is imported, never required)`,
            });
            return;
          }
          check(node, first.value);
        }
      },
    };
  },
};
