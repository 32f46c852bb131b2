/**
 * The kiosk screen's build: `npm run build:renderer` → dist/renderer (index.html + assets). Relative base so
 * the same files load from the browser host and, next, from Electron's custom protocol. Wasm files (zxing,
 * OpenJPEG) are emitted as files, never inlined (the CSP has no data: scripts), and workers are ES modules.
 */
import { fileURLToPath } from 'node:url';
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

const root = fileURLToPath(new URL('.', import.meta.url));

export default defineConfig({
  root,
  base: './',
  plugins: [react()],
  // No public dir: every asset goes through the bundler (hashed names, nothing served by accident).
  publicDir: false,
  build: {
    outDir: fileURLToPath(new URL('../../dist/renderer', import.meta.url)),
    emptyOutDir: true,
    assetsInlineLimit: 0,
    target: 'es2022',
    sourcemap: false,
    // Chromium supports modulepreload natively; the polyfill would only add code.
    modulePreload: { polyfill: false },
    chunkSizeWarningLimit: 2_000,
  },
  worker: { format: 'es' },
});
