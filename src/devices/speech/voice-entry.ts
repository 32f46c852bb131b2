/**
 * The production voice process: eSpeak NG (WebAssembly) served to the kiosk over the channel it was
 * started with (Node `fork` or Electron `utilityProcess`). Bundled as dist/app/voice.js for the app
 * (tools/build/app.ts); the engine's package stays in node_modules beside it.
 */
import { channelOfThisProcess } from '../shared/child-channel.js';
import { loadVoiceEngine } from './voice-engine.js';
import type { VoiceChildMessage } from './voice-protocol.js';
import { serveVoice } from './voice-server.js';

serveVoice(channelOfThisProcess<VoiceChildMessage>('the voice process'), loadVoiceEngine);
// The kiosk going away closes the channel: never outlive it (a utility process is ended by Electron).
process.on('disconnect', () => process.exit(0));
