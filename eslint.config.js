// Flat config: type-aware rules from typescript-eslint on every TypeScript file.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/**', 'dist/**', 'coverage/**', '.tmp/**'] },
  js.configs.recommended,
  ...tseslint.configs.strictTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true, allowBoolean: true }],
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unnecessary-condition': ['error', { allowConstantLoopConditions: true }],
      '@typescript-eslint/no-confusing-void-expression': ['error', { ignoreArrowShorthand: true }],
      'no-console': 'error',
    },
  },
  {
    // The cut line between the product and QA (DESIGN §3): everything QA-only lives in src/qa/ (simulators,
    // virtual devices, radio link, QA wiring) and the production package leaves that folder out, so no
    // production room may import it, nor the CLI (a developer tool, not shipped).
    files: ['src/common/**', 'src/kiosk/**', 'src/devices/**', 'src/service/**', 'src/host/**', 'src/renderer/**', 'src/main/**', 'src/preload/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['**/qa', '**/qa/**'], message: 'production code must not import QA-only code (src/qa/): inject it from a QA entry point instead' },
            { group: ['**/cli', '**/cli/**'], message: 'production code must not import the CLI (src/cli/)' },
          ],
        },
      ],
    },
  },
  {
    // The CLI reaches QA through the QA room's one door (src/qa/index.ts), as the demo and the Electron QA
    // flavour do, so what QA offers them is listed in one place.
    files: ['src/cli/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ group: ['**/qa/*/**', '**/qa/*.js', '!**/qa/index.js'], message: 'import QA code through src/qa/index.ts' }] },
      ],
    },
  },
  {
    // The simulators are the other side of the wire: they never import the kiosk (DESIGN §3).
    files: ['src/qa/sim/**'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: ['**/kiosk/**'], message: 'the simulators never import the kiosk (they are the other side of the wire)' }] }],
    },
  },
  {
    files: ['src/cli/**', 'test/bench/**', 'tools/pcscd/cli.ts'],
    rules: { 'no-console': 'off' },
  },
  {
    files: ['**/*.js'],
    extends: [tseslint.configs.disableTypeChecked],
  },
);
