// An ESLint rule that keeps the floors of src/: each room (a folder right under src/) may import only the
// rooms its entry in the table lists, or single files of them ('devices/ports.ts'). The import is resolved
// against the importing file, so '../kiosk/x.js' from src/main and '../../kiosk/x.js' from src/qa/app are
// the same room; a folder under src/ that the table does not name is refused too, so a new room cannot
// slip past the floors. Package imports ('zod', 'node:fs') are not this rule's business.
import path from 'node:path';

/** @param {string} p */
const withoutExtension = (p) => p.replace(/\.(ts|tsx|js|jsx|mts|mjs)$/, '');

/** @type {import('eslint').Rule.RuleModule} */
export const roomFloors = {
  meta: {
    type: 'problem',
    docs: { description: 'a room of src/ imports only the rooms below it that its floor lists' },
    schema: [
      {
        type: 'object',
        properties: {
          src: { type: 'string' },
          rooms: { type: 'object', additionalProperties: { type: 'array', items: { type: 'string' } } },
          why: { type: 'object', additionalProperties: { type: 'string' } },
        },
        required: ['src', 'rooms'],
        additionalProperties: false,
      },
    ],
  },
  create(context) {
    const {
      src: srcDir,
      rooms,
      why = {},
    } = /** @type {{ src: string, rooms: Record<string, string[]>, why?: Record<string, string> }} */ (context.options[0]);
    const fromRel = path.relative(srcDir, context.filename);
    if (fromRel.startsWith('..') || path.isAbsolute(fromRel) || !fromRel.includes(path.sep)) return {};
    const fromRoom = fromRel.split(path.sep)[0] ?? '';
    const allowed = rooms[fromRoom];

    /** @param {import('estree').Node} node @param {unknown} spec */
    const check = (node, spec) => {
      if (typeof spec !== 'string' || !spec.startsWith('.')) return;
      const target = path.relative(srcDir, path.resolve(path.dirname(context.filename), spec));
      if (target.startsWith('..') || path.isAbsolute(target)) {
        context.report({ node, message: `src/${fromRoom} imports only from src/ ('${spec}' is outside it)` });
        return;
      }
      const toRoom = target.split(path.sep)[0] ?? '';
      if (toRoom === fromRoom) return;
      const targetFile = withoutExtension(target.split(path.sep).join('/'));
      const ok = allowed?.some((entry) => entry === toRoom || withoutExtension(entry) === targetFile);
      if (ok) return;
      const may = allowed && allowed.length > 0 ? allowed.join(', ') : 'no other room';
      const reason = why[fromRoom] ? ` (${why[fromRoom]})` : '';
      context.report({ node, message: `src/${fromRoom} may not import src/${targetFile}: it may import ${may}${reason}` });
    };

    return {
      Program(node) {
        if (!allowed)
          context.report({ node, message: `src/${fromRoom} is not a room of the floors table in eslint.config.js: add it there` });
      },
      ImportDeclaration: (node) => check(node, node.source.value),
      ExportNamedDeclaration: (node) => check(node, node.source?.value),
      ExportAllDeclaration: (node) => check(node, node.source.value),
      ImportExpression: (node) => check(node, node.source.type === 'Literal' ? node.source.value : undefined),
      // `import('../x.js').T` in a type position
      /** @param {any} node */
      TSImportType: (node) => check(node, node.source ? node.source.value : node.argument?.literal?.value),
    };
  },
};
