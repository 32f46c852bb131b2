// An ESLint rule that keeps the question "which OS is this?" in one place (src/platform/os.ts,
// docs/ARCHITECTURE.md, *The OS in one place*): everywhere else in src/ code asks that file's capability
// record instead. It refuses `process.platform`, `os.platform()` and `os.type()` of node:os (as a namespace
// or default import), and importing `platform` or `type` from node:os by name. Files exempt from it are
// left out in eslint.config.js (`ignores`).

const OS_MODULES = new Set(['os', 'node:os']);
const OS_QUESTIONS = new Set(['platform', 'type']);
const WHY = 'ask src/platform/os.ts (osCapabilities, currentPlatform) instead: the OS is told in one place';

/** The property name of a member expression when it is written plainly (`a.b` or `a['b']`). */
function propertyName(/** @type {any} */ node) {
  if (!node.computed && node.property.type === 'Identifier') return node.property.name;
  if (node.computed && node.property.type === 'Literal' && typeof node.property.value === 'string') return node.property.value;
  return undefined;
}

/** @type {import('eslint').Rule.RuleModule} */
export const osInOnePlace = {
  meta: {
    type: 'problem',
    docs: { description: 'only src/platform/os.ts reads which OS this is' },
    schema: [],
  },
  create(context) {
    /** Local names bound to node:os as a whole (`import os from 'node:os'`, `import * as os from 'os'`). */
    const osNames = new Set();
    return {
      ImportDeclaration(node) {
        if (typeof node.source.value !== 'string' || !OS_MODULES.has(node.source.value)) return;
        for (const spec of node.specifiers) {
          if (spec.type === 'ImportDefaultSpecifier' || spec.type === 'ImportNamespaceSpecifier') osNames.add(spec.local.name);
          else if (spec.type === 'ImportSpecifier') {
            const imported = spec.imported.type === 'Identifier' ? spec.imported.name : String(spec.imported.value);
            if (OS_QUESTIONS.has(imported))
              context.report({ node: spec, message: `importing '${imported}' from '${node.source.value}' reads the OS here: ${WHY}` });
          }
        }
      },
      MemberExpression(node) {
        const name = propertyName(node);
        if (name === undefined || node.object.type !== 'Identifier') return;
        if (node.object.name === 'process' && name === 'platform')
          context.report({ node, message: `process.platform is read here: ${WHY}` });
        else if (osNames.has(node.object.name) && OS_QUESTIONS.has(name))
          context.report({ node, message: `${node.object.name}.${name}() reads the OS here: ${WHY}` });
      },
    };
  },
};
