/**
 * How the browser host and the relay tools start the voice process: Node's `fork` of the production entry
 * beside this module (`.ts` under tsx, `.js` once built by tsc). The app starts the bundled
 * `dist/app/voice.js` as a utility process instead (src/main/radio-launcher.ts).
 */
import { fileURLToPath } from 'node:url';
import { forkLauncher, type ChildLauncher } from '../shared/child-launcher.js';

export function voiceEntry(): string {
  const here = fileURLToPath(import.meta.url);
  return here.replace(/voice-launcher\.(ts|js)$/, here.endsWith('.ts') ? 'voice-entry.ts' : 'voice-entry.js');
}

export function forkVoiceLauncher(entry: string = voiceEntry()): ChildLauncher {
  return forkLauncher({ entry });
}
