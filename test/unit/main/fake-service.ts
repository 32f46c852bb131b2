/**
 * A stand-in for the kiosk service behind IPC: every intent answers a valid result and is recorded, the
 * staff gate is a flag, states are pushed by the test. (The boot test uses the real KioskService.)
 */
import { DEFAULT_SPEECH_SETTINGS } from '../../../src/common/speech.js';
import { INTENT_NAMES, ScreenState, type IntentName, type KioskApiHandlers } from '../../../src/common/kiosk-api.js';

export function sampleState(overrides: Partial<ScreenState> = {}): ScreenState {
  return ScreenState.parse({
    view: {
      phase: 'ready',
      prompt: 'tap_or_scan',
      transport: null,
      role: null,
      progress: { step: 0, apdus: 0, bleMessages: 0 },
      outcome: null,
      error: null,
      profile: 'age_over_18',
      devices: { nfc: { usable: true }, qr: { usable: true }, bleCentral: { usable: true }, blePeripheral: { usable: true } },
      backend: 'connected',
      at: 1,
    },
    profiles: [{ name: 'age_over_18', label: 'Age over 18' }],
    language: 'en',
    defaultLanguage: 'en',
    camera: { scanning: true, deviceId: null, state: 'active', maxDecodesPerSecond: 8 },
    clearsAt: null,
    session: { state: 'armed', createdAt: 1, expiresAt: 600_001 },
    staff: { pinConfigured: true, unlocked: false, unlockedUntil: null, lockedOutUntil: null },
    testMode: true,
    speech: DEFAULT_SPEECH_SETTINGS,
    backendOrigin: 'http://127.0.0.1:1',
    replaced: null,
    ...overrides,
  });
}

const RESULTS: Partial<Record<IntentName, unknown>> = {
  qrScanned: { accepted: true },
  next: { ok: true },
  retry: { ok: true },
  cancel: { cancelled: false },
  moreTime: { extended: false },
  setLanguage: { ok: true },
  reportCamera: { ok: true },
  unlock: { ok: false, reason: 'wrong_pin', attemptsLeft: 4 },
  lock: { ok: true },
  setProfile: { ok: true },
  getSettings: {
    backendUrl: null,
    apiKeySet: false,
    profile: 'age_over_18',
    pcscReader: null,
    bleRoles: 'both',
    cameraDeviceId: null,
    defaultLanguage: 'en',
    timeouts: { resultDisplayMs: 10_000, errorDisplayMs: 5_000, removePhoneMs: 10_000 },
    speech: DEFAULT_SPEECH_SETTINGS,
    locked: [],
  },
  saveSettings: { ok: false, errors: [{ key: 'backendUrl', message: 'bad' }] },
  changePin: { ok: true },
  getDiagnostics: { version: '1', startedAt: 1, events: [], counts: {} },
  selfTest: { checks: [] },
  writeSupportBundle: { path: '/data/support/mdl-kiosk-support.tar.gz', bytes: 4096 },
  listSupportVolumes: { volumes: [{ id: '/media/kiosk/USB', label: 'USB' }] },
  synthesizeSpeech: { sampleRate: 22_050, pcm: 'AAAAAA==', engine: 'fake' },
  reportSpeech: { ok: true },
  prepareSupportDownload: { ticket: 'a'.repeat(43), name: 'mdl-kiosk-support.tar.gz', bytes: 4096 },
};

export function fakeService(): KioskApiHandlers & {
  calls: { intent: string; args: unknown }[];
  unlocked: boolean;
  failWith: Error | undefined;
  state(): ScreenState;
  onState(listener: (s: ScreenState) => void): () => void;
  staffUnlocked(): boolean;
  push(state: ScreenState): void;
  listeners(): number;
} {
  const listeners = new Set<(s: ScreenState) => void>();
  let current = sampleState();
  const service = {
    calls: [] as { intent: string; args: unknown }[],
    unlocked: false,
    failWith: undefined as Error | undefined,
    state: () => current,
    onState(listener: (s: ScreenState) => void) {
      listeners.add(listener);
      listener(current);
      return () => listeners.delete(listener);
    },
    staffUnlocked: () => service.unlocked,
    push(state: ScreenState) {
      current = state;
      for (const l of listeners) l(state);
    },
    listeners: () => listeners.size,
  };
  for (const intent of INTENT_NAMES) {
    (service as unknown as Record<string, unknown>)[intent] = (args: unknown) => {
      if (service.failWith) throw service.failWith;
      service.calls.push({ intent, args });
      return RESULTS[intent] ?? { ok: true };
    };
  }
  return service as unknown as ReturnType<typeof fakeService>;
}
