/**
 * The Electron IPC contract between the preload and the main process: the channel of every intent and of
 * the state stream. Kept free of zod and of every other import, because the sandboxed preload is bundled
 * on its own and should carry nothing but these names. `kiosk-api.ts` checks at compile time that the
 * list equals `KIOSK_INTENTS`, and a unit test checks it at run time.
 *
 * The renderer never names a channel: the preload exposes one function per intent, and the channel is
 * fixed here.
 */
export const IPC_INTENT_NAMES = [
  'qrScanned',
  'next',
  'retry',
  'cancel',
  'moreTime',
  'setLanguage',
  'reportCamera',
  'unlock',
  'lock',
  'setProfile',
  'getSettings',
  'saveSettings',
  'changePin',
  'getDiagnostics',
  'selfTest',
  'writeSupportBundle',
  'listSupportVolumes',
  'prepareSupportDownload',
  'reportError',
  'synthesizeSpeech',
  'reportSpeech',
] as const;

export type IpcIntentName = (typeof IPC_INTENT_NAMES)[number];

const PREFIX = 'mdl-kiosk:';

/** `ipcRenderer.invoke` channel of one intent. */
export function intentChannel(intent: IpcIntentName): string {
  return `${PREFIX}intent:${intent}`;
}

/** Main → renderer: every new `ScreenState` (`webContents.send`). */
export const STATE_CHANNEL = `${PREFIX}state`;

/** Renderer → main (`invoke`): the current `ScreenState`, for a listener that subscribes late. */
export const STATE_REQUEST_CHANNEL = `${PREFIX}state-request`;

/** Every channel main listens on; anything else is not ours. */
export function allInvokeChannels(): string[] {
  return [...IPC_INTENT_NAMES.map(intentChannel), STATE_REQUEST_CHANNEL];
}
